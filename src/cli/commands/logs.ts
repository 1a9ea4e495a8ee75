import { StringDecoder } from 'node:string_decoder';
import type { Config } from '../../shared/config.js';
import { TERMINAL_TASK_STATUSES } from '../../shared/contracts.js';
import { FlotillaError } from '../../shared/errors.js';
import type { LiveRef, LiveStreamName } from '../../shared/store/live-output.js';
import type { Io } from '../io.js';
import { withClient } from './missions.js';

/** How long one wait for new output lasts before the task's state is looked at again. */
const BLOCK_MS = 2_000;

/**
 * `flotilla logs <id> <task> [--follow] [--attempt N]`: what a task's CLI prints, from any machine
 * that reaches the cluster's Redis, while it runs (the host tees it into a capped stream:
 * shared/store/live-output.ts); once the attempt has ended, the end of its output as the audit
 * trail keeps it. The CLI's stdout comes out on stdout and its stderr on stderr; flotilla's own
 * notes (what was cut, how the run ended) on stderr in brackets.
 */
export async function logs(
  args: { id: string; task: string; follow: boolean; attempt?: number },
  config: Config,
  io: Io,
): Promise<number> {
  return withClient(config, async (client) => {
    const { store } = client;
    const { spec } = await store.getMission(args.id);
    if (!spec.tasks.some((t) => t.id === args.task))
      throw new FlotillaError('usage', `mission ${args.id} has no task '${args.task}'`);
    const attemptNow = async () => (await store.getTask(args.id, args.task))?.attempts ?? 0;
    let attempt = args.attempt ?? (await attemptNow());
    while (attempt < 1) {
      if (!args.follow) {
        io.err(`[${args.task} has not started yet; --follow waits for it]`);
        return 0;
      }
      await new Promise((resolve) => setTimeout(resolve, BLOCK_MS));
      attempt = await attemptNow();
    }
    const ref: LiveRef = { missionId: args.id, taskId: args.task, attempt };
    const write = writer(io);
    let last = '0';
    let seen = false;
    for (;;) {
      const entries = await store.readLiveOutput(ref, last, args.follow && seen ? BLOCK_MS : 0);
      for (const entry of entries) {
        last = entry.id;
        seen = true;
        if (entry.skipped)
          io.err(`[… ${formatBytes(entry.skipped)} not shown: printed faster than the live view sends …]`);
        if (entry.stream && entry.data) write(entry.stream, entry.data);
        if (entry.end !== undefined) {
          write.flush();
          io.err(`[${args.task} attempt ${attempt} ${entry.end}]`);
          return 0;
        }
      }
      if (entries.length > 0) continue;
      if (seen && !args.follow) {
        write.flush();
        io.err(`[${args.task} attempt ${attempt} is still running; --follow keeps reading]`);
        return 0;
      }
      if (await store.liveOutputExists(ref)) {
        seen = true;
        continue;
      }
      // No live output: the attempt has not started its CLI, or it ended (and its stream went).
      const state = await store.getTask(args.id, args.task);
      const ended =
        !state ||
        state.attempts > attempt ||
        TERMINAL_TASK_STATUSES.includes(state.status) ||
        !running(state.status);
      if (ended || !args.follow) break;
      await new Promise((resolve) => setTimeout(resolve, BLOCK_MS));
    }
    write.flush();
    return fromAudit(client.store, ref, io, write);
  });
}

function running(status: string): boolean {
  return status === 'queued' || status === 'running' || status === 'retrying';
}

/** The end of an ended attempt's output, as its run's audit entry keeps it. */
async function fromAudit(
  store: {
    getTaskAudit(
      id: string,
      taskId: string,
    ): Promise<readonly { stage: string; attempt: number; files?: Record<string, string> }[]>;
  },
  ref: LiveRef,
  io: Io,
  write: ReturnType<typeof writer>,
): Promise<number> {
  const runs = (await store.getTaskAudit(ref.missionId, ref.taskId)).filter(
    (e) =>
      e.stage === 'run' &&
      e.attempt === ref.attempt &&
      (e.files?.['stdout.txt'] !== undefined || e.files?.['stderr.txt'] !== undefined),
  );
  const entry = runs.at(-1);
  if (!entry) {
    io.err(`[${ref.taskId} attempt ${ref.attempt} has no output: its CLI has not run]`);
    return 0;
  }
  io.err(
    `[${ref.taskId} attempt ${ref.attempt} has ended; the end of its output as the audit trail keeps it]`,
  );
  for (const stream of ['stdout', 'stderr'] as const) {
    const text = entry.files?.[`${stream}.txt`];
    if (text) write(stream, Buffer.from(text.endsWith('\n') ? text : `${text}\n`));
  }
  write.flush();
  return 0;
}

/**
 * Bytes of each stream to whole lines (a character split across two chunks is kept whole): Io
 * writes lines. What is left of a line is written at `flush()`.
 */
function writer(io: Io) {
  const decoders = { stdout: new StringDecoder('utf8'), stderr: new StringDecoder('utf8') };
  const partial = { stdout: '', stderr: '' };
  const emit = (stream: LiveStreamName, text: string) => (stream === 'stdout' ? io.out(text) : io.err(text));
  const write = (stream: LiveStreamName, data: Buffer) => {
    const text = partial[stream] + decoders[stream].write(data);
    const lines = text.split('\n');
    partial[stream] = lines.pop() ?? '';
    for (const line of lines) emit(stream, line);
  };
  write.flush = () => {
    for (const stream of ['stdout', 'stderr'] as const) {
      const rest = partial[stream] + decoders[stream].end();
      partial[stream] = '';
      if (rest) emit(stream, rest);
    }
  };
  return write;
}

function formatBytes(n: number): string {
  return n >= 1024 * 1024 ? `${(n / (1024 * 1024)).toFixed(1)} MB` : `${Math.ceil(n / 1024)} KB`;
}
