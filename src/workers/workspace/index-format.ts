/**
 * git's index file as bytes (`Documentation/gitformat-index.txt`, versions 2 and 3): its entries
 * read as columns, an entry written, the cache tree extension read, invalidated along a path and
 * written, and the file put together with its trailing hash. What index-file.ts (one index file)
 * and split-index.ts (a split index: a small file over a shared one) build their updates from.
 */
import { createHash } from 'node:crypto';
import type { BigIntStats } from 'node:fs';

/** What git records of a file in its index entry, each a 32-bit field (larger values cut, as git does). */
export interface EntryStat {
  readonly ctimeSec: number;
  readonly ctimeNsec: number;
  readonly mtimeSec: number;
  readonly mtimeNsec: number;
  readonly dev: number;
  readonly ino: number;
  readonly uid: number;
  readonly gid: number;
  readonly size: number;
}

/** One changed path: its new entry, or null when it is gone. */
export interface IndexUpdate {
  readonly path: string;
  readonly entry: { readonly mode: number; readonly id: string; readonly stat: EntryStat } | null;
}

/**
 * The entries of the index as read, a column each (the kernel tree's index holds 78,000: no object
 * per entry): where each starts and ends in the file, where its path is, its stage, and whether it
 * carries version 3's extended flags (skip-worktree, intent-to-add).
 */
export interface Entries {
  readonly count: number;
  readonly start: Uint32Array;
  readonly end: Uint32Array;
  readonly nameAt: Uint32Array;
  readonly nameEnd: Uint32Array;
  readonly stage: Uint8Array;
  readonly extended: Uint8Array;
}

export interface ParsedIndex {
  readonly version: number;
  readonly entries: Entries;
  /** Extensions kept as they are (the cache tree is rebuilt from `tree`). */
  readonly kept: Buffer[];
  readonly tree: CacheTree | null;
  /** A split index's `link` extension (its shared index, what of it is deleted and replaced); null when whole. */
  readonly link: Buffer | null;
}

const SIGNATURE = 0x44495243; // "DIRC"
export const HASH_BYTES = 20;
export const FLAG_EXTENDED = 0x4000;
const FLAG_ASSUME_VALID = 0x8000;
export const NAME_MASK = 0xfff;

/**
 * Extensions written back unchanged: the resolve-undo record names paths, not positions. Every
 * other optional one (untracked cache, file-system monitor, offsets of entries) is dropped, which
 * git allows: it rebuilds what it wants of them.
 */
const KEPT_EXTENSIONS = new Set(['REUC']);

/**
 * The index file's bytes as entries and extensions; null for a form this reader leaves to git.
 * `withTree` false: the cache tree is not read (a reader that only copies entries).
 */
export function parseIndex(file: Buffer, withTree = true): ParsedIndex | null {
  if (file.byteLength < 12 + HASH_BYTES || file.readUInt32BE(0) !== SIGNATURE) return null;
  const version = file.readUInt32BE(4);
  if (version !== 2 && version !== 3) return null;
  const body = file.subarray(0, file.byteLength - HASH_BYTES);
  const hash = createHash('sha1').update(body).digest();
  if (!hash.equals(file.subarray(file.byteLength - HASH_BYTES))) return null;
  const count = file.readUInt32BE(8);
  const entries: Entries = {
    count,
    start: new Uint32Array(count),
    end: new Uint32Array(count),
    nameAt: new Uint32Array(count),
    nameEnd: new Uint32Array(count),
    stage: new Uint8Array(count),
    extended: new Uint8Array(count),
  };
  let at = 12;
  for (let i = 0; i < count; i++) {
    if (at + 62 > body.byteLength) return null;
    const flags = file.readUInt16BE(at + 60);
    const extended = (flags & FLAG_EXTENDED) !== 0;
    if (extended && version < 3) return null;
    const nameAt = at + (extended ? 64 : 62);
    const short = flags & NAME_MASK;
    const end = short < NAME_MASK ? nameAt + short : file.indexOf(0, nameAt);
    if (end < nameAt || end >= body.byteLength || file[end] !== 0) return null;
    // Padded with NULs to a multiple of 8 bytes from the entry's start.
    const next = at + ((nameAt - at + (end - nameAt) + 8) & ~7);
    entries.start[i] = at;
    entries.end[i] = next;
    entries.nameAt[i] = nameAt;
    entries.nameEnd[i] = end;
    entries.stage[i] = (flags >> 12) & 3;
    // Assume-unchanged (git keeps such an entry as it is) counts with the extended flags.
    const assumeValid = (flags & FLAG_ASSUME_VALID) !== 0;
    entries.extended[i] = assumeValid || (extended && file.readUInt16BE(at + 62) !== 0) ? 1 : 0;
    at = next;
  }
  const kept: Buffer[] = [];
  let tree: CacheTree | null = null;
  let link: Buffer | null = null;
  while (at < body.byteLength) {
    if (at + 8 > body.byteLength) return null;
    const signature = file.subarray(at, at + 4).toString('latin1');
    const size = file.readUInt32BE(at + 4);
    const data = file.subarray(at + 8, at + 8 + size);
    if (data.byteLength !== size) return null;
    // A lower-case first letter marks an extension a reader must understand: of those, the split
    // index's link alone is (split-index.ts); a sparse index is left to git.
    if (signature === 'link') link = data;
    else if (!/^[A-Z]/.test(signature)) return null;
    else if (signature === 'TREE') tree = withTree ? parseCacheTree(data) : null;
    else if (KEPT_EXTENSIONS.has(signature)) kept.push(file.subarray(at, at + 8 + size));
    at += 8 + size;
  }
  return { version, entries, kept, tree, link };
}

