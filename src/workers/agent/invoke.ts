import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import type { Adapter } from '../../shared/adapter.js';
import { buildInvocation, type Invocation } from './invocation.js';
import { LineScanner } from './line-scanner.js';
import { ownOriginChanges } from './origin-verdict.js';
import { classifyWatched, type ReplyClass, ReplyWatch } from './reply-class.js';
import { existing, type Sandbox, writablePaths } from './sandbox.js';
import { type OutputStream, type SpawnInput, type SpawnOutcome, spawnProcess } from './spawn.js';
import { type Usage, usageReader } from './usage.js';

/**
 * One run of an agent CLI, the sequence the run stage, the critic and `flotilla plan` share: write
 * the prompt file, build the argument array for the adapter's delivery, spawn (no shell), read
 * the usage line, the result file and the reply's class. What the caller makes of it (a task
 * result, a verdict, a mission file) is the caller's.
 */

/** Where a dispatch's prompt and result files go, relative to the CLI's working directory. */
export interface DispatchPaths {
  /** The dispatch id the file names are made of (`t1-a1`, `t1-a1-review`). */
  readonly name: string;
  readonly promptPath: string;
  readonly resultPath: string;
}

/** cli-dispatch's file names: `.planning/dispatch/{id}-PROMPT.md` and the adapter's result_path. */
export function dispatchPaths(adapter: Pick<Adapter, 'config'>, dispatchId: string): DispatchPaths {
  return {
    name: dispatchId,
    promptPath: join('.planning', 'dispatch', `${dispatchId}-PROMPT.md`),
    resultPath: adapter.config.result_path.replaceAll('{task-id}', dispatchId),
  };
}

export interface InvokeInput {
  readonly adapter: Adapter;
  readonly cwd: string;
  readonly paths: DispatchPaths;
  readonly prompt: string;
  readonly model?: string;
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
  /** Where the host records the CLI's process group while it runs (cli-groups.ts). */
  readonly groups?: SpawnInput['groups'];
  /**
   * Directories flotilla itself writes to (its home with the checkouts and the repo cache), left
   * out when the repository flotilla runs in is compared before and after the run.
   */
  readonly flotillaDirs?: readonly string[];
  /** `flotilla worker --sandbox`: the CLI runs under bwrap. */
  readonly sandbox?: Sandbox;
  /** FLOTILLA_MAX_OUTPUT: the CLI is stopped once it printed more than this (stdout and stderr). */
  readonly maxOutputBytes?: number;
  /** Each chunk of the CLI's output as it comes (a live view of the run). */
  readonly onChunk?: SpawnInput['onChunk'];
}

/**
 * A JSON line longer than this is not read for usage or reply patterns (it is skipped, not held):
 * far above any answer a model writes in one reply, far below what would weigh on the host.
 */
export const MAX_SCANNED_LINE_BYTES = 4 * 1024 * 1024;

export interface AgentRun {
  readonly invocation: Invocation;
  readonly outcome: SpawnOutcome;
  readonly usage: Usage | null;
  /** The CLI's answer without its JSON wrapper, when the adapter declares a usage format. */
  readonly answer: string;
  /** The result file's text, or null when the CLI left none. */
  readonly resultFileText: string | null;
  /** Rate limit or login problem; only looked for when the CLI exited non-zero. */
  readonly replyClass: ReplyClass;
  /** What changed in the repository flotilla runs in while the CLI ran; null when nothing. */
  readonly origin: OriginChange | null;
}

/**
 * Paths changed in the repository flotilla runs in during a run. With `own` (this attempt's own
 * dispatch or result files among them) the CLI certainly wrote there; without, someone else (a
 * person editing the repository, another slot's CLI) may have.
 */
export interface OriginChange {
  /** That repository's top level. */
  readonly root: string;
  /** Every changed path, relative to it. */
  readonly paths: readonly string[];
  /** The attempt's own files among them (or in a changed folder); empty when none. */
  readonly own: readonly string[];
}

