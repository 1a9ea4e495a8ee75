import type { RedisClient } from '../redis.js';
import { missionKeys } from './keys.js';

/**
 * The live output of a running agent CLI, for `flotilla logs --follow` and the board from any
 * machine: a capped Redis stream per attempt, written by the host that runs it. Bounded every way:
 * the host sends at most FLUSH_BYTES per stream each FLUSH_MS (a CLI that prints faster loses the
 * middle, and the entry says how much), the stream keeps about MAX_ENTRIES entries (trimmed as it
 * grows), and the key expires a while after its last write — at once shortened when the attempt
 * ends, by which time its tail is in the audit trail. A write that fails is dropped: watching a
 * run must never fail it.
 */
export const FLUSH_MS = 250;
export const FLUSH_BYTES = 16 * 1024;
export const MAX_ENTRIES = 256;
/** A key nobody ended (its host was killed) goes after this long without a write. */
const RUNNING_TTL_S = 3_600;
/** After the end marker: long enough for a follower to read it. */
const ENDED_TTL_S = 120;

export type LiveStreamName = 'stdout' | 'stderr';

export interface LiveRef {
  readonly missionId: string;
  readonly taskId: string;
  readonly attempt: number;
}

export interface LiveEntry {
  readonly id: string;
  readonly stream?: LiveStreamName;
  readonly data?: Buffer;
  /** Bytes the CLI printed before `data` that were not sent (it printed faster than the cap). */
  readonly skipped?: number;
  /** The end marker: the run is over, with how it ended. */
  readonly end?: string;
}

export function liveOutputKey(prefix: string, ref: LiveRef): string {
  return `${missionKeys(prefix, ref.missionId).meta}:live:${ref.taskId}:a${ref.attempt}`;
}

/** What is waiting to be sent for one stream: its newest bytes, at most FLUSH_BYTES, and what was cut. */
export class PendingOutput {
  private chunks: Buffer[] = [];
  private bytes = 0;
  private cut = 0;

  push(chunk: Uint8Array): void {
    this.chunks.push(Buffer.from(chunk));
    this.bytes += chunk.length;
    while (this.bytes > FLUSH_BYTES && this.chunks.length > 0) {
      const first = this.chunks[0] as Buffer;
      const over = this.bytes - FLUSH_BYTES;
      if (first.length <= over) {
        this.chunks.shift();
        this.bytes -= first.length;
        this.cut += first.length;
      } else {
        this.chunks[0] = first.subarray(over);
        this.bytes -= over;
        this.cut += over;
      }
    }
  }

  /** The bytes to send and how many were cut before them; empties the buffer. */
  take(): { data: Buffer; skipped: number } | null {
    if (this.bytes === 0 && this.cut === 0) return null;
    const taken = { data: Buffer.concat(this.chunks), skipped: this.cut };
    this.chunks = [];
    this.bytes = 0;
    this.cut = 0;
    return taken;
  }
}

export interface LiveWriter {
  push(stream: LiveStreamName, chunk: Uint8Array): void;
  /** Sends what is left and the end marker; never rejects. */
  end(outcome: string): Promise<void>;
}

export function liveWriter(redis: RedisClient, prefix: string, ref: LiveRef): LiveWriter {
  const key = liveOutputKey(prefix, ref);
  const pending = { stdout: new PendingOutput(), stderr: new PendingOutput() };
  let timer: NodeJS.Timeout | null = null;
  let sending: Promise<void> = Promise.resolve();
  let ended = false;

  const flush = (endMarker?: string): Promise<void> => {
    const batch = redis.pipeline();
    let entries = 0;
    for (const stream of ['stdout', 'stderr'] as const) {
      const taken = pending[stream].take();
      if (!taken) continue;
      const fields: (string | Buffer)[] = ['s', stream, 'd', taken.data];
      if (taken.skipped > 0) fields.push('k', String(taken.skipped));
      batch.xadd(key, 'MAXLEN', '~', String(MAX_ENTRIES), '*', ...fields);
      entries++;
    }
    if (endMarker !== undefined) {
      batch.xadd(key, 'MAXLEN', '~', String(MAX_ENTRIES), '*', 'e', endMarker);
      entries++;
    }
    if (entries === 0) return Promise.resolve();
    batch.expire(key, endMarker !== undefined ? ENDED_TTL_S : RUNNING_TTL_S);
    return batch.exec().then(
      () => undefined,
      () => undefined,
    );
  };
  const schedule = () => {
    if (timer || ended) return;
    timer = setTimeout(() => {
      timer = null;
      // One flush at a time: a slow Redis makes the buffers cut more, never pile up writes.
      sending = sending.then(() => flush());
    }, FLUSH_MS);
    timer.unref();
  };
  return {
    push(stream, chunk) {
      if (ended) return;
      pending[stream].push(chunk);
      schedule();
    },
    async end(outcome) {
      ended = true;
      if (timer) clearTimeout(timer);
      timer = null;
      await sending;
      await flush(outcome);
    },
  };
}

/** Entries after `lastId` ('0': from the start), waiting up to `blockMs` for new ones (0: no wait). */
export async function readLiveOutput(
  redis: RedisClient,
  prefix: string,
  ref: LiveRef,
  lastId: string,
  blockMs: number,
): Promise<LiveEntry[]> {
  const key = liveOutputKey(prefix, ref);
  const args: (string | number)[] = ['COUNT', 100];
  if (blockMs > 0) args.push('BLOCK', blockMs);
  const reply = (await redis.xreadBuffer(...(args as ['COUNT', number]), 'STREAMS', key, lastId)) as
    | [Buffer, [Buffer, Buffer[]][]][]
    | null;
  const entries = reply?.[0]?.[1] ?? [];
  return entries.map(([id, fields]) => {
    const map = new Map<string, Buffer>();
    for (let i = 0; i + 1 < fields.length; i += 2) map.set(String(fields[i]), fields[i + 1] as Buffer);
    const stream = map.get('s')?.toString();
    const skipped = map.get('k');
    const end = map.get('e');
    return {
      id: id.toString(),
      ...(stream === 'stdout' || stream === 'stderr' ? { stream } : {}),
      ...(map.has('d') ? { data: map.get('d') } : {}),
      ...(skipped ? { skipped: Number(skipped.toString()) } : {}),
      ...(end ? { end: end.toString() } : {}),
    };
  });
}

export async function liveOutputExists(redis: RedisClient, prefix: string, ref: LiveRef): Promise<boolean> {
  return (await redis.exists(liveOutputKey(prefix, ref))) === 1;
}
