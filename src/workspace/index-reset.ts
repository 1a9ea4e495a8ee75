/**
 * A small warm checkout reset in-process: what `git checkout --force --detach <commit>` makes of a
 * checkout that holds nothing untracked (the caller has looked: untracked-left.ts), without the
 * process. The commit's tree is read whole (loose-trees.ts), every index entry's file is held to
 * its stat data (racily clean ones by content), and only what differs is touched: a file the
 * commit lacks is removed with the folders it leaves empty, a file it holds otherwise, or one
 * changed since the index was written, is written anew (a new file, as git writes it, mode from
 * the umask), and the index is moved along those paths as `update-index` would move it
 * (index-file.ts), then HEAD. docs/BENCHMARKS.md §23.
 *
 * Anything git would do otherwise is left to git, before anything is touched: a bigger tree (the
 * stat of every entry runs on the host's main thread), a submodule, attributes that convert
 * content (content-filters.ts), core.autocrlf, core.ignoreCase, core.fileMode or core.symlinks
 * off, an unmerged, skip-worktree, intent-to-add or assume-unchanged entry, an index of another
 * version or form, an object the in-process reader cannot find, a name git would refuse to check
 * out (`.git`, `..`) or one that is not UTF-8, something other than a file or link where a file
 * goes. A failure half-way throws: the caller discards the checkout, as after a failed `git
 * checkout`.
 */
