import { delimiter, sep } from 'node:path';
import { execa } from 'execa';
import { formatByteSize } from '../../shared/byte-size.js';
import type { CliGroups } from './cli-groups.js';
import { originReads, watchOrigin } from './origin-guard.js';
import { publicEnv } from './private-env.js';
import { sandboxedCommand } from './sandbox.js';
import { TailBuffer } from './tail-buffer.js';

export interface SpawnInput {
  readonly command: string;
  readonly args: readonly string[];
  readonly cwd: string;
  readonly stdin?: string;
  readonly env?: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
  /** Grace between SIGTERM and SIGKILL of the process group. */
  readonly killGraceMs?: number;
  /**
   * The operator's cap on what the process may print, stdout and stderr together
   * (FLOTILLA_MAX_OUTPUT): past it the process group is killed, as on a timeout. Default none.
   */
  readonly maxOutputBytes?: number;
  /**
   * Each chunk of output as it comes (invoke.ts reads usage and reply patterns from it; a live
   * view may tee it). Called inside the stream's `data` event: it must not throw or block.
   */
  readonly onChunk?: (stream: OutputStream, chunk: Uint8Array) => void;
  /** Where the host records the CLI's process group while it runs (cli-groups.ts). */
  readonly groups?: Pick<CliGroups, 'record' | 'forget'>;
  /**
   * Compare the git status of the directory flotilla runs in (default `process.cwd()`) before and
   * after the run (origin-guard.ts; skipped under a sandbox that cannot write there); `exclude`
   * lists directories flotilla itself writes to (the child's cwd is always excluded).
   */
  readonly guardOrigin?: {
    readonly dir?: string;
    readonly exclude: readonly string[];
    /** The run's own files (prompt, result), relative to its cwd: what an escape would write. */
    readonly own?: readonly string[];
  };
  /** Run under bubblewrap, with only the cwd, /tmp and these paths writable. */
  readonly sandbox?: {
    readonly bwrap: string;
    readonly writable: readonly string[];
    readonly hidden?: readonly string[];
  };
}

export type OutputStream = 'stdout' | 'stderr';

/**
 * What is kept of each stream: all of it up to this many bytes, else its last this many from a
 * line start. stdout's is what a result printed on stdout, or one JSON document (Gemini's), may
 * take; stderr is read for its last lines (the error, the audit's tail).
 */
export const KEPT_OUTPUT_BYTES: Readonly<Record<OutputStream, number>> = {
  stdout: 4 * 1024 * 1024,
  stderr: 1024 * 1024,
};

export interface SpawnOutcome {
  readonly exitCode: number | null;
  /** What is kept of stdout (KEPT_OUTPUT_BYTES): all of it when short, else its end. */
  readonly stdout: string;
  readonly stderr: string;
  /** Bytes the process printed on each stream in all. */
  readonly printed: Readonly<Record<OutputStream, number>>;
  readonly timedOut: boolean;
  /** The process printed more than `maxOutputBytes` and was stopped: that cap. */
  readonly outputCapped?: number;
  readonly cancelled: boolean;
  /** The program was not found (ENOENT) or could not start. */
  readonly spawnError?: string;
  readonly durationMs: number;
  /** Paths the run changed in flotilla's own repository (with `guardOrigin`); empty when none. */
  readonly originChanges?: readonly string[];
  /** The repository those paths are in. */
  readonly originRoot?: string;
}

/**
 * The only place flotilla starts an agent CLI or an exit criterion: an argument array (never a
 * shell of flotilla's making; a criterion is `bash -c` by contract), its own process group so a
 * timeout, a cancel or the output cap kills the whole tree it started. Output is read as it comes
 * and never held whole: `onChunk` sees every chunk, and a bounded tail of each stream is kept.
 */
