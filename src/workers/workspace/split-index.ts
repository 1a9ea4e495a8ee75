/**
 * A split index (git's core.splitIndex; `Documentation/gitformat-index.txt`, "Split index"): the
 * checkout's index file holds only what differs from a shared index beside it
 * (`sharedindex.<its hash>`, written by git and never changed), and the `link` extension names
 * that file and marks, by position in it, the entries deleted and the entries replaced, in two
 * EWAH bitmaps. The replacing entries come first among the file's entries, in position order
 * and with empty names (they keep the shared entry's); the entries added follow, sorted. The
 * warm checkouts of a large tree use one (checkout-pool.ts), so a write is of the few entries an
 * attempt changed, not of the kernel tree's whole 8 MB. updatedSplitIndex() moves such an index
 * as updatedIndex() (index-file.ts) moves a whole one; pure, the files read and written by the caller.
 */
import {
  type Entries,
  entryBytes,
  extension,
  HASH_BYTES,
  type IndexUpdate,
  indexBytes,
  invalidate,
  NAME_MASK,
  type ParsedIndex,
  pathIs,
  position,
  type RacyCheck,
  sizeZero,
  treeExtension,
} from './index-format.js';

/** What the `link` extension says: the shared index, and its positions deleted and replaced (ascending). */
export interface SplitLink {
  readonly base: Buffer;
  readonly deleted: readonly number[];
  readonly replaced: readonly number[];
}

/** The shared index as read and checked (index-file.ts keeps the few in use). */
export interface SharedIndex {
  readonly file: Buffer;
  readonly entries: Entries;
  /** The latest modification second its entries record: none racy against an index written later. */
  readonly newestSec: number;
}

export function sharedIndexOf(file: Buffer, entries: Entries): SharedIndex {
  let newestSec = 0;
  for (let i = 0; i < entries.count; i++) {
    newestSec = Math.max(newestSec, file.readUInt32BE((entries.start[i] as number) + 8));
  }
  return { file, entries, newestSec };
}

/**
 * git writes a new shared index once the entries added on top of it pass this share of the index
 * (splitIndex.maxPercentChange, 20 by default; replacing entries do not count): past it, the
 * update is left to git, which does so.
 */
export const MAX_PERCENT_CHANGE = 20;

/** The `link` extension's data; null when it is not in the form git writes. */
export function parseLink(data: Buffer): SplitLink | null {
  if (data.byteLength < HASH_BYTES) return null;
  const base = data.subarray(0, HASH_BYTES);
  // An index that names no bitmaps has neither deletions nor replacements.
  if (data.byteLength === HASH_BYTES) return { base, deleted: [], replaced: [] };
  const deleted = ewahPositions(data, HASH_BYTES);
  const replaced = deleted && ewahPositions(data, deleted.end);
  if (!deleted || !replaced || replaced.end !== data.byteLength) return null;
  return { base, deleted: deleted.positions, replaced: replaced.positions };
}

export function linkExtension(link: SplitLink): Buffer {
  return extension('link', Buffer.concat([link.base, ewahBytes(link.deleted), ewahBytes(link.replaced)]));
}

/** Bits in a bitmap longer than this are not an index's (git's own bound on entries is lower). */
const MAX_BITS = 1 << 30;

/**
 * The set bits of the EWAH bitmap at `at` (git's ewah/ewah_io.c: its size in bits, the number of
 * 64-bit words, the words, the position of the last marker word, all big-endian), ascending, and
 * where the bitmap ends; null when it runs past the data.
 * Each marker word holds a bit, a count of words all of that bit, and a count of literal words
 * that follow it, whose bits are read lowest first.
 */
export function ewahPositions(data: Buffer, at: number): { positions: number[]; end: number } | null {
  if (at + 8 > data.byteLength) return null;
  const words = data.readUInt32BE(at + 4);
  const first = at + 8;
  const end = first + words * 8 + 4;
  if (end > data.byteLength) return null;
  const positions: number[] = [];
  let bit = 0;
  let word = 0;
  const high = (i: number) => data.readUInt32BE(first + i * 8);
  const low = (i: number) => data.readUInt32BE(first + i * 8 + 4);
  while (word < words) {
    const marker = { high: high(word), low: low(word) };
    const run = (marker.low >>> 1) + (marker.high & 1) * 2 ** 31;
    const literals = marker.high >>> 1;
    if (bit + (run + literals) * 64 > MAX_BITS) return null;
    if (marker.low & 1) for (let k = 0; k < run * 64; k++) positions.push(bit + k);
    bit += run * 64;
    word += 1;
    for (let k = 0; k < literals; k++, word++, bit += 64) {
      if (word >= words) return null;
      for (const [half, offset] of [
        [low(word), 0],
        [high(word), 32],
      ] as const) {
        for (let c = 0; c < 32; c++) if ((half >>> c) & 1) positions.push(bit + offset + c);
      }
    }
  }
  return { positions, end };
}

