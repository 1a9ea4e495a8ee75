/**
 * A record of a warm checkout's directories, each with its inode and ctime, taken whenever the
 * checkout is clean (made, reset, set up), in `<checkout>.dirs.json` beside it. What an attempt
 * left that git does not track is then found by reading only the directories that changed since
 * (dir-record-rules.ts), instead of git walking every directory of the tree with its ignore rules:
 * on the kernel tree that walk is half of `git status` and all of `git clean`, per task.
 *
 * No daemon: one `lstat` per directory (about 5,000 on an 80,000-file tree, 20–25 ms of CPU), done
 * with synchronous calls in chunks (Node's asynchronous `lstat` costs 3–5× the CPU through its
 * thread pool), yielding to the event loop between chunks so a host's lock renewals are never
 * held up.
 */
import { type Dirent, lstatSync, readdirSync, type Stats } from 'node:fs';
import { readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { z } from 'zod';
import {
  childPath,
  type DirEntry,
  type DirNow,
  type DirRecord,
  dirChange,
  entriesToLook,
  type RecordedDir,
} from './dir-record-rules.js';
import { keptMatcher, MONITORED_PATHS_LIMIT } from './monitored-paths.js';

/**
 * Trees with fewer files than this are walked by git as before. What a scan saves grows with the
 * files (git reads each folder's entries against the ignore rules), what it costs with the folders
 * (one `lstat` each in Node, ~5 µs, and a second `git status` and a `diff-index`): measured even
 * at 26,000 files in 2,600 folders, 12–14 % less CPU per task at 78,635 files in 5,096 folders
 * (the kernel tree; docs/BENCHMARKS.md, "One task's workspace work").
 */
export const SCANNED_TREE_FILES = 50_000;

/** Directories stat-ed (or read) between two yields to the event loop. */
const CHUNK = 512;

/**
 * The paths to look at go to git as arguments (`status` and `clean` take no pathspec file): well
 * below what one command line may hold (2 MiB on Linux), else git walks.
 */
const PATHS_BYTES_LIMIT = 256 * 1024;

export type ScanSetting = 'auto' | 'on' | 'off';

/**
 * `FLOTILLA_CHECKOUT_SCAN`: `auto` (the default) scans trees of SCANNED_TREE_FILES or more, `on`
 * every tree, `off` none (a file system whose directories do not change ctime with their entries,
 * which no local Linux file system does).
 */
export function scanSetting(env: Readonly<Record<string, string | undefined>> = process.env): ScanSetting {
  const value = env.FLOTILLA_CHECKOUT_SCAN?.trim().toLowerCase();
  return value === 'on' || value === 'off' ? value : 'auto';
}

/** The record file as written by writeDirRecord(); anything else is no record (the caller walks). */
const RecordFile = z.object({
  version: z.literal(1),
  mode: z.enum(['scan', 'walk']),
  commit: z.string(),
  keep: z.array(z.string()),
  dirs: z.record(z.string(), z.tuple([z.number(), z.number()])),
});

export function dirRecordFile(dir: string): string {
  return `${dir}.dirs.json`;
}

export interface LoadedRecord {
  readonly record: DirRecord;
  /** The record file's own mtime (ms): written after every directory in it was stat-ed, same clock. */
  readonly markerMs: number;
}

/**
 * Records this process read or wrote, by file, with the file's identity then: a listing and the
 * next reset read the same record, which need not be parsed again while the file is unchanged.
 */
const known = new Map<
  string,
  { readonly loaded: LoadedRecord; readonly ino: number; readonly size: number }
>();

export async function readDirRecord(dir: string): Promise<LoadedRecord | null> {
  const file = dirRecordFile(dir);
  try {
    const info = await stat(file);
    const cached = known.get(file);
    if (
      cached &&
      cached.loaded.markerMs === info.mtimeMs &&
      cached.ino === info.ino &&
      cached.size === info.size
    )
      return cached.loaded;
    const parsed = RecordFile.safeParse(JSON.parse(await readFile(file, 'utf8')));
    if (!parsed.success) return null;
    const record: DirRecord = parsed.data;
    // The time read before the content: a record rewritten in between is read again next time.
    const loaded = { record, markerMs: info.mtimeMs };
    known.set(file, { loaded, ino: info.ino, size: info.size });
    return loaded;
  } catch {
    known.delete(file);
    return null;
  }
}

/** Written whole or not at all (a crash leaves the previous record, which still covers every change). */
async function writeDirRecord(dir: string, record: DirRecord): Promise<void> {
  const file = dirRecordFile(dir);
  const temporary = `${file}.tmp-${process.pid}`;
  const text = JSON.stringify(record);
  await writeFile(temporary, text);
  await rename(temporary, file);
  const info = await stat(file);
  known.set(file, { loaded: { record, markerMs: info.mtimeMs }, ino: info.ino, size: info.size });
}

export async function removeDirRecord(dir: string): Promise<void> {
  known.delete(dirRecordFile(dir));
  await rm(dirRecordFile(dir), { force: true });
}

const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/** `path` below `dir` (`''` is the top), joined by hand: `path.join` costs more, once a directory. */
function below(dir: string, path: string): string {
  return path === '' ? dir : `${dir}/${path}`;
}

/**
 * What stands at `path` below `dir` now, not following a link; undefined when nothing does. Plain
 * (not bigint) stats: a scan is one call per directory, and they cost 40 % less CPU.
 */
function entryAt(dir: string, path: string): Stats | undefined {
  try {
    return lstatSync(below(dir, path), { throwIfNoEntry: false });
  } catch {
    // ENOTDIR: a folder above it is a file now.
    return undefined;
  }
}

function asDir(info: Stats | undefined): DirNow {
  return info?.isDirectory() ? { ino: info.ino, ctimeMs: info.ctimeMs } : null;
}

function dirNow(dir: string, path: string): DirNow {
  return asDir(entryAt(dir, path));
}

function recorded(now: NonNullable<DirNow>): RecordedDir {
  return [now.ino, now.ctimeMs];
}

async function statDirs(dir: string, paths: readonly string[]): Promise<Map<string, DirNow>> {
  const now = new Map<string, DirNow>();
  for (let i = 0; i < paths.length; i++) {
    const path = paths[i] as string;
    now.set(path, dirNow(dir, path));
    if (i % CHUNK === CHUNK - 1) await yieldToLoop();
  }
  return now;
}

function readEntries(dir: string, path: string): Dirent[] {
  return readdirSync(below(dir, path), { withFileTypes: true });
}

/**
 * A changed folder's entries, or null when a name is not UTF-8: Node would read it with U+FFFD in
 * place of the bytes, a path that names nothing for git, and the file would never be cleaned.
 */
function readNamedEntries(dir: string, path: string): DirEntry[] | null {
  const raw = readdirSync(below(dir, path), { withFileTypes: true, encoding: 'buffer' });
  const entries: DirEntry[] = [];
  for (const entry of raw) {
    const name = entry.name.toString('utf8');
    if (!Buffer.from(name, 'utf8').equals(entry.name)) return null;
    entries.push({ name, isDirectory: entry.isDirectory() });
  }
  return entries;
}

interface Walked {
  /** Every directory at or below the starts, by path, as stat-ed. */
  readonly dirs: Map<string, RecordedDir>;
  /** Files (anything not a directory) below them. */
  readonly files: number;
}

/** Walks `starts` and everything below them but `.git` at the top and setup's kept outputs. */
async function walkDirs(dir: string, starts: readonly string[], keep: readonly string[]): Promise<Walked> {
  const kept = keptMatcher(keep);
  const dirs = new Map<string, RecordedDir>();
  let files = 0;
  const queue = [...starts];
  for (let n = 0; queue.length > 0; n++) {
    const path = queue.pop() as string;
    const now = dirNow(dir, path);
    if (now === null) continue;
    dirs.set(path, recorded(now));
    for (const entry of readEntries(dir, path)) {
      if (path === '' && entry.name === '.git') continue;
      const child = childPath(path, entry.name);
      if (kept(child, entry.isDirectory())) continue;
      if (entry.isDirectory()) queue.push(child);
      else files += 1;
    }
    if (n % CHUNK === CHUNK - 1) await yieldToLoop();
  }
  return { dirs, files };
}

/**
 * Records a clean checkout at `commit` from a walk of the whole tree: a new checkout, one reset by
 * git's walks, or one setup just ran in. A tree too small to be worth it is recorded as `walk`.
 */
export async function recordDirs(
  dir: string,
  commit: string,
  keep: readonly string[],
  setting: ScanSetting = scanSetting(),
): Promise<void> {
  if (setting === 'off') return removeDirRecord(dir);
  const walked = await walkDirs(dir, [''], keep);
  const scan = setting === 'on' || walked.files >= SCANNED_TREE_FILES;
  await writeDirRecord(dir, {
    version: 1,
    mode: scan ? 'scan' : 'walk',
    commit,
    keep: [...keep],
    dirs: scan ? Object.fromEntries(walked.dirs) : {},
  });
}

export interface Scan {
  /** The entries git must look at: untracked and ignored files are among them, and nowhere else. */
  readonly paths: readonly string[];
  /** Recorded directories that are unchanged, as recorded. */
  readonly unchanged: ReadonlyMap<string, RecordedDir>;
  readonly changed: readonly string[];
  /** The directories among `paths` (ones the record lacks). */
  readonly newDirs: readonly string[];
  /**
   * Recorded folders with something else standing in their place now: a link to a folder (even
   * the folder itself, moved away) lets git see the tracked files through it as they were.
   */
  readonly replaced: readonly string[];
}

/**
 * What changed in `dir` since the record: every directory stat-ed, the changed ones read. Null
 * when there are more than `limit` paths to look at (git's walk is as cheap then), or a name git
 * could not be given (not UTF-8): the caller walks.
 */
export async function scanChanges(
  dir: string,
  loaded: LoadedRecord,
  limit: number = MONITORED_PATHS_LIMIT,
): Promise<Scan | null> {
  const { record, markerMs } = loaded;
  const changed: string[] = [];
  const unchanged = new Map<string, RecordedDir>();
  const replaced: string[] = [];
  let n = 0;
  for (const path in record.dirs) {
    const was = record.dirs[path] as RecordedDir;
    const info = entryAt(dir, path);
    const change = dirChange(was, asDir(info), markerMs);
    if (change === 'changed') changed.push(path);
    else if (change === 'same') unchanged.set(path, was);
    // Gone as a folder, and something else (a file, a link) stands in its place.
    else if (info) replaced.push(path);
    if (++n % CHUNK === 0) await yieldToLoop();
  }
  const isRecorded = (path: string) => path in record.dirs;
  const paths: string[] = [];
  const newDirs: string[] = [];
  let bytes = 0;
  for (const parent of changed) {
    const entries = readNamedEntries(dir, parent);
    if (!entries) return null;
    const folders = new Set(entries.filter((e) => e.isDirectory).map((e) => childPath(parent, e.name)));
    for (const path of entriesToLook(parent, entries, isRecorded, record.keep)) {
      paths.push(path);
      bytes += path.length + 16;
      if (folders.has(path)) newDirs.push(path);
    }
    if (paths.length > limit || bytes > PATHS_BYTES_LIMIT) return null;
  }
  return { paths, unchanged, changed, newDirs, replaced };
}

/**
 * The record of `dir` clean at `commit` after a scan and what the caller then did (git's clean of
 * the scan's paths): the unchanged directories keep their record, the changed ones and those the
 * caller `touched` are stat-ed again, and the new directories that are still there (the target's
 * own) are walked and added. Costs what changed, not the tree.
 */
export async function rerecord(
  dir: string,
  loaded: LoadedRecord,
  scan: Scan,
  commit: string,
  touched: readonly string[] = [],
): Promise<void> {
  const { record } = loaded;
  const dirs = new Map(scan.unchanged);
  const again = [...new Set([...scan.changed, ...touched])].filter((path) => path in record.dirs);
  for (const [path, now] of await statDirs(dir, again)) {
    if (now === null) dirs.delete(path);
    else dirs.set(path, recorded(now));
  }
  const added = await walkDirs(dir, scan.newDirs, record.keep);
  for (const [path, was] of added.dirs) dirs.set(path, was);
  await writeDirRecord(dir, { ...record, commit, dirs: Object.fromEntries(dirs) });
}
