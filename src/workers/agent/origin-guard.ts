import { lstat, readdir, realpath, stat } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { DISPATCH_DIR } from '../../shared/contracts.js';
import { type FileMonitor, fileMonitor } from '../workspace/file-monitor.js';
import {
  createOriginStatusReads,
  git,
  type OriginStatus,
  type OriginStatusReads,
  repositoryTop,
} from './origin-status.js';

/**
 * The repository flotilla was started from, compared before and after an agent runs: an agent
 * that escaped its checkout (OpenCode following an inherited `PWD` did) would otherwise change
 * the user's own repository unnoticed, because the write-scope check only looks inside the
 * checkout. What the changes mean (this attempt's own files, or someone else's edits) is
 * origin-verdict.ts's.
 */
export type OriginSnapshot = OriginStatus;

/**
 * A status without the paths at or above an `exclude` directory (the run's own checkout,
 * flotilla's home): flotilla writes there itself.
 */
export function snapshotWithout(status: OriginStatus, exclude: readonly string[]): OriginSnapshot {
  const kept = new Set(excluding(status.root, [...status.entries.keys()], exclude, (line) => line.slice(3)));
  return { root: status.root, entries: new Map([...status.entries].filter(([line]) => kept.has(line))) };
}

/** `items` (repository paths, or what `pathOf` reads one from) not at or above an `exclude` directory. */
function excluding<T>(
  root: string,
  items: readonly T[],
  exclude: readonly string[],
  pathOf: (item: T) => string,
): T[] {
  const dirs = exclude.map((dir) => resolve(dir));
  return items.filter((item) => !dirs.some((dir) => overlaps(join(root, pathOf(item)), dir)));
}

/** The porcelain entries that appeared, vanished or whose file changed between two snapshots. */
export function diffOrigin(before: OriginSnapshot, after: OriginSnapshot): string[] {
  return [...new Set(diffPlaces(before.entries, after.entries).map((entry) => entry.slice(3)))].sort();
}

/**
 * Whether a run needs the guard at all. Under `--sandbox` everything is read-only but /tmp (a
 * private one), the checkout and the adapter's `sandbox_writable` paths, so the CLI can change the
 * repository only through a writable path that lies in it or holds it. A writable path inside an
 * excluded directory (the checkout itself, flotilla's home) does not count: the guard would leave
 * out what is written there anyway. Without a sandbox (`writable` null) the guard always runs.
 */
export function originGuardNeeded(input: {
  readonly root: string;
  readonly writable: readonly string[] | null;
  readonly exclude: readonly string[];
}): boolean {
  if (input.writable === null) return true;
  const excluded = input.exclude.map((dir) => resolve(dir));
  return input.writable
    .map((path) => resolve(path))
    .filter((path) => !excluded.some((dir) => within(path, dir)))
    .some((path) => overlaps(path, resolve(input.root)));
}

/** One run's watch: the snapshot before, and the changes once the CLI has exited. */
export interface OriginWatch {
  readonly root: string;
  /** `exitedAt`: the `mark()` taken when the CLI's exit was seen. */
  changes(exitedAt: number): Promise<string[]>;
}

/** The statuses all the runs of this process share. */
export const originReads: OriginStatusReads = createOriginStatusReads();

/**
 * The snapshot before a run of the repository holding `dir`, or null when there is nothing to
 * watch: `dir` is in no repository (a listing of a big tree would cost more than the run), git
 * failed, or the sandbox leaves the CLI no way to write there (`writable`: the sandbox's writable
 * paths; null when the CLI runs unsandboxed). With a file-system monitor (Watchman), the snapshot
 * is its clock and the changes are what it saw change since: no walk of the repository at all.
 */