/** A node of the cache tree extension: a folder's tree id while still valid (entryCount ≥ 0). */
export interface CacheTree {
  readonly name: Buffer;
  entryCount: number;
  readonly id: Buffer | null;
  readonly children: CacheTree[];
  /** The node and all below it as read; null once invalidate() changed something there. */
  bytes: Buffer | null;
}

/**
 * The cache tree's nodes, each `name NUL count SP subtrees LF [id]` followed by its subtrees
 * (the kernel tree's has 5,000: the numbers read from the bytes, no string made).
 */
function parseCacheTree(data: Buffer): CacheTree | null {
  let at = 0;
  /** The decimal number at `at` (a leading `-` for an invalid node) up to `end`; null if none. */
  const number = (end: number): number | null => {
    const negative = data[at] === 0x2d;
    if (negative) at += 1;
    let value = 0;
    const first = at;
    for (; data[at] !== end; at++) {
      const digit = (data[at] ?? 0) - 0x30;
      if (digit < 0 || digit > 9 || at >= data.byteLength) return null;
      value = value * 10 + digit;
    }
    if (at === first) return null;
    at += 1;
    return negative ? -value : value;
  };
  const node = (): CacheTree | null => {
    const start = at;
    const nul = data.indexOf(0, at);
    if (nul < 0) return null;
    at = nul + 1;
    const entryCount = number(0x20);
    const subtreeCount = entryCount === null ? null : number(0x0a);
    if (entryCount === null || subtreeCount === null) return null;
    const id = entryCount >= 0 ? data.subarray(at, at + HASH_BYTES) : null;
    if (id) at += HASH_BYTES;
    const children: CacheTree[] = [];
    for (let i = 0; i < subtreeCount; i++) {
      const child = node();
      if (!child) return null;
      children.push(child);
    }
    return { name: data.subarray(start, nul), entryCount, id, children, bytes: data.subarray(start, at) };
  };
  const root = node();
  return root && at === data.byteLength ? root : null;
}

/** The cache tree's nodes along `path` marked invalid, and a folder at `path` itself dropped (git's own rule). */
export function invalidate(root: CacheTree, path: string): void {
  let node = root;
  const parts = path.split('/');
  for (const [i, part] of parts.entries()) {
    node.entryCount = -1;
    node.bytes = null;
    const name = Buffer.from(part);
    const at = node.children.findIndex((child) => child.name.equals(name));
    if (at < 0) return;
    if (i === parts.length - 1) {
      node.children.splice(at, 1);
      return;
    }
    node = node.children[at] as CacheTree;
  }
}

/** Nodes as read go out as their bytes, whole subtrees at a time; only the invalidated are written anew. */
function cacheTreeBytes(node: CacheTree, out: Buffer[]): void {
  if (node.bytes) {
    out.push(node.bytes);
    return;
  }
  out.push(node.name, Buffer.from(`\0${node.entryCount} ${node.children.length}\n`, 'latin1'));
  if (node.entryCount >= 0 && node.id) out.push(node.id);
  for (const child of node.children) cacheTreeBytes(child, out);
}

