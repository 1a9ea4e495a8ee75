/**
 * The pure half of a monitored checkout (watchman.ts, warm-checkout.ts): which paths a listing or
 * a reset must look at, given what the monitor says changed since the checkout was last clean, and
 * how a reset puts exactly those paths back to a target commit.
 */
import type { MonitoredChange } from './file-monitor.js';

/**
 * flotilla's own folders in a checkout, made when it is clean and kept (empty) from attempt to
 * attempt: git does not list an empty folder, and a folder deleted and made again for every
 * attempt is what Watchman 4.9 loses track of ("dir missing from internal state"), recrawling
 * the whole tree for a file written into it at once.
 */
export const DISPATCH_FOLDERS: readonly string[] = [
  '.planning',
  '.planning/dispatch',
  '.planning/dispatch/archive',
];

/** More changed paths than this and a whole-tree walk is as cheap and simpler: callers walk. */
export const MONITORED_PATHS_LIMIT = 2_000;

export interface Candidates {
  /** Files, symlinks and anything else not a directory, present or deleted. */
  readonly files: readonly string[];
  /** Directories made or removed since the clock (one that merely changed is not listed). */
  readonly dirs: readonly string[];
}

/** setupOutputs()'s anchored patterns (`/node_modules/`) as plain paths (`node_modules`). */
export function keptPaths(keep: readonly string[]): string[] {
  return keep.map((pattern) => pattern.replace(/^\/+/, '').replace(/\/+$/, '')).filter(Boolean);
}

/**
 * Setup's kept outputs (`keep`, anchored patterns) as git's `-e` keeps them: a path below a kept
 * path, or at one, except that a folder-only pattern (`/node_modules/`) keeps only a folder there
 * (a file or a link an attempt put in its place is the attempt's).
 */
export function keptMatcher(keep: readonly string[]): (path: string, isDirectory: boolean) => boolean {
  const kept = keptPaths(keep);
  const folderOnly = new Set(keptPaths(keep.filter((pattern) => pattern.endsWith('/'))));
  return (path, isDirectory) => isUnder(path, kept) && (isDirectory || !folderOnly.has(path));
}

export function isUnder(path: string, prefixes: readonly string[]): boolean {
  return prefixes.some((prefix) => path === prefix || path.startsWith(`${prefix}/`));
}

/**
 * The paths to look at: every changed file, and every directory that appeared or went. Setup's
 * kept outputs and git's own `.git` are left out. Null when there are more than `limit`.
 */
export function candidatePaths(
  changes: readonly MonitoredChange[],
  keep: readonly string[],
  limit: number = MONITORED_PATHS_LIMIT,
): Candidates | null {
  const kept = keptMatcher(keep);
  const files = new Set<string>();
  const dirs = new Set<string>();
  for (const change of changes) {
    const name = change.name;
    if (name === '' || name === '.git' || name.startsWith('.git/') || kept(name, change.type === 'd'))
      continue;
    if (change.type === 'd') {
      if (change.new || !change.exists) dirs.add(name);
    } else {
      files.add(name);
    }
    if (files.size + dirs.size > limit) return null;
  }
  return { files: [...files].sort(), dirs: [...dirs].sort() };
}

/** Every path git must look at: the candidates and where the index differs, each once. */
export function pathsToLook(candidates: Candidates, indexDiff: readonly string[]): string[] {
  return [...new Set([...candidates.files, ...candidates.dirs, ...indexDiff])];
}

/** A `git ls-tree -r -z` record: `<mode> <type> <oid>\t<path>`. */
export interface TreeEntry {
  readonly mode: string;
  readonly oid: string;
  readonly path: string;
}

export function parseLsTree(output: string): TreeEntry[] {
  const entries: TreeEntry[] = [];
  for (const record of output.split('\0')) {
    const tab = record.indexOf('\t');
    if (tab === -1) continue;
    const [mode = '', , oid = ''] = record.slice(0, tab).split(' ');
    entries.push({ mode, oid, path: record.slice(tab + 1) });
  }
  return entries;
}

export interface ResetPlan {
  /** Deleted from disk first (recursively): untracked leftovers, and files git does not have. */
  readonly remove: readonly string[];
  /** Deleted from disk only when they are not a directory: a file where the target has a folder. */
  readonly removeUnlessDir: readonly string[];
  /**
   * Put back as the target has them, in the index and on disk (`git restore --staged
   * --worktree`): the target's files among the paths, and index entries the target lacks
   * (which restore removes). Every one is known to git, as restore requires.
   */
  readonly restore: readonly string[];
}

/**
 * How to put the candidate paths, and every path where the index differs from the target
 * (`indexDiff`), back to the target commit: `target` holds the target's entries at or below those
 * paths (one `git ls-tree`). Everything else in the checkout is unchanged since it was clean, so
 * afterwards the checkout is as a fresh checkout of the target (plus setup's kept outputs).
 * `keepFolders` stay as folders, emptied (flotilla's dispatch folders: DISPATCH_FOLDERS).
 */
export function resetPlan(
  candidates: Candidates,
  indexDiff: readonly string[],
  target: readonly TreeEntry[],
  keepFolders: readonly string[] = [],
): ResetPlan {
  const inTarget = new Set(target.map((entry) => entry.path));
  const dirsInTarget = new Set<string>();
  for (const entry of target) {
    for (let slash = entry.path.indexOf('/'); slash !== -1; slash = entry.path.indexOf('/', slash + 1)) {
      dirsInTarget.add(entry.path.slice(0, slash));
    }
  }
  const remove: string[] = [];
  const removeUnlessDir: string[] = [];
  const restore = new Set<string>(inTarget);
  for (const path of indexDiff) restore.add(path);
  const folders = new Set(keepFolders);
  for (const path of [...new Set([...candidates.files, ...candidates.dirs])].sort()) {
    if (inTarget.has(path) || (folders.has(path) && candidates.dirs.includes(path))) continue;
    if (dirsInTarget.has(path)) removeUnlessDir.push(path);
    else remove.push(path);
  }
  return { remove, removeUnlessDir, restore: [...restore].sort() };
}

/**
 * The folders above the candidates that are not candidates themselves. A monitor may report a
 * file below a name without the name itself (Watchman, for a folder made where a file was
 * deleted): asking git which of these are files, not folders, in a commit finds such a name.
 */
export function ancestorsOf(candidates: Candidates): string[] {
  const listed = new Set([...candidates.files, ...candidates.dirs]);
  const found = new Set<string>();
  for (const path of listed) {
    for (let slash = path.lastIndexOf('/'); slash > 0; slash = path.lastIndexOf('/', slash - 1)) {
      const parent = path.slice(0, slash);
      if (found.has(parent)) break;
      if (!listed.has(parent)) found.add(parent);
    }
  }
  return [...found].sort();
}

/** The candidates with `files` added (each once, sorted). */
export function withFiles(candidates: Candidates, files: readonly string[]): Candidates {
  if (files.length === 0) return candidates;
  return { files: [...new Set([...candidates.files, ...files])].sort(), dirs: candidates.dirs };
}
