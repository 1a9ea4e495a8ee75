/**
 * git's pack files, written and read in-process. An attempt's commit writes ten or so objects (the
 * work's blobs, a tree per folder along each changed path, two commits); as loose objects that is a
 * new file each, and a new file is the dearest file call on a busy host (docs/BENCHMARKS.md,
 * "File calls").
 * Written together they make one pack and its index: two files whatever the count.
 *
 * The packs written here hold every object whole (no deltas) and are named by their checksum, as
 * git names its own. The reader finds an object in any version-2 index (git's since 1.5.2) and
 * follows deltas, so git's own packs (a clone's, a repack's) read too. Every answer it cannot give
 * (an index of another version, a pack that does not match its index) is a miss, and the caller
 * asks git.
 */
import { createHash } from 'node:crypto';
import {
  closeSync,
  fstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { deflateSync, inflateSync } from 'node:zlib';

/** An object to pack: its id (`objectId()`), type and body. */
export interface PackObject {
  readonly id: string;
  readonly type: string;
  readonly body: Buffer;
}

const TYPE_CODES: Readonly<Record<string, number>> = { commit: 1, tree: 2, blob: 3, tag: 4 };
const TYPE_NAMES = ['', 'commit', 'tree', 'blob', 'tag'] as const;
const OFS_DELTA = 6;
const REF_DELTA = 7;

const INDEX_MAGIC = Buffer.from([0xff, 0x74, 0x4f, 0x63]);
const FANOUT_BYTES = 256 * 4;
const INDEX_HEADER = 8 + FANOUT_BYTES;

/** An offset from here up takes the index's 8-byte table, which the writer does not write. */
const LARGE_OFFSET = 0x80000000;

/** A delta chain longer than git ever writes (its default depth is 50): a corrupt pack. */
const MAX_DELTA_DEPTH = 1_000;

/** CRC-32 (the zlib one) by table: `zlib.crc32` is not in Node before 20.15. */
const CRC_TABLE = Uint32Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

export function crc32(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of bytes) crc = (CRC_TABLE[(crc ^ byte) & 0xff] ?? 0) ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

/** A pack's type-and-size header: 3 bits of type, the size in 4 bits then 7 at a time. */
function objectHeader(code: number, size: number): Buffer {
  const bytes: number[] = [];
  let byte = (code << 4) | (size % 16);
  let rest = Math.floor(size / 16);
  while (rest > 0) {
    bytes.push(byte | 0x80);
    byte = rest % 128;
    rest = Math.floor(rest / 128);
  }
  bytes.push(byte);
  return Buffer.from(bytes);
}

export interface PackBytes {
  /** The pack's checksum in hex: its file names are `pack-<name>.pack` and `.idx`. */
  readonly name: string;
  readonly pack: Buffer;
  readonly index: Buffer;
}

/**
 * A pack (version 2) holding `objects` whole, each once, and its index (version 2); null when it
 * would be too large for the index's 4-byte offsets (the caller writes loose objects instead).
 */
export function packBytes(objects: readonly PackObject[]): PackBytes | null {
  const unique = [...new Map(objects.map((object) => [object.id, object])).values()];
  const header = Buffer.alloc(12);
  header.write('PACK', 0, 'latin1');
  header.writeUInt32BE(2, 4);
  header.writeUInt32BE(unique.length, 8);
  const parts: Buffer[] = [header];
  const placed: { id: Buffer; offset: number; crc: number }[] = [];
  let offset = header.length;
  for (const object of unique) {
    const code = TYPE_CODES[object.type];
    if (code === undefined) throw new Error(`${object.type}: not an object type`);
    const entry = Buffer.concat([objectHeader(code, object.body.length), deflateSync(object.body)]);
    placed.push({ id: Buffer.from(object.id, 'hex'), offset, crc: crc32(entry) });
    parts.push(entry);
    offset += entry.length;
    if (offset >= LARGE_OFFSET) return null;
  }
  const body = Buffer.concat(parts);
  const checksum = createHash('sha1').update(body).digest();
  const pack = Buffer.concat([body, checksum]);
  placed.sort((a, b) => Buffer.compare(a.id, b.id));
  const fanout = Buffer.alloc(FANOUT_BYTES);
  for (let byte = 0, at = 0; byte < 256; byte++) {
    while (at < placed.length && (placed[at]?.id[0] ?? 0) <= byte) at++;
    fanout.writeUInt32BE(at, byte * 4);
  }
  const words = (values: readonly number[]) => {
    const out = Buffer.alloc(values.length * 4);
    for (const [i, value] of values.entries()) out.writeUInt32BE(value, i * 4);
    return out;
  };
  const indexBody = Buffer.concat([
    INDEX_MAGIC,
    words([2]),
    fanout,
    ...placed.map((entry) => entry.id),
    words(placed.map((entry) => entry.crc)),
    words(placed.map((entry) => entry.offset)),
    checksum,
  ]);
  const index = Buffer.concat([indexBody, createHash('sha1').update(indexBody).digest()]);
  return { name: checksum.toString('hex'), pack, index };
}

/**
 * Writes `objects` as one pack into the object store `objects` (a repository's `objects` folder),
 * as git's index-pack does: both files beside it first, then the pack and last its index moved
 * into place, so git never sees an index whose pack is missing. False (nothing written) when the
 * objects are too large for one small pack.
 */
export function writePack(objectsDir: string, objects: readonly PackObject[]): boolean {
  const bytes = packBytes(objects);
  if (!bytes) return false;
  const folder = join(objectsDir, 'pack');
  mkdirSync(folder, { recursive: true });
  // Named as git names its own (no `.pack`/`.idx` ending), so git never takes a half-written pair
  // for a pack.
  const unique = `flotilla_${process.pid}_${Math.random().toString(36).slice(2)}`;
  const packFile = join(folder, `tmp_pack_${unique}`);
  const indexFile = join(folder, `tmp_idx_${unique}`);
  try {
    writeFileSync(packFile, bytes.pack, { mode: 0o444, flag: 'wx' });
    writeFileSync(indexFile, bytes.index, { mode: 0o444, flag: 'wx' });
    renameSync(packFile, join(folder, `pack-${bytes.name}.pack`));
    renameSync(indexFile, join(folder, `pack-${bytes.name}.idx`));
  } finally {
    rmSync(packFile, { force: true });
    rmSync(indexFile, { force: true });
  }
  forgetPacks(objectsDir);
  return true;
}

/** One pack's index, read once: the sorted ids and where each object starts. */
interface PackIndex {
  readonly packPath: string;
  readonly count: number;
  readonly fanout: Uint32Array;
  readonly ids: Buffer;
  readonly offsets: readonly number[];
  /** The offsets in order, to find where an object's data ends (the next one starts). */
  readonly sortedOffsets: Float64Array;
  /** Where the objects end: the pack's size less its checksum. */
  readonly dataEnd: number;
}

/** The packs of one object store, by index file name; listed again when a lookup misses. */
interface StorePacks {
  listing: string;
  /** This process wrote a pack there since the listing. */
  stale: boolean;
  packs: Map<string, PackIndex | null>;
}

/**
 * The stores read lately, the latest last. A host reads a few (its mission repos and their caches);
 * more than this and the one read longest ago is forgotten (its indexes are memory: 28 bytes an
 * object, 2.5 MB for the kernel tree).
 */
const stores = new Map<string, StorePacks>();
const STORES_KEPT = 16;

/** After this process wrote a pack into `objectsDir`: the next lookup lists the folder again. */
function forgetPacks(objectsDir: string): void {
  const known = stores.get(objectsDir);
  if (known) known.stale = true;
}

/**
 * An index larger than this (about 2.4 million objects: a long history's whole pack) is not read:
 * its arrays would take the host hundreds of MB and its thread a long sort. git answers for it.
 */
const MAX_INDEX_BYTES = 64 * 1024 * 1024;

/** The parsed index at `path` (version 2 only), with its pack's size; null when it is not one. */
function readPackIndex(path: string): PackIndex | null {
  let file: Buffer;
  let packSize: number;
  const packPath = `${path.slice(0, -'.idx'.length)}.pack`;
  try {
    if (statSync(path).size > MAX_INDEX_BYTES) return null;
    file = readFileSync(path);
    const fd = openSync(packPath, 'r');
    try {
      packSize = fstatSync(fd).size;
    } finally {
      closeSync(fd);
    }
  } catch {
    return null;
  }
  if (
    file.length < INDEX_HEADER + 40 ||
    !file.subarray(0, 4).equals(INDEX_MAGIC) ||
    file.readUInt32BE(4) !== 2
  ) {
    return null;
  }
  const fanout = new Uint32Array(256);
  for (let i = 0; i < 256; i++) fanout[i] = file.readUInt32BE(8 + i * 4);
  const count = fanout[255] ?? 0;
  const idsAt = INDEX_HEADER;
  const offsetsAt = idsAt + count * 24;
  const largeAt = offsetsAt + count * 4;
  if (file.length < largeAt + 40) return null;
  const offsets: number[] = new Array(count);
  for (let i = 0; i < count; i++) {
    const small = file.readUInt32BE(offsetsAt + i * 4);
    if (small < LARGE_OFFSET) {
      offsets[i] = small;
      continue;
    }
    const at = largeAt + (small - LARGE_OFFSET) * 8;
    if (file.length < at + 8 + 40) return null;
    offsets[i] = Number(file.readBigUInt64BE(at));
  }
  const sortedOffsets = Float64Array.from(offsets).sort();
  return {
    packPath,
    count,
    fanout,
    ids: file.subarray(idsAt, idsAt + count * 20),
    offsets,
    sortedOffsets,
    dataEnd: packSize - 20,
  };
}

/** The packs of `objectsDir` as its folder lists them now; `refresh` lists it again. */
function packsOf(objectsDir: string, refresh: boolean): StorePacks {
  let known = stores.get(objectsDir);
  if (known) {
    stores.delete(objectsDir);
    stores.set(objectsDir, known);
  }
  if (known && !refresh && !known.stale) return known;
  let names: string[];
  try {
    names = readdirSync(join(objectsDir, 'pack')).filter(
      (name) => name.startsWith('pack-') && name.endsWith('.idx'),
    );
  } catch {
    names = [];
  }
  names.sort();
  const listing = names.join('\n');
  if (known && known.listing === listing) {
    known.stale = false;
    return known;
  }
  const packs = new Map<string, PackIndex | null>();
  for (const name of names) {
    packs.set(name, known?.packs.get(name) ?? readPackIndex(join(objectsDir, 'pack', name)));
  }
  known = { listing, stale: false, packs };
  stores.set(objectsDir, known);
  for (const oldest of stores.keys()) {
    if (stores.size <= STORES_KEPT) break;
    stores.delete(oldest);
  }
  return known;
}

/** Where `id` (20 bytes) is in `index`: its position, or -1. */
function positionOf(index: PackIndex, id: Buffer): number {
  const first = id[0] ?? 0;
  let low = first === 0 ? 0 : (index.fanout[first - 1] ?? 0);
  let high = index.fanout[first] ?? 0;
  while (low < high) {
    const middle = (low + high) >>> 1;
    // The index's id at `middle` against `id`.
    const order = index.ids.compare(id, 0, 20, middle * 20, middle * 20 + 20);
    if (order === 0) return middle;
    if (order > 0) high = middle;
    else low = middle + 1;
  }
  return -1;
}

/**
 * The pack files one read has open: a delta chain reads one pack many times. Closed when the read
 * ends, so a pack a repack removed is not held on disk by this process.
 */
class OpenPacks {
  private readonly open = new Map<string, number>();

  fd(path: string): number {
    let fd = this.open.get(path);
    if (fd === undefined) {
      fd = openSync(path, 'r');
      this.open.set(path, fd);
    }
    return fd;
  }

  close(): void {
    for (const fd of this.open.values()) closeSync(fd);
    this.open.clear();
  }
}

/** The bytes of `pack` from `start` up to `end`. */
function readRange(files: OpenPacks, pack: PackIndex, start: number, end: number): Buffer {
  const fd = files.fd(pack.packPath);
  const out = Buffer.allocUnsafe(end - start);
  let done = 0;
  while (done < out.length) {
    const read = readSync(fd, out, done, out.length - done, start + done);
    if (read === 0) throw new Error(`${pack.packPath}: shorter than its index says`);
    done += read;
  }
  return out;
}

/** Where the object at `offset` ends: the next object's start, or the end of the objects. */
function endOf(pack: PackIndex, offset: number): number {
  const sorted = pack.sortedOffsets;
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if ((sorted[middle] ?? 0) <= offset) low = middle + 1;
    else high = middle;
  }
  return low < sorted.length ? (sorted[low] ?? pack.dataEnd) : pack.dataEnd;
}

