import { execFile } from 'node:child_process';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * What one `git status --porcelain` of the repository flotilla runs in said, with each listed
 * path's modification time (so a second write to a file that was already dirty shows too). Every
 * entry is kept: each run leaves out its own checkout and flotilla's home afterwards, so one
 * status serves all the runs of a host.
 */
export interface OriginStatus {
  /** The repository's top level. */
  readonly root: string;
  /** Porcelain line → mtime in ms (or -1 when the path is gone). */
  readonly entries: ReadonlyMap<string, number>;
}

/** Reads the status of a repository top; null when git failed. */
export type ReadOriginStatus = (root: string) => Promise<OriginStatus | null>;

/**
 * The statuses a process's runs share, per repository top. On the 80,000-file kernel tree a status
 * takes 0.15–0.2 s on an idle machine and several times that beside four running tasks
 * (docs/BENCHMARKS.md, "The origin guard"), and a host's slots would each take two per run. A
 * `before` joins any status still in flight, or takes the last one when it finished within
 * `BEFORE_REUSE_MS`: the CLI has not started, so whatever it lists is the state before the run.
 * An edit someone made in that moment then counts as made during the run, which costs no more than
 * the `origin-changed` warning such an edit during the run gives anyway: an escape is proved only
 * by the attempt's own files, which do not exist before its run (origin-verdict.ts). An `after`
 * must not see the tree as it was before the CLI exited, so it joins only a status that started
 * after that exit (`since`, a `mark()` taken when the exit was seen) and starts its own otherwise.
 */
export interface OriginStatusReads {
  before(root: string): Promise<OriginStatus | null>;
  after(root: string, since: number): Promise<OriginStatus | null>;
  /** A point in this process's order of events; later marks are larger. */
  mark(): number;
}

/**
 * How old a finished status a `before` takes. Four slots finishing runs every few hundred
 * milliseconds leave one this fresh almost always, so a run costs one status instead of two.
 */
export const BEFORE_REUSE_MS = 1_000;

export function createOriginStatusReads(
  read: ReadOriginStatus = readOriginStatus,
  now: () => number = () => performance.now(),
): OriginStatusReads {
  // A logical clock, not the time of day: only the order of an exit and a status's start matters.
  let clock = 0;
  const inFlight = new Map<string, { readonly started: number; status: Promise<OriginStatus | null> }>();
  const finished = new Map<string, { readonly at: number; readonly status: OriginStatus }>();
  const start = (root: string) => {
    const flight = { started: ++clock, status: Promise.resolve<OriginStatus | null>(null) };
    flight.status = read(root)
      .catch(() => null)
      .then((status) => {
        if (status) finished.set(root, { at: now(), status });
        return status;
      })
      .finally(() => {
        if (inFlight.get(root) === flight) inFlight.delete(root);
      });
    inFlight.set(root, flight);
    return flight.status;
  };
  const fresh = (root: string) => {
    const last = finished.get(root);
    return last && now() - last.at <= BEFORE_REUSE_MS ? Promise.resolve(last.status) : null;
  };
  return {
    before: (root) => inFlight.get(root)?.status ?? fresh(root) ?? start(root),
    after: (root, since) => {
      const flight = inFlight.get(root);
      return flight && flight.started > since ? flight.status : start(root);
    },
    mark: () => ++clock,
  };
}

/** `git status` of `root` and a stat of every listed path. */
export async function readOriginStatus(root: string): Promise<OriginStatus | null> {
  const status = await git(root, ['status', '--porcelain=v1', '-z']);
  if (status === null) return null;
  const entries = new Map<string, number>();
  for (const line of porcelainEntries(status)) {
    const mtime = await stat(join(root, line.slice(3))).then(
      (s) => s.mtimeMs,
      () => -1,
    );
    entries.set(line, mtime);
  }
  return { root, entries };
}

/** Porcelain v1 `-z` records; a rename's second (source) path is its own record and is dropped. */
export function porcelainEntries(output: string): string[] {
  const records = output.split('\0');
  const entries: string[] = [];
  for (let i = 0; i < records.length; i++) {
    const record = records[i] ?? '';
    if (record.length < 4) continue;
    entries.push(record);
    if (record[0] === 'R' || record[0] === 'C') i++;
  }
  return entries;
}

/**
 * The repository holding `dir` (flotilla's start directory: the same for every run of a host),
 * asked of git once per directory and process.
 */
const tops = new Map<string, Promise<string | null>>();

export function repositoryTop(dir: string): Promise<string | null> {
  let top = tops.get(dir);
  if (!top) {
    top = git(dir, ['rev-parse', '--show-toplevel']).then((out) => (out === null ? null : out.trim()));
    tops.set(dir, top);
  }
  return top;
}

/** A status of a big tree with many untracked files is long; one that is longer fails the guard's read. */
const GIT_MAX_BUFFER = 64 * 1024 * 1024;
const GIT_TIMEOUT_MS = 60_000;

/**
 * git's stdout, or null when it failed or is missing. The agent layer does not use the workspace's
 * git wrapper (the layers below stages do not import one another); the guard's read-only commands
 * need only its environment rule: no inherited GIT_* variable (a GIT_DIR set inside a hook) may
 * point them at another repository. node's own execFile: execa's extra work cost a few ms a call.
 */
export function git(cwd: string, args: readonly string[], input = ''): Promise<string | null> {
  const env: Record<string, string> = { LC_ALL: 'C', GIT_OPTIONAL_LOCKS: '0' };
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !key.startsWith('GIT_')) env[key] ??= value;
  }
  return new Promise((resolve) => {
    const child = execFile(
      'git',
      ['-C', cwd, ...args],
      { env, encoding: 'utf8', maxBuffer: GIT_MAX_BUFFER, timeout: GIT_TIMEOUT_MS, killSignal: 'SIGKILL' },
      (error, stdout) => resolve(error ? null : stdout),
    );
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(input);
  });
}