export async function spawnProcess(input: SpawnInput): Promise<SpawnOutcome> {
  const guard = input.guardOrigin;
  const originDir = guard?.dir ?? process.cwd();
  const exclude = [input.cwd, ...(guard?.exclude ?? [])];
  const watch = guard
    ? await watchOrigin({
        dir: originDir,
        exclude,
        writable: input.sandbox?.writable ?? null,
        ...(guard.own ? { own: guard.own } : {}),
      })
    : null;
  const started = Date.now();
  const { command, args } = input.sandbox
    ? sandboxedCommand(
        input.sandbox,
        input,
        input.sandbox.writable,
        input.env?.PATH ?? process.env.PATH ?? '',
      )
    : { command: input.command, args: [...input.args] };
  const child = execa(command, args, {
    cwd: input.cwd,
    input: input.stdin,
    stdin: input.stdin === undefined ? 'ignore' : undefined,
    env: childEnv(input.env, input.cwd, originDir),
    extendEnv: false,
    reject: false,
    detached: true,
    cleanup: true,
    // Read below as it comes: execa keeps nothing, so no output is too long for the host.
    buffer: false,
  });
  // Seen as early as node knows: an `after` status started from here on may serve this run.
  let exitedAt: number | undefined;
  child.once('exit', () => {
    exitedAt ??= originReads.mark();
  });
  const pgid = child.pid;
  const recorded = pgid === undefined ? undefined : input.groups?.record(pgid).catch(() => undefined);
  let timedOut = false;
  let cancelled = false;
  const killTree = () => {
    if (child.pid === undefined) return;
    try {
      process.kill(-child.pid, 'SIGTERM');
    } catch {
      // already gone
    }
    const pid = child.pid;
    setTimeout(() => {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }, input.killGraceMs ?? 5_000).unref();
  };
  const kept = {
    stdout: new TailBuffer(KEPT_OUTPUT_BYTES.stdout),
    stderr: new TailBuffer(KEPT_OUTPUT_BYTES.stderr),
  };
  let outputCapped: number | undefined;
  const read = (stream: OutputStream) => (chunk: Uint8Array) => {
    kept[stream].push(chunk);
    input.onChunk?.(stream, chunk);
    const cap = input.maxOutputBytes;
    if (cap !== undefined && outputCapped === undefined && kept.stdout.bytes + kept.stderr.bytes > cap) {
      outputCapped = cap;
      killTree();
    }
  };
  child.stdout?.on('data', read('stdout'));
  child.stderr?.on('data', read('stderr'));
  const timer = setTimeout(() => {
    timedOut = true;
    killTree();
  }, input.timeoutMs);
  const onAbort = () => {
    cancelled = true;
    killTree();
  };
  if (input.signal?.aborted) onAbort();
  else input.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const result = await child;
    const spawnError =
      result.failed && result.exitCode === undefined && !timedOut && !cancelled && !outputCapped
        ? ((result as { code?: string }).code ?? result.shortMessage)
        : undefined;
    const originChanges = watch ? await watch.changes(exitedAt ?? originReads.mark()) : [];
    return {
      ...(watch ? { originChanges, originRoot: watch.root } : {}),
      exitCode: result.exitCode ?? null,
      stdout: kept.stdout.text(),
      stderr: kept.stderr.text(),
      printed: { stdout: kept.stdout.bytes, stderr: kept.stderr.bytes },
      timedOut,
      ...(outputCapped !== undefined ? { outputCapped } : {}),
      cancelled,
      ...(spawnError ? { spawnError } : {}),
      durationMs: Date.now() - started,
    };
  } finally {
    clearTimeout(timer);
    input.signal?.removeEventListener('abort', onAbort);
    await recorded;
    if (pgid !== undefined) await input.groups?.forget(pgid).catch(() => undefined);
  }
}

/**
 * Variables that name the directory flotilla was started from rather than the child's: the
 * shell's previous directory and npm's start directory. OpenCode 1.18 takes its working
 * directory from `PWD`, so an inherited one sent its writes into flotilla's own directory.
 */
const ORIGIN_ENV = ['OLDPWD', 'INIT_CWD'];

/**
 * The environment of an agent CLI, an exit criterion or a setup command: flotilla's own minus its
 * secrets and how to reach its Redis (private-env.ts publicEnv), `PWD` equal to the child's
 * working directory, and nothing else that points at the directory flotilla runs in (a single
 * path equal to it or inside it, such as npm's `npm_config_local_prefix`; lists such as `PATH`
 * stay whole).
 */
export function childEnv(
  extra: Readonly<Record<string, string>> | undefined,
  cwd: string,
  origin: string = process.cwd(),
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(publicEnv())) {
    if (ORIGIN_ENV.includes(key) || namesOrigin(value, origin)) continue;
    env[key] = value;
  }
  return { ...env, ...extra, PWD: cwd };
}

function namesOrigin(value: string, origin: string): boolean {
  if (origin === '/' || value.includes(delimiter)) return false;
  return value === origin || value.startsWith(`${origin}${sep}`);
}

/** The last `maxChars` characters of a text, cut at a line start, for audit tails and feedback. */
export function tail(text: string, maxChars = 4_000): string {
  if (text.length <= maxChars) return text;
  const cut = text.slice(-maxChars);
  const newline = cut.indexOf('\n');
  return `…${newline >= 0 ? cut.slice(newline + 1) : cut}`;
}

/**
 * The end of a stream for the audit trail (`tail`), led by a line saying how much the process
 * printed in all when that was more than flotilla kept.
 */
export function outputTail(text: string, printedBytes: number, maxChars: number): string {
  const shown = tail(text, maxChars);
  if (printedBytes <= Buffer.byteLength(text)) return shown;
  return `[${formatByteSize(printedBytes)} printed in all; only the end is kept]\n${shown}`;
}