interface Unpacked {
  readonly code: number;
  readonly body: Buffer;
}

/** The object at `offset` of `pack`, its deltas applied; `lookup` finds a REF_DELTA's base. */
function unpackAt(
  files: OpenPacks,
  pack: PackIndex,
  offset: number,
  lookup: (id: string) => Unpacked | null,
  depth = 0,
): Unpacked {
  if (depth > MAX_DELTA_DEPTH) throw new Error(`${pack.packPath}: a delta chain without end`);
  const raw = readRange(files, pack, offset, endOf(pack, offset));
  let at = 0;
  let byte = raw[at++] ?? 0;
  const code = (byte >> 4) & 7;
  let size = byte & 15;
  for (let shift = 16; byte & 0x80; shift *= 128) {
    byte = raw[at++] ?? 0;
    size += (byte & 0x7f) * shift;
  }
  if (code === OFS_DELTA) {
    byte = raw[at++] ?? 0;
    let back = byte & 0x7f;
    while (byte & 0x80) {
      byte = raw[at++] ?? 0;
      back = (back + 1) * 128 + (byte & 0x7f);
    }
    const base = unpackAt(files, pack, offset - back, lookup, depth + 1);
    return { code: base.code, body: applyDelta(base.body, inflated(raw.subarray(at), size)) };
  }
  if (code === REF_DELTA) {
    const base = lookup(raw.subarray(at, at + 20).toString('hex'));
    if (!base) throw new Error(`${pack.packPath}: a delta's base is missing`);
    return { code: base.code, body: applyDelta(base.body, inflated(raw.subarray(at + 20), size)) };
  }
  return { code, body: inflated(raw.subarray(at), size) };
}

