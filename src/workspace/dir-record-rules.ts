/**
 * The pure half of a scanned checkout (dir-record.ts): which directories changed since the record
 * of a clean checkout, and which of their entries a listing or a reset must hand to git.
 *
 * Adding, removing or renaming an entry changes its directory's ctime, and a directory replaced by
 * another has a new inode; so every file git does not track (untracked, ignored) that an attempt
 * left is an entry of a directory whose `inode:ctime` differs from the record, or of a directory
 * the record does not have. A file edited in place changes no directory: git's index finds those.
 */
import { isUnder, keptPaths } from './monitored-paths.js';

export interface DirRecord {
  readonly version: 1;
  /** `scan`: the record below holds; `walk`: a tree small enough that git's walks cost less. */
  readonly mode: 'scan' | 'walk';
  /** The commit the checkout was clean at when recorded. */
  readonly commit: string;
  /** Setup's kept outputs (anchored patterns, `/node_modules/`): never looked into, never removed. */
  readonly keep: readonly string[];
  /** Every directory but `.git` and kept ones, by path (`''` is the top): `inode:ctime-ns` then. */
  readonly dirs: Readonly<Record<string, string>>;
}

/** A directory's signature: its inode and its ctime in nanoseconds. */
export function signature(ino: bigint, ctimeNs: bigint): string {
  return `${ino}:${ctimeNs}`;
}

/**
 * True when a directory recorded with `recorded` may have changed after the record without its
 * ctime showing it: changed in the same clock tick as the record was written (`markerNs`, the
 * record file's own mtime, from the same clock). Such a directory is read again every time, as git
 * does with its "racily clean" index entries.
 */
export function isRacy(recorded: string, markerNs: bigint): boolean {
  const ctime = recorded.slice(recorded.indexOf(':') + 1);
  return ctime === '' || BigInt(ctime) >= markerNs;
}

export interface DirChanges {
  /** Directories that are still there and changed since the record (or may have): read them. */
  readonly changed: readonly string[];
  /** Recorded directories that are gone, or are no longer directories. */
  readonly gone: readonly string[];
}

/**
 * Compares the record with the directories as they are now (`now`: path → signature, null when
 * the path is gone or not a directory).
 */
export function changedDirs(
  record: Pick<DirRecord, 'dirs'>,
  now: ReadonlyMap<string, string | null>,
  markerNs: bigint,
): DirChanges {
  const changed: string[] = [];
  const gone: string[] = [];
  for (const [path, recorded] of Object.entries(record.dirs)) {
    const current = now.get(path) ?? null;
    if (current === null) gone.push(path);
    else if (current !== recorded || isRacy(recorded, markerNs)) changed.push(path);
  }
  return { changed, gone };
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
  const kept = keptPaths(keep);
  const paths: string[] = [];
  for (const entry of entries) {
    if (parent === '' && entry.name === '.git') continue;
    const path = childPath(parent, entry.name);
    if (isUnder(path, kept)) continue;
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