/** The EWAH bitmap of `positions` (ascending): runs of empty words between literal words. */
export function ewahBytes(positions: readonly number[]): Buffer {
  /** Each word that has a bit set: its number and its two halves. */
  const literal: { word: number; high: number; low: number }[] = [];
  for (const bitAt of positions) {
    const word = Math.floor(bitAt / 64);
    const c = bitAt % 64;
    let last = literal.at(-1);
    if (last?.word !== word) {
      last = { word, high: 0, low: 0 };
      literal.push(last);
    }
    if (c < 32) last.low = (last.low | (1 << c)) >>> 0;
    else last.high = (last.high | (1 << (c - 32))) >>> 0;
  }
  const out: number[] = [];
  let marker = 0;
  let next = 0;
  for (let i = 0; i < literal.length; ) {
    let j = i + 1;
    while (j < literal.length && literal[j]?.word === (literal[j - 1]?.word ?? 0) + 1) j++;
    const run = (literal[i]?.word ?? 0) - next;
    const count = j - i;
    marker = out.length / 2;
    out.push(((run / 2 ** 31) & 1) | (count << 1), ((run % 2 ** 31) << 1) >>> 0);
    for (const word of literal.slice(i, j)) out.push(word.high, word.low);
    next = (literal[j - 1]?.word ?? 0) + 1;
    i = j;
  }
  // An empty bitmap is one marker word of nothing, as git's ewah_new() makes it.
  if (out.length === 0) out.push(0, 0);
  const bytes = Buffer.alloc(12 + out.length * 4);
  bytes.writeUInt32BE(positions.length > 0 ? (positions.at(-1) ?? 0) + 1 : 0, 0);
  bytes.writeUInt32BE(out.length / 2, 4);
  for (const [i, half] of out.entries()) bytes.writeUInt32BE(half, 8 + i * 4);
  bytes.writeUInt32BE(marker, 8 + out.length * 4);
  return bytes;
}

const EMPTY = Buffer.alloc(0);

/**
 * The new index file of a split index: `updates` applied as `git update-index --add --remove
 * --replace` would (an entry of the shared index replaced or deleted, a new path added), the
 * racily clean entries written with size 0 (a shared one by a replacing entry), the cache tree
 * invalidated along every changed path, the shared index left as it is. A new file takes the
 * place of an entry at one of its folders and of the entries below it (--replace). Null when git
 * must decide: an unmerged or flagged entry at a changed path, an index not in the form git
 * writes, or more entries added on top of the shared index than MAX_PERCENT_CHANGE (git then
 * writes a new shared index).
 */
