/**
 * A small index for a `git status` limited to a few paths (a monitored checkout's listing,
 * monitored-checkout.ts), given to git as GIT_INDEX_FILE: on the kernel tree git otherwise reads,
 * checks and hashes the names of the whole 8 MB index to report on a handful of paths. It holds
 * the entries whose names begin with one of those paths (the paths and what is below them, and
 * the folders git's walk goes into beside them: `a.b/` for `a`), and, for each shorter name git
 * looks at on its way down, the entry of that name and one below it, so git still tells a folder
 * that holds tracked files from an untracked one (which it may list as ignored whole).
 *
 * Its cache tree lets git's comparison with HEAD skip what the paths are not in: status walks
 * HEAD's whole tree against the index (its pathspec only filters what it reports), and skips a
 * folder whose cache tree node has HEAD's id, taking that node's count of entries as matched. So
 * each folder of HEAD beside the paths gets a node with its id from HEAD and the count of the
 * entries the small index holds below it (one at least: an entry is taken from the index for
 * it), and the folders the paths are in get invalid nodes, walked. git decides everything else as
 * before (ignore rules, racy entries, content filters, submodules). Pure but for the trees read.
 */
import {
  type CacheTree,
  type Entries,
  FLAG_EXTENDED,
  indexBytes,
  NAME_MASK,
  type ParsedIndex,
  position,
  treeExtension,
} from './index-format.js';
import type { TreeRecord } from './loose-import.js';
import type { SharedIndex, SplitLink } from './split-index.js';

const SLASH = 0x2f;
const TREE_MODE = '40000';
const SLASH_BYTES = Buffer.from('/');
const RULE_FILES = [Buffer.from('.gitignore'), Buffer.from('.gitattributes')];

/** Where the live entries come from: a split index's shared entries, less those deleted or replaced, and its own. */
interface View {
  readonly base: { readonly file: Buffer; readonly entries: Entries };
  readonly deleted: ReadonlySet<number>;
  /** By position in the shared index: the replacing entry's bytes (its name empty). */
  readonly replacing: ReadonlyMap<number, Buffer>;
  /** The entries the split index adds, in path order. */
  readonly added: { readonly file: Buffer; readonly entries: Entries; readonly from: number };
}

/** HEAD's trees, read as the small index's cache tree needs them. */
export interface HeadTrees {
  /** HEAD's root tree id. */
  readonly root: string;
  tree(id: string): Promise<readonly TreeRecord[]>;
}
/**
 * The small index's bytes for `paths` (repository paths, as literal pathspecs match them: the path
 * itself and everything below it) from the split index `main` over `shared`, for a checkout whose
 * HEAD has the trees `head`; null when it would hold more than `limit` entries (git reads the
 * whole index then) or the split is not in the form git writes.
 */