function inflated(data: Buffer, size: number): Buffer {
  const body = inflateSync(data);
  if (body.length !== size) throw new Error('a packed object of another size than its header says');
  return body;
}

/** git's delta: the source and target sizes, then copies from the source and inserted bytes. */
export function applyDelta(source: Buffer, delta: Buffer): Buffer {
  let at = 0;
  const varint = () => {
    let value = 0;
    for (let shift = 1; ; shift *= 128) {
      const byte = delta[at++];
      if (byte === undefined) throw new Error('a delta cut short');
      value += (byte & 0x7f) * shift;
      if (!(byte & 0x80)) return value;
    }
  };
  if (varint() !== source.length) throw new Error('a delta for another source');
  const out = Buffer.allocUnsafe(varint());
  let written = 0;
  while (at < delta.length) {
    const op = delta[at++] ?? 0;
    if (op & 0x80) {
      let offset = 0;
      let size = 0;
      for (let bit = 0; bit < 4; bit++) if (op & (1 << bit)) offset += (delta[at++] ?? 0) * 2 ** (8 * bit);
      for (let bit = 0; bit < 3; bit++) if (op & (0x10 << bit)) size += (delta[at++] ?? 0) * 2 ** (8 * bit);
      if (size === 0) size = 0x10000;
      if (offset + size > source.length || written + size > out.length)
        throw new Error('a delta copies past its ends');
      source.copy(out, written, offset, offset + size);
      written += size;
    } else if (op > 0) {
      if (at + op > delta.length || written + op > out.length)
        throw new Error('a delta inserts past its ends');
      delta.copy(out, written, at, at + op);
      at += op;
      written += op;
    } else {
      throw new Error('a delta with a reserved instruction');
    }
  }
  if (written !== out.length) throw new Error('a delta that does not fill its target');
  return out;
}

