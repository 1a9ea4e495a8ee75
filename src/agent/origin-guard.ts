import { stat } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { execa } from 'execa';

/**
 * What `git status` says about the repository flotilla was started from, with each listed path's
 * modification time, so a second write to a file that was already dirty shows too. Taken before
 * and after an agent runs: an agent that escaped its checkout (OpenCode following an inherited
 * `PWD` did) would otherwise change the user's own repository unnoticed, because the write-scope
 * check only looks inside the checkout.
 */
export interface OriginSnapshot {
  /** The repository's top level. */
  readonly root: string;
  /** Porcelain line → mtime in ms (or -1 when the path is gone). */
  readonly entries: ReadonlyMap<string, number>;
}

/**
 * A snapshot of the git repository holding `dir`, or null when `dir` is in no repository (nothing
 * cheap to compare; a listing of a big tree would cost more than the run). Paths at or above an
 * `exclude` directory (the child's own checkout, flotilla's home) are left out: flotilla writes
 * there itself.
 */
export async function snapshotOrigin(
  dir: string,
  exclude: readonly string[],
): Promise<OriginSnapshot | null> {
  const root = await repositoryTop(dir);
  if (root === null) return null;
  const status = await git(root, ['status', '--porcelain=v1', '-z']);
  if (status === null) return null;
  const entries = new Map<string, number>();
  for (const line of porcelainEntries(status)) {
    const path = join(root, line.slice(3));
    if (exclude.some((excluded) => overlaps(path, resolve(excluded)))) continue;
    const mtime = await stat(path).then(
      (s) => s.mtimeMs,
      () => -1,
    );
    entries.set(line, mtime);
  }
  return { root, entries };
}

/**
 * The repository holding `dir` (flotilla's start directory: the same for every run of a host),
 * asked of git once per directory and process; a snapshot is taken before and after every run.
 */
const tops = new Map<string, Promise<string | null>>();

function repositoryTop(dir: string): Promise<string | null> {
  let top = tops.get(dir);
  if (!top) {
    top = git(dir, ['rev-parse', '--show-toplevel']).then((out) => (out === null ? null : out.trim()));
    tops.set(dir, top);
  }
  return top;
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

/** The porcelain entries that appeared, vanished or whose file changed between two snapshots. */
export function diffOrigin(before: OriginSnapshot, after: OriginSnapshot): string[] {
  const changed: string[] = [];
  for (const [entry, mtime] of after.entries) {
    if (before.entries.get(entry) !== mtime) changed.push(entry.slice(3));
  }
  for (const entry of before.entries.keys()) {
    if (!after.entries.has(entry)) changed.push(entry.slice(3));
  }
  return [...new Set(changed)].sort();
}

/** True when `path` is `dir`, inside it, or a directory that contains it (an untracked `.cache/`). */
function overlaps(path: string, dir: string): boolean {
  const trimmed = path.replace(/\/+$/, '');
  const inside = relative(dir, trimmed);
  const above = relative(trimmed, dir);
  const within = (rel: string) => rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
  return within(inside) || within(above);
}

/**
 * git's stdout, or null when it failed or is missing. The agent layer does not use the workspace's
 * git wrapper; these two read-only commands need only its environment rule: no inherited GIT_DIR
 * (set inside a hook) may point them at another repository.
 */
async function git(cwd: string, args: readonly string[]): Promise<string | null> {
  const env: Record<string, string> = { LC_ALL: 'C', GIT_OPTIONAL_LOCKS: '0' };
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !key.startsWith('GIT_')) env[key] ??= value;
  }
  const result = await execa('git', ['-C', cwd, ...args], {
    env,
    extendEnv: false,
    reject: false,
    stdin: 'ignore',
    timeout: 60_000,
  });
  return result.exitCode === 0 && typeof result.stdout === 'string' ? result.stdout : null;
}
