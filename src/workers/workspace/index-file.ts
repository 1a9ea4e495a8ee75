/**
 * The checkout's index moved to the attempt's commit in-process, as `git update-index --add
 * --remove --replace` of the changed paths writes it: a process fewer a task (docs/BENCHMARKS.md,
 * "The index moved in-process"). The index (git's `Documentation/gitformat-index.txt`, versions 2
 * and 3; its bytes in index-format.ts) is read whole, the changed paths' entries replaced, added or
 * removed with the file's stat data and the object id the commit holds, the cache tree invalidated
 * along them as git does, and the file written whole into `index.lock` and renamed into place,
 * git's protocol, so a git that reads or writes the index at the same time sees the old file or the
 * new one. A split index (a large tree's warm checkout keeps one) is moved in its small file over
 * the shared one, read once and kept (split-index.ts). Whenever the index is anything else (version
 * 4, a sparse index, an unmerged, assume-unchanged or skip-worktree entry at a changed path, a lock
 * held, more than IN_PROCESS_MAX_BYTES) or the repository matches or keeps modes otherwise
 * (core.ignoreCase, core.fileMode or core.symlinks off), the caller runs `git update-index`.
 * Synchronous file calls, as in the rest of the in-process git plumbing (docs/ARCHITECTURE.md,
 * "Synchronous git files").
 */