export function updatedSplitIndex(
  main: Buffer,
  parsed: ParsedIndex,
  link: SplitLink,
  shared: SharedIndex,
  updates: readonly IndexUpdate[],
  racy: RacyCheck,
): Buffer | null {
  const own = parsed.entries;
  const base = shared.entries;
  const plain = (entries: Entries, i: number) => entries.stage[i] === 0 && entries.extended[i] === 0;
  const deleted = new Set(link.deleted);
  if (link.replaced.length > own.count || link.deleted.some((at) => at >= base.count)) return null;
  /** By position in the shared index: the entry that replaces it, its name empty. */
  const replacing = new Map<number, Buffer>();
  for (const [k, at] of link.replaced.entries()) {
    if (at >= base.count || deleted.has(at) || own.nameEnd[k] !== own.nameAt[k] || !plain(own, k))
      return null;
    replacing.set(at, main.subarray(own.start[k], own.end[k]));
  }
  /** The entries added, by path (latin1, so the strings sort as git sorts the bytes). */
  const added = new Map<string, Buffer>();
  for (let k = link.replaced.length; k < own.count; k++) {
    if (own.nameEnd[k] === own.nameAt[k] || !plain(own, k)) return null;
    added.set(
      main.toString('latin1', own.nameAt[k], own.nameEnd[k]),
      main.subarray(own.start[k], own.end[k]),
    );
  }
  const sharedAt = (path: Buffer): number | null => {
    const at = position(shared.file, base, path);
    return pathIs(shared.file, base, at, path) ? at : null;
  };
  /** Paths taken away, for the cache tree. */
  const gone: string[] = [];
  /** Takes the live entry at `path` away (none there is fine); false when it is not a plain one (git decides). */
  const remove = (path: Buffer): boolean => {
    const key = path.toString('latin1');
    if (added.delete(key)) {
      gone.push(path.toString());
      return true;
    }
    const at = sharedAt(path);
    if (at === null || deleted.has(at)) return true;
    if (!plain(base, at)) return false;
    replacing.delete(at);
    deleted.add(at);
    gone.push(path.toString());
    return true;
  };
  /**
   * --replace: a new file takes the place of an entry at one of its folders, and of the entries
   * below its own path. False when one of those is not a plain entry.
   */
  const makeRoom = (path: Buffer): boolean => {
    for (let slash = path.indexOf(0x2f); slash !== -1; slash = path.indexOf(0x2f, slash + 1)) {
      if (!remove(path.subarray(0, slash))) return false;
    }
    const below = Buffer.concat([path, Buffer.from('/')]);
    for (let at = position(shared.file, base, below); at < base.count; at++) {
      const nameAt = base.nameAt[at] as number;
      const long = (base.nameEnd[at] as number) - nameAt >= below.byteLength;
      if (!long || shared.file.compare(below, 0, below.byteLength, nameAt, nameAt + below.byteLength) !== 0)
        break;
      if (!remove(Buffer.from(shared.file.subarray(nameAt, base.nameEnd[at])))) return false;
    }
    const prefix = below.toString('latin1');
    for (const name of [...added.keys()]) {
      if (name.startsWith(prefix)) remove(Buffer.from(name, 'latin1'));
    }
    return true;
  };
  const touched = new Set<string>();
  for (const update of updates) {
    const path = Buffer.from(update.path);
    const key = path.toString('latin1');
    touched.add(key);
    const entry = update.entry;
    if (!entry) {
      if (!remove(path)) return null;
      continue;
    }
    if (added.has(key)) {
      added.set(key, entryBytes(path, entry.mode, entry.id, entry.stat));
      continue;
    }
    const at = sharedAt(path);
    if (at !== null && (!plain(base, at) || pathIs(shared.file, base, at + 1, path))) return null;
    if (at !== null && !deleted.has(at)) {
      replacing.set(at, entryBytes(EMPTY, entry.mode, entry.id, entry.stat));
      continue;
    }
    if (!makeRoom(path)) return null;
    if (at === null) added.set(key, entryBytes(path, entry.mode, entry.id, entry.stat));
    else {
      deleted.delete(at);
      replacing.set(at, entryBytes(EMPTY, entry.mode, entry.id, entry.stat));
    }
  }
  // Racily clean entries not changed here; one only in the shared index gets a replacing entry.
  const mtimeSec = (file: Buffer, start: number) => file.readUInt32BE(start + 8);
  const nameAt = (at: number) => shared.file.subarray(base.nameAt[at], base.nameEnd[at]);
  const untouched = (name: Buffer) => !touched.has(name.toString('latin1'));
  for (let at = 0; shared.newestSec >= racy.sec && at < base.count; at++) {
    const start = base.start[at] as number;
    if (mtimeSec(shared.file, start) < racy.sec || deleted.has(at) || replacing.has(at)) continue;
    const name = nameAt(at);
    if (!untouched(name) || !racy.changed(shared.file, start, name)) continue;
    if (!plain(base, at)) return null;
    const entry = sizeZero(shared.file.subarray(start, start + 64));
    entry.writeUInt16BE(entry.readUInt16BE(60) & ~NAME_MASK, 60);
    entry.fill(0, 62);
    replacing.set(at, entry);
  }
  for (const [at, bytes] of replacing) {
    const name = nameAt(at);
    if (mtimeSec(bytes, 0) >= racy.sec && untouched(name) && racy.changed(bytes, 0, name)) {
      replacing.set(at, sizeZero(bytes));
    }
  }
  for (const [key, bytes] of added) {
    if (touched.has(key) || mtimeSec(bytes, 0) < racy.sec) continue;
    if (racy.changed(bytes, 0, Buffer.from(key, 'latin1'))) added.set(key, sizeZero(bytes));
  }
  const total = base.count - deleted.size + added.size;
  if (added.size * 100 > MAX_PERCENT_CHANGE * total) return null;
  const replaced = [...replacing.keys()].sort((a, b) => a - b);
  const entries = [
    ...replaced.map((at) => replacing.get(at) as Buffer),
    ...[...added.keys()].sort().map((key) => added.get(key) as Buffer),
  ];
  const chunks = [linkExtension({ base: link.base, deleted: [...deleted].sort((a, b) => a - b), replaced })];
  if (parsed.tree) {
    for (const path of [...updates.map((update) => update.path), ...gone]) invalidate(parsed.tree, path);
    chunks.push(treeExtension(parsed.tree));
  }
  return indexBytes(parsed.version, entries.length, [...entries, ...chunks, ...parsed.kept]);
}