export async function invokeAgent(input: InvokeInput): Promise<AgentRun> {
  const { adapter, cwd, paths } = input;
  const resultFile = resolve(cwd, paths.resultPath);
  // Small local files, written with synchronous calls: a thread-pool round trip each would cost
  // the host more than the write (docs/ARCHITECTURE.md, "Synchronous git files").
  mkdirSync(join(cwd, dirname(paths.promptPath)), { recursive: true });
  mkdirSync(dirname(resultFile), { recursive: true });
  writeFileSync(join(cwd, paths.promptPath), input.prompt);
  // A result left by an earlier run in the same directory must not pass for this run's answer.
  rmSync(resultFile, { force: true });
  const invocation = buildInvocation(adapter, {
    promptPath: paths.promptPath,
    promptText: input.prompt,
    model: input.model,
  });
  const reading = readOutput(adapter);
  const outcome = await spawnProcess({
    onChunk: (stream, chunk) => {
      reading.push(stream, chunk);
      input.onChunk?.(stream, chunk);
    },
    ...(input.maxOutputBytes !== undefined ? { maxOutputBytes: input.maxOutputBytes } : {}),
    command: invocation.command,
    args: invocation.args,
    stdin: invocation.stdin,
    cwd,
    env: adapter.config.env,
    timeoutMs: input.timeoutMs,
    signal: input.signal,
    ...(input.groups ? { groups: input.groups } : {}),
    guardOrigin: { exclude: input.flotillaDirs ?? [], own: [paths.promptPath, paths.resultPath] },
    ...(input.sandbox ? { sandbox: await sandboxFor(input.sandbox, adapter) } : {}),
  });
  const { usage, replyClass } = reading.finish(outcome);
  const answer = usage?.resultText ?? outcome.stdout;
  const resultFileText = readTextOrNull(resultFile);
  const origin =
    outcome.originRoot && outcome.originChanges?.length
      ? {
          root: outcome.originRoot,
          paths: outcome.originChanges,
          own: await ownOriginChanges(outcome.originRoot, outcome.originChanges, paths),
        }
      : null;
  return { invocation, outcome, usage, answer, resultFileText, replyClass, origin };
}

/**
 * What flotilla reads from a CLI's output as it comes, line by line: the usage (and the answer
 * inside the JSON) and the first login and rate-limit lines of each stream, so none of it needs
 * the output kept whole.
 */
function readOutput(adapter: Adapter) {
  const format = adapter.config.usage_format;
  const usage = format ? usageReader(format) : null;
  const watches = { stdout: new ReplyWatch(adapter), stderr: new ReplyWatch(adapter) };
  const scanners = {
    stdout: new LineScanner((line) => {
      usage?.line(line);
      watches.stdout.line(line);
    }, MAX_SCANNED_LINE_BYTES),
    stderr: new LineScanner((line) => watches.stderr.line(line), MAX_SCANNED_LINE_BYTES),
  };
  return {
    push: (stream: OutputStream, chunk: Uint8Array) => scanners[stream].push(chunk),
    finish(outcome: SpawnOutcome): { usage: Usage | null; replyClass: ReplyClass } {
      scanners.stdout.end();
      scanners.stderr.end();
      const read = usage?.finish(outcome.stdout) ?? null;
      // Stopped by flotilla for its output, the CLI said nothing about its login or its quota.
      if (outcome.exitCode === 0 || outcome.outputCapped !== undefined)
        return { usage: read, replyClass: null };
      // A CLI that wraps its answer in JSON says what went wrong in that answer; matching the
      // unwrapped text keeps the CLI's own words (`Not logged in · Please run /login`) as the error.
      let answer = watches.stdout;
      if (read?.resultText !== undefined) {
        answer = new ReplyWatch(adapter);
        for (const line of read.resultText.split('\n')) answer.line(line);
      }
      return {
        usage: read,
        replyClass: classifyWatched(adapter, [answer, watches.stderr], outcome.spawnError),
      };
    },
  };
}

/**
 * The result file's text, or null: a regular file only, so a FIFO or a device an agent left in its
 * place cannot hold the host's thread (the read is synchronous).
 */
function readTextOrNull(path: string): string | null {
  try {
    return statSync(path).isFile() ? readFileSync(path, 'utf8') : null;
  } catch {
    return null;
  }
}

/** The adapter's writable folders, made where asked, for this run's sandbox. */
async function sandboxFor(sandbox: Sandbox, adapter: Adapter) {
  const { paths, create } = writablePaths(adapter.config.sandbox_writable ?? [], {
    ...process.env,
    ...adapter.config.env,
  });
  for (const dir of create) await mkdir(dir, { recursive: true });
  return {
    bwrap: sandbox.bwrap,
    writable: existing(paths),
    ...(sandbox.hidden ? { hidden: sandbox.hidden } : {}),
  };
}
