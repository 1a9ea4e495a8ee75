import { execa } from 'execa';
import type { CliGroups } from './cli-groups.js';

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
  readonly maxOutputBytes?: number;
  /** Where the host records the CLI's process group while it runs (cli-groups.ts). */
  readonly groups?: Pick<CliGroups, 'record' | 'forget'>;
}

export interface SpawnOutcome {
  readonly exitCode: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly timedOut: boolean;
  readonly cancelled: boolean;
  /** The program was not found (ENOENT) or could not start. */
  readonly spawnError?: string;
  readonly durationMs: number;
}

/**
 * The only place flotilla starts an agent CLI or an exit criterion: an argument array (never a
 * shell of flotilla's making; a criterion is `bash -c` by contract), its own process group so a
 * timeout or a cancel kills the whole tree it started, output capped in memory.
 */
export async function spawnProcess(input: SpawnInput): Promise<SpawnOutcome> {
  const started = Date.now();
  const child = execa(input.command, [...input.args], {
    cwd: input.cwd,
    input: input.stdin,
    stdin: input.stdin === undefined ? 'ignore' : undefined,
    env: childEnv(input.env),
    extendEnv: false,
    reject: false,
    detached: true,
    cleanup: true,
    maxBuffer: input.maxOutputBytes ?? 16 * 1024 * 1024,
    stripFinalNewline: false,
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
      result.failed && result.exitCode === undefined && !timedOut && !cancelled
        ? ((result as { code?: string }).code ?? result.shortMessage)
        : undefined;
    return {
      exitCode: result.exitCode ?? null,
      stdout: String(result.stdout ?? ''),
      stderr: String(result.stderr ?? ''),
      timedOut,
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
 * flotilla's own secrets never reach an agent CLI or an exit criterion. FLOTILLA_SIGNING_KEY is a
 * path, not the key, but an agent told where the receipt key lies is one `cat` from forging receipts.
 */
export const PRIVATE_ENV = [
  'FLOTILLA_SECRET',
  'FLOTILLA_SIGNING_KEY',
  'FLOTILLA_BOARD_PASSWORD',
  'FLOTILLA_BOARD_USER',
];

export function childEnv(extra?: Readonly<Record<string, string>>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !PRIVATE_ENV.includes(key)) env[key] = value;
  }
  return { ...env, ...extra };
}

/** The last `maxChars` characters of a text, cut at a line start, for audit tails and feedback. */
export function tail(text: string, maxChars = 4_000): string {
  if (text.length <= maxChars) return text;
  const cut = text.slice(-maxChars);
  const newline = cut.indexOf('\n');
  return `…${newline >= 0 ? cut.slice(newline + 1) : cut}`;
}