export async function statusIndex(
  main: { readonly file: Buffer; readonly parsed: ParsedIndex },
  split: { readonly link: SplitLink; readonly shared: SharedIndex },
  paths: readonly string[],
  head: HeadTrees,
  limit: number,
): Promise<Buffer | null> {
  const { link, shared } = split;
  const own = main.parsed.entries;
  if (link.replaced.length > own.count || link.deleted.some((at) => at >= shared.entries.count)) return null;
  const replacing = new Map<number, Buffer>();
  for (const [k, at] of link.replaced.entries()) {
    if (at >= shared.entries.count) return null;
    replacing.set(at, main.file.subarray(own.start[k], own.end[k]));
  }
  const view: View = {
    base: shared,
    deleted: new Set(link.deleted),
    replacing,
    added: { file: main.file, entries: own, from: link.replaced.length },
  };
  /** Picked entries by where they come from (`s` shared position, `a` own entry), each once. */
  const picked = new Map<string, { name: Buffer; stage: number; bytes: Buffer }>();
  const pick = (key: string, name: Buffer, bytes: Buffer, flags: number) => {
    picked.set(key, { name, stage: (flags >> 12) & 3, bytes });
  };
  /** Picks every live entry whose name is `prefix` (`exact`), or is or begins with it, at most `most`; how many. */
  const collect = (prefix: Buffer, exact: boolean, most: number): number => {
    let found = 0;
    const { file, entries } = view.base;
    for (let at = position(file, entries, prefix); at < entries.count && found < most; at++) {
      const name = nameOf(file, entries, at);
      if (!matches(name, prefix, exact)) break;
      if (view.deleted.has(at)) continue;
      const replaced = view.replacing.get(at);
      const bytes = replaced ? withName(replaced, name) : file.subarray(entries.start[at], entries.end[at]);
      pick(`s${at}`, name, bytes, bytes.readUInt16BE(60));
      found++;
    }
    const added = view.added;
    const first = Math.max(added.from, position(added.file, added.entries, prefix));
    for (let k = first; k < added.entries.count && found < most; k++) {
      const name = nameOf(added.file, added.entries, k);
      if (!matches(name, prefix, exact)) break;
      const bytes = added.file.subarray(added.entries.start[k], added.entries.end[k]);
      pick(`a${k}`, name, bytes, bytes.readUInt16BE(60));
      found++;
    }
    return found;
  };
  for (const path of paths) {
    const name = Buffer.from(path);
    // git's walk goes into every folder whose name begins with a path's bytes (`a.b/` for `a`),
    // and may list it as ignored whole unless the index holds something below it: all of those.
    collect(name, false, Number.POSITIVE_INFINITY);
    // And it looks at every name that begins a path (`a` for `a-b`, as for `a/b`), asking the
    // index whether it is a path or holds one.
    for (let length = 1; length < name.byteLength; length++) {
      if (name[length - 1] === SLASH) continue;
      const leading = name.subarray(0, length);
      collect(leading, true, Number.POSITIVE_INFINITY);
      collect(Buffer.concat([leading, SLASH_BYTES]), false, 1);
    }
    // git reads an ignore or attributes file from the index where the work tree lacks it (deleted,
    // or skip-worktree): those of every folder above the path.
    const folders = [name.subarray(0, 0)];
    for (let at = name.indexOf(SLASH); at !== -1; at = name.indexOf(SLASH, at + 1)) {
      folders.push(name.subarray(0, at + 1));
    }
    for (const folder of folders) {
      for (const file of RULE_FILES) collect(Buffer.concat([folder, file]), true, Number.POSITIVE_INFINITY);
    }
    if (picked.size > limit) return null;
  }
  const pathNames = paths.map((path) => Buffer.from(path));
  /** A folder of HEAD the paths are not in, nor beside (`a.b` for `a`): git may skip it. */
  const besides = (folder: Buffer) =>
    !pathNames.some(
      (path) =>
        startsWith(folder, path) ||
        (startsWith(path, folder) &&
          (path.byteLength === folder.byteLength || path[folder.byteLength] === SLASH)),
    );
  // The entries picked for the paths, sorted, counted below a folder by two searches.
  const names = [...picked.values()].map((entry) => entry.name).sort(Buffer.compare);
  const pickedUnder = (below: Buffer) => {
    const after = Buffer.from(below);
    after[after.byteLength - 1] = SLASH + 1;
    return lowerBound(names, after) - lowerBound(names, below);
  };
  const node = async (name: Buffer, folder: Buffer | null, id: string): Promise<CacheTree> => {
    const children: CacheTree[] = [];
    for (const record of await head.tree(id)) {
      if (record.mode !== TREE_MODE) continue;
      const path = folder ? Buffer.concat([folder, SLASH_BYTES, record.name]) : record.name;
      if (!besides(path)) {
        children.push(await node(record.name, path, record.id));
        continue;
      }
      const below = Buffer.concat([path, SLASH_BYTES]);
      let entryCount = pickedUnder(below);
      // One entry below it at least: the first there is (none of the paths is below it).
      if (entryCount === 0) entryCount = collect(below, false, 1);
      // Nothing of it in the index: no node, git walks HEAD's folder.
      if (entryCount === 0) continue;
      children.push({
        name: record.name,
        entryCount,
        id: Buffer.from(record.id, 'hex'),
        children: [],
        bytes: null,
      });
    }
    return { name, entryCount: -1, id: null, children, bytes: null };
  };
  const tree = await node(Buffer.alloc(0), null, head.root);
  if (picked.size > limit) return null;
  const sorted = [...picked.values()].sort((a, b) => Buffer.compare(a.name, b.name) || a.stage - b.stage);
  const extended = sorted.some((entry) => (entry.bytes.readUInt16BE(60) & FLAG_EXTENDED) !== 0);
  return indexBytes(extended ? 3 : 2, sorted.length, [
    ...sorted.map((entry) => entry.bytes),
    treeExtension(tree),
  ]);
}
/** How many of `sorted` sort before `name`. */
function lowerBound(sorted: readonly Buffer[], name: Buffer): number {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (Buffer.compare(sorted[middle] as Buffer, name) < 0) low = middle + 1;
    else high = middle;
  }
  return low;
}
function startsWith(name: Buffer, prefix: Buffer): boolean {
  return (
    name.byteLength >= prefix.byteLength &&
    name.compare(prefix, 0, prefix.byteLength, 0, prefix.byteLength) === 0
  );
}
function nameOf(file: Buffer, entries: Entries, i: number): Buffer {
  return file.subarray(entries.nameAt[i], entries.nameEnd[i]);
}
/** `name` is `prefix` (exact), or is or begins with it. */
function matches(name: Buffer, prefix: Buffer, exact: boolean): boolean {
  return exact ? name.equals(prefix) : startsWith(name, prefix);
}
/** A replacing entry (its name empty) given `name`: the shared entry's path, as git reads it back. */
function withName(entry: Buffer, name: Buffer): Buffer {
  const flags = entry.readUInt16BE(60);
  const header = (flags & FLAG_EXTENDED) !== 0 ? 64 : 62;
  const out = Buffer.alloc((header + name.byteLength + 8) & ~7);
  entry.copy(out, 0, 0, header);
  out.writeUInt16BE((flags & ~NAME_MASK) | Math.min(name.byteLength, NAME_MASK), 60);
  name.copy(out, header);
  return out;
}
