import { resolve } from 'node:path';
import { execa } from 'execa';
import { type Adapter, splitFlags } from '../../../shared/adapter.js';
import { publicEnv } from '../private-env.js';

/**
 * Which adapters' CLIs this host can run (cli-dispatch Steps 4–5): each `detection_command` runs
 * once per process, without a shell, and its answer is cached until a refresh or a restart.
 */
export interface DetectedCli {
  readonly adapter: Adapter;
  readonly available: boolean;
  /** First line of the detection command's stdout, when it succeeded. */
  readonly version?: string;
  /** Why the CLI is not available: missing, exit code, timeout. */
  readonly reason?: string;
}

/** What detection needs of a logger; pino's `logger.info` fits, and so does a test's array push. */
export interface DetectionLogger {
  info(message: string): void;
}

export interface DetectOptions {
  readonly logger?: DetectionLogger;
  readonly timeoutMs?: number;
  /** Environment for the detection commands, on top of this process's own. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Run the commands again instead of answering from the cache (`flotilla detect --refresh`). */
  readonly refresh?: boolean;
}

type Probe = Omit<DetectedCli, 'adapter'>;

/**
 * How long a detection command may take. `gemini --version` and `opencode --version` start a whole
 * Node or Bun program; on a loaded two-core machine, with every adapter detected at once, they
 * took more than the 10 s this used to be, and a host then served without them.
 */
export const DETECTION_TIMEOUT_MS = 30_000;

/**
 * The session cache of cli-dispatch Step 5, for the life of the process. It holds promises, so
 * callers that overlap share one run of each command.
 */
const cache = new Map<string, Promise<Probe>>();

export function clearDetectionCache(): void {
  cache.clear();
}

export async function detectClis(
  adapters: readonly Adapter[],
  options: DetectOptions = {},
): Promise<DetectedCli[]> {
  const { logger, timeoutMs = DETECTION_TIMEOUT_MS, env, refresh = false } = options;
  const runs = adapters.map((adapter) => {
    const key = cacheKey(adapter);
    const cached = refresh ? undefined : cache.get(key);
    if (cached) return { adapter, probe: cached, fresh: false };
    const probe = probeCli(adapter.config.detection_command, timeoutMs, env);
    cache.set(key, probe);
    return { adapter, probe, fresh: true };
  });
  const detected: DetectedCli[] = [];
  // The commands run side by side; the log lines come out in adapter order all the same.
  for (const run of runs) {
    const probe = await run.probe;
    if (run.fresh) {
      const name = run.adapter.displayName;
      logger?.info(probe.available ? `CLI ${name}: available` : `CLI ${name}: not installed (skipped)`);
    }
    detected.push({ adapter: run.adapter, ...probe });
  }
  return detected;
}

function cacheKey(adapter: Adapter): string {
  return `${resolve(adapter.file)}\n${adapter.config.detection_command}`;
}

/** Never rejects: whatever goes wrong means "not installed", with the reason kept. */
async function probeCli(command: string, timeoutMs: number, env: DetectOptions['env']): Promise<Probe> {
  const [file, ...args] = splitFlags(command);
  if (!file) return { available: false, reason: 'detection_command is empty' };
  try {
    const result = await execa(file, args, {
      reject: false,
      timeout: timeoutMs,
      stdin: 'ignore',
      // A CLI's `--version` is a child like any other: flotilla's secrets stay out of it.
      env: { ...publicEnv(), ...env },
      extendEnv: false,
    });
    if (result.timedOut) return { available: false, reason: `${file} did not answer within ${timeoutMs} ms` };
    if ('code' in result && result.code === 'ENOENT')
      return { available: false, reason: `${file}: command not found` };
    if (result.exitCode !== 0) {
      const detail = firstLine(String(result.stderr)) || firstLine(String(result.stdout));
      const status =
        result.exitCode === undefined ? (result.shortMessage ?? 'failed') : `exit code ${result.exitCode}`;
      return { available: false, reason: `${command}: ${status}${detail ? ` (${detail})` : ''}` };
    }
    const version = firstLine(String(result.stdout));
    return version ? { available: true, version } : { available: true };
  } catch (error) {
    return { available: false, reason: error instanceof Error ? error.message : String(error) };
  }
}

function firstLine(text: string): string {
  return (text.trim().split('\n')[0] ?? '').trim();
}