/**
 * `id` in one of the packs of `objectsDir`: its type and body; null when none holds it. The packs
 * are listed again when none holds it, or the one that did is gone (a repack removed it).
 */
export function readPacked(objectsDir: string, id: string): { type: string; body: Buffer } | null {
  const raw = Buffer.from(id, 'hex');
  if (raw.length !== 20) return null;
  const lookup = (base: string): Unpacked | null => {
    const object = readPacked(objectsDir, base);
    const code = object ? TYPE_CODES[object.type] : undefined;
    return object && code !== undefined ? { code, body: object.body } : null;
  };
  for (const refresh of [false, true]) {
    const found = findIn(packsOf(objectsDir, refresh), raw);
    if (!found) continue;
    const files = new OpenPacks();
    try {
      const { code, body } = unpackAt(files, found.pack, found.offset, lookup);
      const type = TYPE_NAMES[code as 1 | 2 | 3 | 4];
      return type ? { type, body } : null;
    } catch {
      // A pack removed under us (listed again), or one this reader cannot follow: git answers.
    } finally {
      files.close();
    }
  }
  return null;
}

/** True when a pack of `objectsDir` holds `id`. */
export function packedHere(objectsDir: string, id: string): boolean {
  const raw = Buffer.from(id, 'hex');
  return (
    raw.length === 20 &&
    (findIn(packsOf(objectsDir, false), raw) ?? findIn(packsOf(objectsDir, true), raw)) !== null
  );
}

function findIn(store: StorePacks, id: Buffer): { pack: PackIndex; offset: number } | null {
  for (const pack of store.packs.values()) {
    if (!pack) continue;
    const position = positionOf(pack, id);
    if (position >= 0) return { pack, offset: pack.offsets[position] ?? 0 };
  }
  return null;
}