/** An entry as version 2 writes it (no extended flags), padded with NULs to 8 bytes. */
export function entryBytes(path: Buffer, mode: number, id: string, stat: EntryStat): Buffer {
  const size = (62 + path.byteLength + 8) & ~7;
  const entry = Buffer.alloc(size);
  const fields = [
    stat.ctimeSec,
    stat.ctimeNsec,
    stat.mtimeSec,
    stat.mtimeNsec,
    stat.dev,
    stat.ino,
    mode,
    stat.uid,
    stat.gid,
    stat.size,
  ];
  for (const [i, value] of fields.entries()) entry.writeUInt32BE(value >>> 0, i * 4);
  entry.write(id, 40, 'hex');
  entry.writeUInt16BE(Math.min(path.byteLength, NAME_MASK), 60);
  path.copy(entry, 62);
  return entry;
}

/** Entry `i`'s path compared with `path`: below 0 when it sorts before. */
export function comparePath(file: Buffer, entries: Entries, i: number, path: Buffer): number {
  return file.compare(path, 0, path.byteLength, entries.nameAt[i], entries.nameEnd[i]);
}

export function pathIs(file: Buffer, entries: Entries, i: number, path: Buffer): boolean {
  return i < entries.count && comparePath(file, entries, i, path) === 0;
}

export function pathOf(file: Buffer, entries: Entries, i: number): string {
  return file.toString('utf8', entries.nameAt[i], entries.nameEnd[i]);
}

/** Where `path` is, or would go, among the entries (sorted by path bytes, then stage). */
export function position(file: Buffer, entries: Entries, path: Buffer): number {
  let low = 0;
  let high = entries.count;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (comparePath(file, entries, middle, path) < 0) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** The stat fields git keeps of a file, from an lstat with nanosecond times. */
export function entryStat(info: BigIntStats): EntryStat {
  const sec = (ns: bigint) => Number((ns / 1_000_000_000n) & 0xffffffffn);
  const nsec = (ns: bigint) => Number(ns % 1_000_000_000n);
  const low = (value: bigint) => Number(value & 0xffffffffn);
  return {
    ctimeSec: sec(info.ctimeNs),
    ctimeNsec: nsec(info.ctimeNs),
    mtimeSec: sec(info.mtimeNs),
    mtimeNsec: nsec(info.mtimeNs),
    dev: low(info.dev),
    ino: low(info.ino),
    uid: low(info.uid),
    gid: low(info.gid),
    size: low(info.size),
  };
}

/** The index file: header, `chunks` (entries, then extensions), and the SHA-1 of it all. */
export function indexBytes(version: number, count: number, chunks: readonly Buffer[]): Buffer {
  const header = Buffer.alloc(12);
  header.writeUInt32BE(SIGNATURE, 0);
  header.writeUInt32BE(version, 4);
  header.writeUInt32BE(count, 8);
  const hash = createHash('sha1').update(header);
  for (const chunk of chunks) hash.update(chunk);
  return Buffer.concat([header, ...chunks, hash.digest()]);
}

/** The cache tree extension as `tree` holds it now. */
export function treeExtension(tree: CacheTree): Buffer {
  const out: Buffer[] = [];
  cacheTreeBytes(tree, out);
  return extension('TREE', Buffer.concat(out));
}

/** An extension as the index holds it: its signature, its size, its data. */
export function extension(signature: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.write(signature, 0, 'latin1');
  head.writeUInt32BE(data.byteLength, 4);
  return Buffer.concat([head, data]);
}

/** Entries whose file may have changed unseen since the index was written (index-file.ts decides). */
export interface RacyCheck {
  /** The second the index was written: entries modified then or later are looked at. */
  readonly sec: number;
  /** True when the entry at `start` of `file`, for the path `name` (its bytes), must be written with size 0. */
  readonly changed: (file: Buffer, start: number, name: Buffer) => boolean;
}

/** A copy of `entry` with size 0 (racily clean): git compares its content with the file's next time. */
export function sizeZero(entry: Buffer): Buffer {
  const out = Buffer.from(entry);
  out.writeUInt32BE(0, 36);
  return out;
}