export async function watchOrigin(
  input: {
    readonly dir: string;
    readonly exclude: readonly string[];
    readonly writable: readonly string[] | null;
    /**
     * The run's own files (its prompt and result), relative to `dir`: where an escaped run would
     * write them. Given, a repository too big to walk is watched at those places alone.
     */
    readonly own?: readonly string[];
  },
  reads: OriginStatusReads = originReads,
  monitor: FileMonitor | null | undefined = undefined,
  walkedIndexBytes = WALKED_INDEX_BYTES,
): Promise<OriginWatch | null> {
  const root = await repositoryTop(input.dir);
  if (root === null) return null;
  // A writable path that is a link into the repository binds the repository: both spellings count.
  const writable =
    input.writable &&
    (
      await Promise.all(input.writable.map(async (path) => [path, await realpath(path).catch(() => path)]))
    ).flat();
  if (!originGuardNeeded({ root, writable, exclude: input.exclude })) return null;
  const watcher = monitor === undefined ? await fileMonitor() : monitor;
  const clock = watcher ? await watcher.clock(root) : null;
  if (watcher && clock) {
    // Should the monitor lose track by the end (the host's own watches do, whenever they may have
    // missed a change: an agent can cause that), the run's own places are compared instead: they
    // are what proves an escape.
    const places = input.own ? await watchPlaces(root, input.dir, input.own, input.exclude) : null;
    return {
      root,
      changes: async (exitedAt) =>
        (await monitoredChanges(watcher, root, clock, input.exclude)) ?? (await places?.(exitedAt)) ?? [],
    };
  }
  if (input.own && (await indexBytes(root)) > walkedIndexBytes) {
    return { root, changes: await watchPlaces(root, input.dir, input.own, input.exclude) };
  }
  const status = await reads.before(root);
  if (status === null) return null;
  const before = snapshotWithout(status, input.exclude);
  return {
    root,
    changes: async (exitedAt) => {
      const after = await reads.after(root, exitedAt);
      return after ? diffOrigin(before, snapshotWithout(after, input.exclude)) : [];
    },
  };
}

/**
 * The files the monitor saw change in `root` since `clock`, as repository paths, leaving out the
 * excluded directories and what git ignores, as a `git status` would; files in the dispatch
 * folder count even where it is ignored (the kernel's `.*` rule): they are what an escape writes.
 * Null when the monitor lost track meanwhile (Watchman restarted; the host's own watches may have
 * missed a change): the caller falls back to the run's own places.
 */
async function monitoredChanges(
  monitor: FileMonitor,
  root: string,
  clock: string,
  exclude: readonly string[],
): Promise<string[] | null> {
  const answer = await monitor.changedSince(root, clock);
  if (!answer) return null;
  const files = answer.changes.filter((change) => change.type !== 'd' && change.name !== '');
  const paths = excluding(
    root,
    files.map((change) => change.name),
    exclude,
    (name) => name,
  );
  if (paths.length === 0) return [];
  const ignored = await ignoredAmong(root, paths);
  const gone = new Set(files.filter((change) => !change.exists).map((change) => change.name));
  // A file gone that git does not track was made and removed within the run, or is the name the
  // host's own watches give a folder's own event (`docs/docs` for `docs` deleted): a status
  // before and after would not show it either.
  const tracked = await trackedAmong(
    root,
    paths.filter((path) => gone.has(path)),
  );
  return paths
    .filter((path) => !ignored.has(path) || path.startsWith(`${DISPATCH_DIR}/`))
    .filter((path) => !gone.has(path) || tracked.has(path))
    .sort();
}

/**
 * Which of `paths` git tracks in `root` (one `ls-files`, only when there are any to ask about);
 * all of them when git cannot say, so a deletion is never left out for it.
 */
async function trackedAmong(root: string, paths: readonly string[]): Promise<Set<string>> {
  if (paths.length === 0) return new Set();
  const out = await git(root, ['--literal-pathspecs', 'ls-files', '-z', '--', ...paths]);
  return new Set(out === null ? paths : out.split('\0').filter(Boolean));
}