import {
  type BigIntStats,
  closeSync,
  constants,
  fstatSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  readSync,
  renameSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { detachedHead, gitDirOf } from './checkout-head.js';
import { cachedWriteRules, closeQuietly, lstatOrNull, objectId } from './git-files.js';
import { inProcessGit } from './git-mode.js';
import {
  type Entries,
  entryBytes,
  entryStat,
  HASH_BYTES,
  type IndexUpdate,
  indexBytes,
  invalidate,
  type ParsedIndex,
  parseIndex,
  pathIs,
  pathOf,
  position,
  type RacyCheck,
  sizeZero,
  treeExtension,
} from './index-format.js';
import type { TreeRecord } from './loose-import.js';
import { type LooseReader, looseReader } from './loose-trees.js';
import {
  parseLink,
  type SharedIndex,
  type SplitLink,
  sharedIndexOf,
  updatedSplitIndex,
} from './split-index.js';
import { statusIndex } from './status-index.js';

/**
 * The new index file: `updates` applied to `file`'s entries, the racily clean entries it does not
 * change (`racy`) written with size 0 (git compares their contents next time), as git does on
 * every index write, the cache tree invalidated along every changed path. A file added where a folder of its path is an entry, or a folder
 * where it is, takes that entry's or those entries' place (`--replace`). Null when an update meets
 * something git must decide: an unmerged or extended entry at a path it changes.
 */
export function updatedIndex(
  file: Buffer,
  parsed: ParsedIndex,
  updates: readonly IndexUpdate[],
  racy: RacyCheck,
): Buffer | null {
  const { entries } = parsed;
  const smudged = racilyClean(file, entries, updates, racy);
  /** By entry number: its new bytes, or null when it goes. */
  const replace = new Map<number, Buffer | null>();
  const inserts: { at: number; path: Buffer; bytes: Buffer }[] = [];
  /** Entries --replace takes away, for the cache tree. */
  const gone: string[] = [];
  const plainAt = (i: number) => entries.stage[i] === 0 && entries.extended[i] === 0;
  for (const update of updates) {
    const path = Buffer.from(update.path);
    const at = position(file, entries, path);
    const here = pathIs(file, entries, at, path);
    if (here && (!plainAt(at) || pathIs(file, entries, at + 1, path))) return null;
    if (!update.entry) {
      if (here) replace.set(at, null);
      continue;
    }
    const bytes = entryBytes(path, update.entry.mode, update.entry.id, update.entry.stat);
    if (here) {
      replace.set(at, bytes);
      continue;
    }
    // --replace: a file where one of its folders is to be goes, and so do the entries below a
    // path that becomes a file.
    // Entries below it sort after it, though not at once: `a-b` and `a.c` come between `a` and
    // `a/x` (git's has_file_name walks the same way).
    const slash = 0x2f;
    for (let i = at; i < entries.count; i++) {
      const nameAt = entries.nameAt[i] as number;
      const length = (entries.nameEnd[i] as number) - nameAt;
      if (length <= path.byteLength) break;
      if (file.compare(path, 0, path.byteLength, nameAt, nameAt + path.byteLength) !== 0) break;
      if (file[nameAt + path.byteLength] !== slash) continue;
      if (!plainAt(i)) return null;
      replace.set(i, null);
      gone.push(pathOf(file, entries, i));
    }
    const parts = update.path.split('/');
    for (let i = 1; i < parts.length; i++) {
      const folder = Buffer.from(parts.slice(0, i).join('/'));
      const found = position(file, entries, folder);
      if (!pathIs(file, entries, found, folder)) continue;
      if (!plainAt(found)) return null;
      replace.set(found, null);
      gone.push(pathOf(file, entries, found));
    }
    inserts.push({ at, path, bytes });
  }
  // Two new paths may go to the same place: in path order there.
  inserts.sort((a, b) => a.at - b.at || Buffer.compare(a.path, b.path));
  // Untouched runs of entries are copied as one slice each: a handful of slices for the kernel
  // tree's 78,000 entries, not one each.
  const chunks: Buffer[] = [];
  let count = entries.count;
  let runStart = entries.count > 0 ? (entries.start[0] as number) : 12;
  let next = 0;
  const flush = (upTo: number) => {
    if (upTo > runStart) chunks.push(file.subarray(runStart, upTo));
  };
  const emitInserts = (before: number, at: number) => {
    while (next < inserts.length && (inserts[next] as (typeof inserts)[number]).at <= before) {
      flush(at);
      runStart = at;
      chunks.push((inserts[next] as (typeof inserts)[number]).bytes);
      count += 1;
      next += 1;
    }
  };
  // Only the entries something happens to: the insert points, the replaced, the smudged.
  const touched = [...new Set([...inserts.map((insert) => insert.at), ...replace.keys(), ...smudged])].sort(
    (a, b) => a - b,
  );
  for (const i of touched) {
    if (i >= entries.count) continue;
    const start = entries.start[i] as number;
    emitInserts(i, start);
    const replaced = replace.get(i);
    if (replaced === undefined && !smudged.has(i)) continue;
    flush(start);
    runStart = entries.end[i] as number;
    if (replaced === null) {
      count -= 1;
    } else if (replaced) {
      chunks.push(replaced);
    } else {
      chunks.push(sizeZero(file.subarray(start, entries.end[i])));
    }
  }
  const entriesEnd = entries.count > 0 ? (entries.end[entries.count - 1] as number) : 12;
  emitInserts(entries.count, entriesEnd);
  flush(entriesEnd);
  if (parsed.tree) {
    for (const path of [...updates.map((update) => update.path), ...gone]) invalidate(parsed.tree, path);
    chunks.push(treeExtension(parsed.tree));
  }
  return indexBytes(parsed.version, count, [...chunks, ...parsed.kept]);
}

/**
 * Above this size the index is left to git. In wall time the two are even at every size
 * (`node bench/run.js index-update`: 0.07 MiB 8–10 ms in-process against 7.5 ms for `git
 * update-index`, its process included, 3 MiB 19–24 against 24–28 ms, 6 MiB 45 against 51 ms),
 * but the in-process update reads, hashes and writes the whole file on the host's main thread,
 * 20–30 ms of it synchronous on the kernel tree's 8 MB, while git's runs beside it. Below the
 * bound it saves a process (its fork from the host and 10–15 ms of CPU); about 12,000 entries,
 * near where the host's own watches begin (AUTO_MIN_ENTRIES). docs/BENCHMARKS.md, "The index moved
 * in-process". For a split index the bound is on the checkout's own small file: the shared one is
 * read once and kept.
 */
export const IN_PROCESS_MAX_BYTES = 1024 * 1024;

/** A changed path as the commit holds it: its mode and content, or gone. */
export interface CommittedPath {
  readonly path: string;
  readonly entry: {
    readonly mode: string;
    readonly content: Uint8Array;
    /** The file's lstat taken before its content was read. */
    readonly seen: FileSeen;
  } | null;
}

/** What tells one state of a file from another (an lstat with nanosecond times). */
export interface FileSeen {
  readonly ino: bigint;
  readonly size: bigint;
  readonly mtimeNs: bigint;
  readonly ctimeNs: bigint;
}

/**
 * Whether writeIndexUpdates() may take an update of the checkout at `dir`, as far as can be told
 * before the index is read: no other index named, a repository that matches and keeps modes as
 * an update does (core.ignoreCase: git matches index paths ignoring case; core.fileMode or
 * core.symlinks off: git keeps the modes the index had, where the commit's may differ), and an
 * index of at most `maxBytes` (a split one's small file is the one measured) that no lock holds.
 * A caller that writes files first asks this before it does.
 */
export async function indexWritable(dir: string, maxBytes = IN_PROCESS_MAX_BYTES): Promise<boolean> {
  if (process.env.GIT_INDEX_FILE || !inProcessGit()) return false;
  const gitDir = gitDirOf(dir);
  const rules = await cachedWriteRules(gitDir);
  if (rules.ignoreCase || !rules.modesTrusted) return false;
  const indexPath = join(gitDir, 'index');
  const size = lstatOrNull(indexPath)?.size;
  return size !== undefined && size <= maxBytes && lstatOrNull(`${indexPath}.lock`) === null;
}

/**
 * Moves the index of the checkout at `dir` to the commit whose changed paths are `paths` (the
 * entries written with the files' stat data as they are now); false, with the index untouched,
 * when git must do it (the module's list), or when a file is no longer the one read for the commit.
 */
export async function writeIndexUpdates(
  dir: string,
  paths: readonly CommittedPath[],
  maxBytes = IN_PROCESS_MAX_BYTES,
): Promise<boolean> {
  if (!(await indexWritable(dir, maxBytes))) return false;
  const gitDir = gitDirOf(dir);
  const indexPath = join(gitDir, 'index');
  const lockPath = `${indexPath}.lock`;
  let lock: number | null;
  try {
    lock = openSync(lockPath, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o666);
  } catch {
    return false;
  }
  let renamed = false;
  try {
    const read = readWhole(indexPath);
    if (!read) return false;
    const { file, info: indexInfo } = read;
    const parsed = parseIndex(file);
    if (!parsed) return false;
    const updates: IndexUpdate[] = [];
    for (const changed of paths) {
      if (!changed.entry) {
        updates.push({ path: changed.path, entry: null });
        continue;
      }
      const info = lstatOrNull(join(dir, changed.path));
      // The file must still be the one read for the commit: an edit since (the same size even)
      // would otherwise be recorded clean with the committed blob's id.
      const seen = changed.entry.seen;
      const same =
        info &&
        info.ino === seen.ino &&
        info.size === seen.size &&
        info.mtimeNs === seen.mtimeNs &&
        info.ctimeNs === seen.ctimeNs &&
        Number(info.size) === changed.entry.content.byteLength;
      if (!info || !same) return false;
      const { content } = changed.entry;
      const id = objectId('blob', Buffer.from(content.buffer, content.byteOffset, content.byteLength)).id;
      updates.push({
        path: changed.path,
        entry: { mode: Number.parseInt(changed.entry.mode, 8), id, stat: entryStat(info) },
      });
    }
    const racy: RacyCheck = {
      sec: Number(indexInfo.mtimeNs / 1_000_000_000n),
      changed: (entry, start, name) => racilyChanged(dir, entry, start, name),
    };
    let next: Buffer | null;
    if (parsed.link) {
      const split = splitOf(gitDir, parsed.link);
      if (!split) return false;
      next = updatedSplitIndex(file, parsed, split.link, split.shared, updates, racy);
    } else {
      next = updatedIndex(file, parsed, updates, racy);
    }
    if (!next) return false;
    writeFileSync(lock, next);
    const written = lock;
    lock = null;
    closeSync(written);
    renameSync(lockPath, indexPath);
    renamed = true;
    return true;
  } catch {
    return false;
  } finally {
    if (lock !== null) closeQuietly(lock);
    if (!renamed) rmSync(lockPath, { force: true });
  }
}

/**
 * The entries of a whole index git would write with size 0: those `updates` do not change whose
 * file was modified in the second the index was last written or later (so the stat data cannot
 * tell) and whose content no longer matches (`racy.changed`). git does the same on every index
 * write, or a change made in the same second as the index would go unseen once the index is newer.
 */
function racilyClean(
  file: Buffer,
  entries: Entries,
  updates: readonly IndexUpdate[],
  racy: RacyCheck,
): Set<number> {
  const smudged = new Set<number>();
  // Names compared as bytes (latin1 strings): one that is not UTF-8 is still the file's own.
  const changing = new Set(updates.map((update) => Buffer.from(update.path).toString('latin1')));
  for (let i = 0; i < entries.count; i++) {
    const start = entries.start[i] as number;
    if (file.readUInt32BE(start + 8) < racy.sec || entries.stage[i] !== 0) continue;
    const name = file.subarray(entries.nameAt[i], entries.nameEnd[i]);
    if (!changing.has(name.toString('latin1')) && racy.changed(file, start, name)) smudged.add(i);
  }
  return smudged;
}

/**
 * True when the entry at `start` of `file` (for the path whose bytes are `name`, a file or link
 * modified in the index's second or later) still matches its file by stat data while the content
 * differs (smudging one git would not costs only a later content check). The file is found by
 * the name's bytes, so a name that is not UTF-8 is found too.
 */
function racilyChanged(dir: string, file: Buffer, start: number, name: Buffer): boolean {
  const kind = file.readUInt32BE(start + 24) >>> 12;
  // Regular files (0o10) and links (0o12); a submodule's entry is never racy.
  if (kind !== 0o10 && kind !== 0o12) return false;
  const full = Buffer.concat([Buffer.from(`${dir}/`), name]);
  const info = lstatOrNull(full);
  // A file of another kind now (a folder, a FIFO) differs by its stat data already: not read.
  if (!info || (kind === 0o12 ? !info.isSymbolicLink() : !info.isFile())) return false;
  const now = entryStat(info);
  // Seconds and size only: a git built without nanosecond times (Debian's) trusts those alone.
  if (file.readUInt32BE(start + 8) !== now.mtimeSec || file.readUInt32BE(start + 36) !== now.size)
    return false;
  const content = kind === 0o12 ? readlinkSync(full, { encoding: 'buffer' }) : readFileSync(full);
  return objectId('blob', content).id !== file.toString('hex', start + 40, start + 60);
}

/**
 * Shared indexes read and checked, by path: a file git names by its hash and never changes, read
 * once per checkout (the kernel tree's 8 MB in 15–50 ms), not once per attempt. A few are kept: one
 * per warm checkout, and one more while git moves a checkout to a new one.
 */
const sharedIndexes = new Map<string, SharedIndex>();
const SHARED_INDEXES_KEPT = 8;

/** A split index's `link` extension read, and the shared index it names; null when either is not as git writes them. */
function splitOf(gitDir: string, linkData: Buffer): { link: SplitLink; shared: SharedIndex } | null {
  const link = parseLink(linkData);
  const shared = link && sharedIndex(gitDir, link.base);
  return link && shared ? { link, shared } : null;
}

/** The shared index `base` names in `gitDir`; null when missing or not one parseIndex() reads. */
function sharedIndex(gitDir: string, base: Buffer): SharedIndex | null {
  const path = join(gitDir, `sharedindex.${base.toString('hex')}`);
  const known = sharedIndexes.get(path);
  if (known) {
    sharedIndexes.delete(path);
    sharedIndexes.set(path, known);
    return known;
  }
  const read = readWhole(path);
  const parsed = read && parseIndex(read.file);
  if (!read || !parsed || parsed.link || !read.file.subarray(-HASH_BYTES).equals(base)) return null;
  const shared = sharedIndexOf(read.file, parsed.entries);
  sharedIndexes.set(path, shared);
  for (const old of sharedIndexes.keys()) {
    if (sharedIndexes.size <= SHARED_INDEXES_KEPT) break;
    sharedIndexes.delete(old);
  }
  return shared;
}

/** The most entries a status index holds (status-index.ts); past it git reads the whole index. */
const STATUS_INDEX_MAX_ENTRIES = 10_000;
const STATUS_INDEX_PREFIX = 'flotilla-status-';
let statusIndexes = 0;
/** Git directories whose status indexes of other processes this one has removed. */
const swept = new Set<string>();

/**
 * Removes, once per git directory and process, the status indexes another process left there (a
 * host killed during a `status`): the checkout is leased to this one, so no other reads them.
 */
function removeLeftStatusIndexes(gitDir: string): void {
  if (swept.has(gitDir)) return;
  swept.add(gitDir);
  const own = `${STATUS_INDEX_PREFIX}${process.pid}-`;
  for (const name of readdirSync(gitDir)) {
    if (name.startsWith(STATUS_INDEX_PREFIX) && !name.startsWith(own))
      rmSync(join(gitDir, name), { force: true });
  }
}

/**
 * Writes the small index for a `git status` of `paths` in the checkout at `dir` (status-index.ts)
 * beside its index, and returns its path, for GIT_INDEX_FILE (the caller removes it); null where
 * the index is not split (git reads a small one as fast itself), HEAD is not a detached commit
 * whose trees are read here, or the index is not in a form read here.
 */
export async function writeStatusIndex(dir: string, paths: readonly string[]): Promise<string | null> {
  if (process.env.GIT_INDEX_FILE || !inProcessGit()) return null;
  try {
    const gitDir = gitDirOf(dir);
    const head = detachedHead(dir);
    const read = head ? readWhole(join(gitDir, 'index'), IN_PROCESS_MAX_BYTES) : null;
    const parsed = read && parseIndex(read.file, false);
    const split = parsed?.link ? splitOf(gitDir, parsed.link) : null;
    if (!head || !read || !parsed || !split) return null;
    const reader = await looseReader(dir);
    const trees = { root: await reader.treeOf(head), tree: (id: string) => headTree(reader, id) };
    const bytes = await statusIndex(
      { file: read.file, parsed },
      split,
      paths,
      trees,
      STATUS_INDEX_MAX_ENTRIES,
    );
    if (!bytes) return null;
    removeLeftStatusIndexes(gitDir);
    const path = join(gitDir, `${STATUS_INDEX_PREFIX}${process.pid}-${++statusIndexes}.index`);
    writeFileSync(path, bytes);
    // The index's own time: git compares the contents of entries modified in its second or later
    // (racily clean), and a file written now would make those look clean by their stat data.
    utimesSync(path, read.info.atime, read.info.mtime);
    return path;
  } catch {
    return null;
  }
}

/**
 * HEAD's trees read for status indexes, by id (a tree never changes): the folders along the paths
 * are mostly the same from one attempt to the next. The latest used are kept.
 */
const headTrees = new Map<string, Promise<readonly TreeRecord[]>>();
const HEAD_TREES_KEPT = 256;

function headTree(reader: LooseReader, id: string): Promise<readonly TreeRecord[]> {
  let known = headTrees.get(id);
  if (known) headTrees.delete(id);
  else {
    known = reader.tree(id);
    known.catch(() => headTrees.delete(id));
  }
  headTrees.set(id, known);
  for (const old of headTrees.keys()) {
    if (headTrees.size <= HEAD_TREES_KEPT) break;
    headTrees.delete(old);
  }
  return known;
}

/** What an index entry is: a file, a symbolic link, or a submodule's commit (a gitlink). */
export type EntryKind = 'file' | 'link' | 'gitlink';

/**
 * Each path the index at `indexPath` holds (its bytes as a latin1 string, so a name that is not
 * UTF-8 compares as git compares it) with its kind; null when the file is over `maxBytes`, is a
 * form parseIndex() leaves to git, or holds an unmerged entry.
 */
export function readIndexKinds(indexPath: string, maxBytes: number): Map<string, EntryKind> | null {
  let read: ReturnType<typeof readWhole>;
  try {
    read = readWhole(indexPath, maxBytes);
  } catch {
    return null;
  }
  const parsed = read && parseIndex(read.file);
  if (!read || !parsed || parsed.link) return null;
  const { file } = read;
  const { entries } = parsed;
  const kinds = new Map<string, EntryKind>();
  for (let i = 0; i < entries.count; i++) {
    if (entries.stage[i] !== 0) return null;
    const type = file.readUInt32BE((entries.start[i] as number) + 24) >>> 12;
    const kind = type === 0o12 ? 'link' : type === 0o16 ? 'gitlink' : 'file';
    kinds.set(file.toString('latin1', entries.nameAt[i], entries.nameEnd[i]), kind);
  }
  return kinds;
}

/** A file's bytes with its stat data; null when it is over `maxBytes` or shrank meanwhile. */
function readWhole(
  path: string,
  maxBytes = Number.POSITIVE_INFINITY,
): { file: Buffer; info: BigIntStats } | null {
  const handle = openSync(path, constants.O_RDONLY);
  try {
    const info = fstatSync(handle, { bigint: true });
    if (info.size > maxBytes) return null;
    const file = Buffer.allocUnsafe(Number(info.size));
    let at = 0;
    while (at < file.byteLength) {
      const bytesRead = readSync(handle, file, at, file.byteLength - at, at);
      if (bytesRead === 0) return null;
      at += bytesRead;
    }
    return { file, info };
  } finally {
    closeSync(handle);
  }
}
