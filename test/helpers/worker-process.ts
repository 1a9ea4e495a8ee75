import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { delimiter, dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa, type ResultPromise } from 'execa';
import { ROOT } from './flotilla.js';

/**
 * Worker hosts as real `flotilla worker` processes, each with its own environment (PATH decides
 * which agent CLIs it detects), its own FLOTILLA_HOME (its "machine"), and its pino log captured
 * line by line. Every process started here is remembered, so `stopAllWorkers()` in `afterAll`
 * kills what a failed test left behind, including agent CLIs orphaned in their own process groups.
 */

export const BIN = join(ROOT, 'bin', 'flotilla.js');
export const FIXTURES = join(ROOT, 'test', 'fixtures');
/** sim-builder, sim-reviewer and sim-auditor (test/fixtures/adapters-hosts). */
export const HOST_ADAPTERS = join(FIXTURES, 'adapters-hosts');
export const BIN_BUILDER = join(FIXTURES, 'bin-builder');
export const BIN_REVIEWER = join(FIXTURES, 'bin-reviewer');
export const BIN_AUDITOR = join(FIXTURES, 'bin-auditor');

/** node, git, bash and coreutils, without any folder that could hold an agent CLI. */
const SYSTEM_PATH = [dirname(process.execPath), '/usr/local/bin', '/usr/bin', '/bin'];

export interface Cluster {
  readonly redisUrl: string;
  readonly prefix: string;
  readonly secret?: string;
}

export interface WorkerOptions {
  readonly hostId: string;
  /** Where this host's repo cache and worktrees live: one folder per simulated machine. */
  readonly home: string;
  /** Folders with agent CLIs for this host's PATH (system folders are added after them). */
  readonly path?: readonly string[];
  readonly adaptersDir?: string;
  readonly slots?: number;
  /** FLOTILLA_LOCK_MS; unset means flotilla's default (10 s). */
  readonly lockMs?: number;
  /** `--grace` seconds for the first SIGTERM. */
  readonly graceSeconds?: number;
  readonly logLevel?: string;
  readonly env?: Readonly<Record<string, string>>;
  /** More `flotilla worker` arguments (`--facts FILE`, `--label k=v`). */
  readonly args?: readonly string[];
}

export interface LogLine {
  readonly raw: string;
  readonly msg: string;
  readonly level: number;
  /** Milliseconds since the epoch, when the worker wrote the line. */
  readonly time: number;
  readonly [field: string]: unknown;
}

export type LogMatch = string | RegExp | ((line: LogLine) => boolean);

export interface WorkerProcess {
  readonly hostId: string;
  readonly home: string;
  readonly pid: number;
  readonly lines: LogLine[];
  /** Resolves when the process has exited; never rejects. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  readonly running: boolean;
  waitForLog(match: LogMatch, timeoutMs?: number): Promise<LogLine>;
  hasLog(match: LogMatch): boolean;
  /** A crash: SIGKILL, no chance to clean up. Resolves when the process is gone. */
  kill9(): Promise<void>;
  signal(signal?: NodeJS.Signals): void;
  /** Kills the host (if running) and any agent CLI it left running. Idempotent. */
  stop(): Promise<void>;
}

const started = new Set<WorkerProcess>();
/** `flotilla` commands still running (a `submit --wait` a failed test never awaited). */
const commands = new Set<ResultPromise>();

/** The environment of a flotilla process: this one's, minus anything flotilla reads, plus `extra`. */
export function flotillaEnv(
  cluster: Cluster,
  extra: Record<string, string | undefined> = {},
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !key.startsWith('FLOTILLA_') && key !== 'REDIS_URL' && key !== 'LOG_LEVEL')
      env[key] = value;
  }
  env.REDIS_URL = cluster.redisUrl;
  env.FLOTILLA_PREFIX = cluster.prefix;
  if (cluster.secret) env.FLOTILLA_SECRET = cluster.secret;
  for (const [key, value] of Object.entries(extra)) {
    if (value === undefined) delete env[key];
    else env[key] = value;
  }
  return env;
}