/**
 * Above this index size (about 10,000 files) the guard walks the repository only with a monitor.
 * Without one it looks where this run's own files would land, which is what proves an escape: a
 * walk there would cost each attempt seconds of git on an 80,000-file tree, the user's own repository
 * being the usual place flotilla is started from (docs/BENCHMARKS.md, "The origin guard"). Someone
 * else's edits elsewhere in it then go unreported (the `origin-changed` warning).
 */
export const WALKED_INDEX_BYTES = 1024 * 1024;

const indexFiles = new Map<string, Promise<string | null>>();

/** The size of `root`'s index file (its git dir asked of git once per process); 0 when unknown. */
async function indexBytes(root: string): Promise<number> {
  let file = indexFiles.get(root);
  if (!file) {
    file = git(root, ['rev-parse', '--path-format=absolute', '--git-path', 'index']).then(
      (out) => out?.trim() || null,
    );
    indexFiles.set(root, file);
  }
  const path = await file;
  return path ? ((await stat(path).catch(() => null))?.size ?? 0) : 0;
}

/**
 * The folders, relative to `root`, where an escaped run's own files would land: those of its
 * prompt and result (relative to the directory it escaped to, `dir`), and the dispatch folder at
 * the top. Only folders inside the repository count.
 */
export function placesToLook(root: string, dir: string, own: readonly string[]): string[] {
  const folders = [
    ...own.map((path) => dirname(resolve(dir, path))),
    resolve(dir, DISPATCH_DIR),
    resolve(root, DISPATCH_DIR),
  ];
  return [...new Set(folders.map((folder) => relative(root, folder)))]
    .filter((rel) => !rel.startsWith('..') && !isAbsolute(rel))
    .sort();
}

/**
 * The places where the run's own files would land (placesToLook()), listed now; the function
 * lists them again and gives what changed, less the excluded directories.
 */
async function watchPlaces(
  root: string,
  dir: string,
  own: readonly string[],
  exclude: readonly string[],
): Promise<OriginWatch['changes']> {
  const places = placesToLook(root, dir, own);
  const before = await listPlaces(root, places);
  return async () =>
    excluding(root, diffPlaces(before, await listPlaces(root, places)), exclude, (path) => path);
}

/** Each file directly in one of `places`, root-relative, with its size and modification time. */
async function listPlaces(root: string, places: readonly string[]): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  for (const place of places) {
    const entries = await readdir(join(root, place), { withFileTypes: true }).catch(() => []);
    for (const entry of entries) {
      if (entry.isDirectory()) continue;
      const path = place === '' ? entry.name : `${place}/${entry.name}`;
      const info = await lstat(join(root, path)).catch(() => null);
      if (info) files.set(path, `${info.size}:${info.mtimeMs}`);
    }
  }
  return files;
}

/** The keys that appeared, vanished or whose stamp changed between two listings, sorted. */
export function diffPlaces<V>(before: ReadonlyMap<string, V>, after: ReadonlyMap<string, V>): string[] {
  const changed = new Set<string>();
  for (const [path, stamp] of after) if (before.get(path) !== stamp) changed.add(path);
  for (const path of before.keys()) if (!after.has(path)) changed.add(path);
  return [...changed].sort();
}

/** Which of `paths` git ignores in `root` (one `git check-ignore`, which exits 1 when none is). */
async function ignoredAmong(root: string, paths: readonly string[]): Promise<Set<string>> {
  const out = await git(root, ['check-ignore', '-z', '--stdin'], `${paths.join('\0')}\0`);
  return new Set((out ?? '').split('\0').filter(Boolean));
}

/** True when `path` is `dir` or inside it. */
function within(path: string, dir: string): boolean {
  const rel = relative(dir, path.replace(/\/+$/, ''));
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

/** True when `path` is `dir`, inside it, or a directory that contains it (an untracked `.cache/`). */
function overlaps(path: string, dir: string): boolean {
  const trimmed = path.replace(/\/+$/, '');
  return within(trimmed, dir) || within(dir, trimmed);
}
