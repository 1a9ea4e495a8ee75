/**
 * The pure half of a scanned checkout (dir-record.ts): which directories changed since the record
 * of a clean checkout, and which of their entries a listing or a reset must hand to git.
 *
 * Adding, removing or renaming an entry changes its directory's ctime, and a directory replaced by
 * another has a new inode; so every file git does not track (untracked, ignored) that an attempt
 * left is an entry of a directory whose `inode:ctime` differs from the record, or of a directory
 * the record does not have. A file edited in place changes no directory: git's index finds those.
 */
import { isUnder, keptMatcher, keptPaths } from './monitored-paths.js';

export interface DirRecord {
  readonly version: 1;
  /** `scan`: the record below holds; `walk`: a tree small enough that git's walks cost less. */
  readonly mode: 'scan' | 'walk';
  /** The commit the checkout was clean at when recorded. */
  readonly commit: string;
  /** Setup's kept outputs (anchored patterns, `/node_modules/`): never looked into, never removed. */
  readonly keep: readonly string[];
  /** Every directory but `.git` and kept ones, by path (`''` is the top): its inode and ctime then. */
  readonly dirs: Readonly<Record<string, RecordedDir>>;
}

/** `[inode, ctime in ms]` (the ctime with its sub-millisecond part, as `fs.Stats.ctimeMs` has it). */
export type RecordedDir = readonly [number, number];

/** A directory as it is now: its inode and ctime, or null when it is gone or not a directory. */
export type DirNow = { readonly ino: number; readonly ctimeMs: number } | null;

export type DirChange = 'same' | 'changed' | 'gone';

/**
 * How a recorded directory compares with what is there now. A directory whose recorded ctime is
 * not before `markerMs` (the record file's own mtime, from the same clock) may have changed again
 * in that clock tick without its ctime showing it: it counts as changed, and is read every time,
 * as git does with its "racily clean" index entries.
 */
export function dirChange(recorded: RecordedDir, now: DirNow, markerMs: number): DirChange {
  if (now === null) return 'gone';
  const [ino, ctimeMs] = recorded;
  if (now.ino !== ino || now.ctimeMs !== ctimeMs || ctimeMs >= markerMs) return 'changed';
  return 'same';
}

export interface DirEntry {
  readonly name: string;
  readonly isDirectory: boolean;
}

/** `parent/name`, the top's entries without a leading slash. */
export function childPath(parent: string, name: string): string {
  return parent === '' ? name : `${parent}/${name}`;
}

/**
 * The entries of a changed directory that git must look at: every one but the recorded
 * directories (the record covers those on its own), setup's kept outputs and the checkout's own
 * `.git`. A directory the record lacks is listed whole: git looks below it.
 */
export function entriesToLook(
  parent: string,
  entries: readonly DirEntry[],
  recorded: (path: string) => boolean,
  keep: readonly string[],
): string[] {
  const kept = keptMatcher(keep);
  const paths: string[] = [];
  for (const entry of entries) {
    if (parent === '' && entry.name === '.git') continue;
    const path = childPath(parent, entry.name);
    if (kept(path, entry.isDirectory)) continue;
    if (entry.isDirectory && recorded(path)) continue;
    paths.push(path);
  }
  return paths;
}

/** True when two keep lists hold the same patterns (a reset by the record keeps the same outputs). */
export function sameKeep(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  const sorted = [...b].sort();
  return [...a].sort().every((pattern, i) => pattern === sorted[i]);
}

/**
 * The paths without those below another of them: `git clean` given a folder and a path inside it
 * goes into the folder path by path and leaves the folder itself (emptied) behind.
 */
export function outermost(paths: readonly string[]): string[] {
  const all = new Set(paths);
  return [...all].filter((path) => {
    for (let slash = path.indexOf('/'); slash !== -1; slash = path.indexOf('/', slash + 1)) {
      if (all.has(path.slice(0, slash))) return false;
    }
    return true;
  });
}

/** The folder `path` is in (`''` for the top). */
export function parentOf(path: string): string {
  return path.includes('/') ? path.slice(0, path.lastIndexOf('/')) : '';
}

export interface CleanPlan {
  /** What `git clean` is given: the scan's entries and the paths the index moved, outermost only. */
  readonly paths: readonly string[];
  /** The folders the clean may empty: the changed ones, and those of the paths the index moved. */
  readonly touched: readonly string[];
}

/**
 * The scanned reset's clean: the changed folders' entries (`entries`), and the paths where the
 * index had moved off the clean commit (`unstaged`: `git rm --cached` leaves an untracked file in a
 * folder that did not change) but setup's kept outputs.
 */
export function cleanPlan(
  entries: readonly string[],
  changed: readonly string[],
  unstaged: readonly string[],
  keep: readonly string[],
): CleanPlan {
  const kept = keptPaths(keep);
  const moved = unstaged.filter((path) => path !== '' && !isUnder(path, kept));
  return {
    paths: outermost([...entries, ...moved]),
    touched: [...new Set([...changed, ...moved.map(parentOf)])],
  };
}