export async function startWorker(cluster: Cluster, options: WorkerOptions): Promise<WorkerProcess> {
  await mkdir(options.home, { recursive: true });
  const env = flotillaEnv(cluster, {
    PATH: [...(options.path ?? []), ...SYSTEM_PATH].join(delimiter),
    FLOTILLA_HOME: options.home,
    // Each "machine" counts its own rate limits, as docs/SIM.md describes.
    FLOTILLA_SIM_STATE_DIR: join(options.home, 'sim-state'),
    LOG_LEVEL: options.logLevel ?? 'info',
    ...(options.lockMs ? { FLOTILLA_LOCK_MS: String(options.lockMs) } : {}),
    ...options.env,
  });
  const args = [
    BIN,
    'worker',
    ...['--adapters', options.adaptersDir ?? HOST_ADAPTERS],
    ...['--host-id', options.hostId],
    ...['--slots', String(options.slots ?? 2)],
    ...(options.graceSeconds ? ['--grace', String(options.graceSeconds)] : []),
    ...(options.args ?? []),
  ];
  const child = spawn(process.execPath, args, { env, cwd: options.home, stdio: ['ignore', 'pipe', 'pipe'] });
  const worker = wrap(child, options);
  started.add(worker);
  return worker;
}

/** Starts a worker and waits for its "serving" line, so its registry entry and queues exist. */
export async function startReadyWorker(cluster: Cluster, options: WorkerOptions): Promise<WorkerProcess> {
  const worker = await startWorker(cluster, options);
  await worker.waitForLog(/serving \d+ CLI/, 60_000);
  return worker;
}

function wrap(child: ChildProcess, options: WorkerOptions): WorkerProcess {
  const lines: LogLine[] = [];
  const waiters = new Set<() => void>();
  let running = true;
  const onText = (stream: NodeJS.ReadableStream) => {
    let pending = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      pending += chunk;
      const parts = pending.split('\n');
      pending = parts.pop() ?? '';
      for (const raw of parts) if (raw.trim()) lines.push(parseLine(raw));
      for (const wake of waiters) wake();
    });
  };
  if (child.stdout) onText(child.stdout);
  if (child.stderr) onText(child.stderr);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      running = false;
      for (const wake of waiters) wake();
      resolve({ code, signal });
    });
  });
  const test = (match: LogMatch) => (line: LogLine) =>
    typeof match === 'function'
      ? match(line)
      : typeof match === 'string'
        ? line.raw.includes(match)
        : match.test(line.raw);
  const worker: WorkerProcess = {
    hostId: options.hostId,
    home: options.home,
    pid: child.pid ?? -1,
    lines,
    exited,
    get running() {
      return running;
    },
    hasLog: (match) => lines.some(test(match)),
    async waitForLog(match, timeoutMs = 60_000) {
      const matches = test(match);
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = lines.find(matches);
        if (found) return found;
        if (!running)
          throw new Error(
            `worker ${options.hostId} exited before logging ${String(match)}:\n${tailOf(lines)}`,
          );
        const left = deadline - Date.now();
        if (left <= 0)
          throw new Error(
            `worker ${options.hostId} did not log ${String(match)} in ${timeoutMs} ms:\n${tailOf(lines)}`,
          );
        await new Promise<void>((resolve) => {
          const wake = () => {
            waiters.delete(wake);
            clearTimeout(timer);
            resolve();
          };
          const timer = setTimeout(wake, Math.min(left, 1_000));
          waiters.add(wake);
        });
      }
    },
    async kill9() {
      if (running) child.kill('SIGKILL');
      await exited;
    },
    signal(signal = 'SIGTERM') {
      if (running) child.kill(signal);
    },
    async stop() {
      if (running) child.kill('SIGKILL');
      await exited;
      await killCliProcesses(options.home);
      started.delete(worker);
    },
  };
  return worker;
}

/** Lines logged at error level or above (pino: 50 error, 60 fatal), and anything not JSON (a crash). */
export function errorLines(worker: WorkerProcess): string[] {
  return worker.lines.filter((line) => line.level >= 50 || line.level === 0).map((line) => line.raw);
}