import {
  closeSync,
  constants,
  mkdirSync,
  openSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmdirSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { gitDirOf, objectStores, writeDetachedHead } from './checkout-head.js';
import { contentMayConvert } from './content-filters.js';
import { runGit } from './git.js';
import { cachedWriteRules, closeQuietly, lstatOrNull, objectId, readStoredObject } from './git-files.js';
import {
  type EntryStat,
  entryStat,
  type IndexUpdate,
  type ParsedIndex,
  parseIndex,
  readWhole,
  updatedIndex,
} from './index-file.js';
import { type LooseEntry, looseListing, looseReader } from './loose-trees.js';

/**
 * More entries than this and git resets the checkout: the in-process reset takes an lstat of each
 * on the host's main thread (about 5 ms a thousand), where git's runs beside it.
 */
export const RESET_MAX_ENTRIES = 1_000;

const FILE_MODES = new Set(['100644', '100755', '120000']);
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** A path git checks out: no empty, `.` or `..` part, no `.git` in any case, no attributes file. */
export function checkoutablePath(path: string): boolean {
  const parts = path.split('/');
  return (
    parts.every((part) => part !== '' && part !== '.' && part !== '..' && part.toLowerCase() !== '.git') &&
    parts[parts.length - 1] !== '.gitattributes'
  );
}

/** The index entries by path (UTF-8), when every one is a plain file or link git would keep as is. */
function plainEntries(file: Buffer, parsed: ParsedIndex): Map<string, number> | null {
  const { entries } = parsed;
  const byPath = new Map<string, number>();
  for (let i = 0; i < entries.count; i++) {
    if (entries.stage[i] !== 0 || entries.extended[i] !== 0) return null;
    const mode = file.readUInt32BE((entries.start[i] as number) + 24);
    if (!FILE_MODES.has(mode.toString(8))) return null;
    let path: string;
    try {
      path = utf8.decode(file.subarray(entries.nameAt[i], entries.nameEnd[i]));
    } catch {
      return null;
    }
    if (!checkoutablePath(path)) return null;
    byPath.set(path, i);
  }
  return byPath;
}

/** The stat fields the index holds for entry `i`, in entryBytes() order. */
function indexedStat(file: Buffer, parsed: ParsedIndex, i: number): EntryStat {
  const at = parsed.entries.start[i] as number;
  const field = (n: number) => file.readUInt32BE(at + n * 4);
  return {
    ctimeSec: field(0),
    ctimeNsec: field(1),
    mtimeSec: field(2),
    mtimeNsec: field(3),
    dev: field(4),
    ino: field(5),
    uid: field(7),
    gid: field(8),
    size: field(9),
  };
}

const STAT_FIELDS = [
  'ctimeSec',
  'ctimeNsec',
  'mtimeSec',
  'mtimeNsec',
  'dev',
  'ino',
  'uid',
  'gid',
  'size',
] as const;

/**
 * True when the file at `full` is what index entry `i` (`mode`, `id`) says: of its kind and
 * executable bit, every stat field as recorded, and, when modified in the second the index was
 * written or later (racily clean: the stat cannot tell), its content hashing to `id`.
 */
function unchangedSince(
  full: string,
  file: Buffer,
  parsed: ParsedIndex,
  i: number,
  mode: string,
  id: string,
  indexSec: number,
): boolean {
  const info = lstatOrNull(full);
  if (!info) return false;
  const link = mode === '120000';
  if (link ? !info.isSymbolicLink() : !info.isFile()) return false;
  if (!link && ((info.mode & 0o100n) !== 0n) !== (mode === '100755')) return false;
  const now = entryStat(info);
  const recorded = indexedStat(file, parsed, i);
  if (STAT_FIELDS.some((field) => now[field] !== recorded[field])) return false;
  if (now.mtimeSec < indexSec) return true;
  const content = link ? readlinkSync(full, { encoding: 'buffer' }) : readFileSync(full);
  return objectId('blob', content).id === id;
}

/** Writes `entry` at `full` as a new file (or link), its folders made. */
function writeEntry(full: string, entry: LooseEntry, content: Buffer): void {
  mkdirSync(dirname(full), { recursive: true });
  try {
    unlinkSync(full);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  if (entry.mode === '120000') symlinkSync(content, full);
  else writeFileSync(full, content, { mode: entry.mode === '100755' ? 0o777 : 0o666, flag: 'wx' });
}

/** The folders `path` is in, `a` and `a/b` for `a/b/c`. */
function foldersOf(path: string): string[] {
  const folders: string[] = [];
  for (let slash = path.indexOf('/'); slash > 0; slash = path.indexOf('/', slash + 1)) {
    folders.push(path.slice(0, slash));
  }
  return folders;
}

/** Removes the folders of `paths` left empty, deepest first, never `dir` itself. */
function pruneEmptied(dir: string, paths: readonly string[]): void {
  const folders = new Set<string>();
  for (const path of paths) {
    for (let folder = dirname(path); folder !== '.'; folder = dirname(folder)) folders.add(folder);
  }
  for (const folder of [...folders].sort().reverse()) {
    try {
      rmdirSync(join(dir, folder));
    } catch {
      // not empty, or gone already
    }
  }
}

/**
 * Resets the checkout at `dir` to `commit` (detached) in-process; false, with nothing touched,
 * when git must (the module's list).
 */
export async function resetInProcess(
  dir: string,
  commit: string,
  env: Readonly<Record<string, string | undefined>> = process.env,
): Promise<boolean> {
  if (env.GIT_INDEX_FILE) return false;
  const gitDir = gitDirOf(dir);
  const rules = await cachedWriteRules(gitDir);
  if (rules.ignoreCase || !rules.modesTrusted || contentMayConvert(dir, [], rules, env)) return false;
  const target = await looseListing(await looseReader(dir), commit, RESET_MAX_ENTRIES);
  if (!target?.every((entry) => FILE_MODES.has(entry.mode) && checkoutablePath(entry.path))) return false;
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
    const read = readWhole(indexPath, 256 * 1024);
    const parsed = read && parseIndex(read.file);
    if (!read || !parsed || parsed.entries.count > RESET_MAX_ENTRIES) return false;
    const { file } = read;
    const indexed = plainEntries(file, parsed);
    if (!indexed) return false;
    const indexSec = Number(read.info.mtimeNs / 1_000_000_000n);
    const writes: LooseEntry[] = [];
    for (const entry of target) {
      const i = indexed.get(entry.path);
      const at = i === undefined ? -1 : (parsed.entries.start[i] as number);
      const same =
        i !== undefined &&
        file.readUInt32BE(at + 24).toString(8) === entry.mode &&
        file.toString('hex', at + 40, at + 60) === entry.oid &&
        unchangedSince(join(dir, entry.path), file, parsed, i, entry.mode, entry.oid, indexSec);
      if (!same) writes.push(entry);
    }
    const kept = new Set(target.map((entry) => entry.path));
    const removes = [...indexed.keys()].filter((path) => !kept.has(path));
    // What stands where a file goes or goes away must be a file or a link (or nothing), or, where a
    // file goes, a folder of the index's that its removals empty (`b/x` in the index, a file `b` in
    // the commit): any other folder there holds what git would have to decide about.
    const trackedFolders = new Set([...indexed.keys()].flatMap(foldersOf));
    const fits = (path: string, goes: boolean) => {
      const info = lstatOrNull(join(dir, path));
      return (
        !info ||
        info.isFile() ||
        info.isSymbolicLink() ||
        (goes && info.isDirectory() && trackedFolders.has(path))
      );
    };
    if (!removes.every((path) => fits(path, false)) || !writes.every((entry) => fits(entry.path, true))) {
      return false;
    }
    const stores = objectStores(dir);
    const contents: Buffer[] = [];
    for (const entry of writes) {
      const body = readStoredObject(stores, entry.oid, 'blob');
      if (!body) return false;
      contents.push(body);
    }
    // From here on a failure throws: the caller discards the checkout.
    for (const path of removes) rmSync(join(dir, path), { force: true });
    pruneEmptied(dir, removes);
    const updates: IndexUpdate[] = removes.map((path) => ({ path, entry: null }));
    writes.forEach((entry, k) => {
      const full = join(dir, entry.path);
      writeEntry(full, entry, contents[k] as Buffer);
      const info = lstatOrNull(full);
      if (!info) throw new Error(`${full}: not there after it was written`);
      updates.push({
        path: entry.path,
        entry: { mode: Number.parseInt(entry.mode, 8), id: entry.oid, stat: entryStat(info) },
      });
    });
    const next = updatedIndex(file, parsed, updates, new Set());
    if (!next) throw new Error(`${indexPath}: the reset's entries could not be written`);
    writeFileSync(lock, next);
    const written = lock;
    lock = null;
    closeSync(written);
    renameSync(lockPath, indexPath);
    renamed = true;
  } finally {
    if (lock !== null) closeQuietly(lock);
    if (!renamed) rmSync(lockPath, { force: true });
  }
  if (!writeDetachedHead(dir, commit)) {
    await runGit(['update-ref', '--no-deref', 'HEAD', commit], { cwd: dir });
  }
  return true;
}