function parseLine(raw: string): LogLine {
  try {
    const parsed = JSON.parse(raw) as Record<string, unknown>;
    return {
      ...parsed,
      raw,
      msg: String(parsed.msg ?? ''),
      level: Number(parsed.level ?? 0),
      time: Number(parsed.time ?? Date.now()),
    };
  } catch {
    return { raw, msg: raw, level: 0, time: Date.now() };
  }
}

function tailOf(lines: readonly LogLine[], count = 25): string {
  return lines
    .slice(-count)
    .map((line) => `  ${line.raw.slice(0, 400)}`)
    .join('\n');
}

/** For `afterAll`: every worker this file started is killed, with the CLIs it left behind. */
export async function stopAllWorkers(): Promise<void> {
  for (const command of commands) command.kill('SIGKILL');
  await Promise.all([...commands].map((command) => command.catch(() => undefined)));
  await Promise.all([...started].map((worker) => worker.stop()));
}

export interface CliProcess {
  readonly pid: number;
  readonly pgid: number;
  readonly cwd: string;
  readonly args: string;
}

/**
 * Agent CLIs (the stand-in agent, whatever its launcher's name) whose working directory is under
 * `home`, found through /proc: a CLI runs in a worktree of its host's FLOTILLA_HOME, and hosts
 * start CLIs in their own process groups, so a crashed host's CLI outlives it. Linux only; an
 * empty list elsewhere.
 */
export function cliProcesses(home: string): CliProcess[] {
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return [];
  }
  const found: CliProcess[] = [];
  for (const pid of pids) {
    try {
      const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
      if (!args.includes(join('dist', 'sim', 'main.js'))) continue;
      const cwd = readlinkSync(`/proc/${pid}/cwd`);
      if (!cwd.startsWith(home)) continue;
      // Field 5 of /proc/<pid>/stat is the process group; the name in field 2 may hold spaces.
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const pgid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
      found.push({ pid: Number(pid), pgid, cwd, args });
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return found;
}

export async function killCliProcesses(home: string): Promise<void> {
  for (const cli of cliProcesses(home)) {
    try {
      // Only a CLI that leads its own group is killed by group: never this test's own group.
      process.kill(cli.pgid === cli.pid ? -cli.pgid : cli.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  const deadline = Date.now() + 5_000;
  while (cliProcesses(home).length > 0 && Date.now() < deadline) await sleep(50);
}

export interface CliRun {
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
  readonly durationMs: number;
}

/** `node bin/flotilla.js <args>` with its own environment; never rejects on a non-zero exit. */
export async function runFlotilla(
  cluster: Cluster,
  args: readonly string[],
  options: {
    env?: Record<string, string | undefined>;
    cwd?: string;
    timeoutMs?: number;
  } = {},
): Promise<CliRun> {
  const startedAt = Date.now();
  const command = execa(process.execPath, [BIN, ...args], {
    env: flotillaEnv(cluster, { LOG_LEVEL: 'warn', ...options.env }),
    extendEnv: false,
    cwd: options.cwd ?? ROOT,
    reject: false,
    stdin: 'ignore',
    timeout: options.timeoutMs ?? 60_000,
  });
  commands.add(command);
  const result = await command.finally(() => commands.delete(command));
  return {
    exitCode: result.exitCode ?? -1,
    stdout: String(result.stdout ?? ''),
    stderr: String(result.stderr ?? ''),
    durationMs: Date.now() - startedAt,
  };
}

/** The JSON a `--json` command printed as its last line of stdout. */
export function lastJson<T>(run: CliRun): T {
  const line = run.stdout.trim().split('\n').pop() ?? '';
  try {
    return JSON.parse(line) as T;
  } catch {
    throw new Error(
      `expected JSON as the last line of stdout (exit ${run.exitCode}):\n${run.stdout}\n${run.stderr}`,
    );
  }
}

/** Polls `probe` until it returns something other than undefined (or the deadline passes). */
export async function until<T>(
  what: string,
  probe: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 60_000,
  everyMs = 250,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}
