/**
 * The objects one operation writes into a repository (an attempt's commits, a batch of the gate's
 * merges), held in memory until all of them are made and then written at once: one pack from
 * `PACK_FROM` objects on (two new files, whatever the count), loose objects below. The batch
 * answers reads of what it holds, so a tree made in it is edited again (the next commit's, the
 * next merge's) before anything is on disk. Nothing may point at a held object (a ref, a git
 * process) before `write()`.
 */
import { join } from 'node:path';
import { freshened, objectId, writeLooseObject } from './git-files.js';
import { type PackObject, writePack } from './pack-files.js';

/**
 * From this many objects a pack: a pack and its index are two new files against one a loose
 * object, and a new file is the dearest file call on a busy host (docs/BENCHMARKS.md,
 * "File calls").
 */
const PACK_FROM = 3;

export class ObjectBatch {
  private readonly held = new Map<string, PackObject>();

  constructor(readonly gitDir: string) {}

  /** Holds an object for the write; its id. One the store has loose already is freshened instead. */
  put(type: string, body: Buffer): string {
    const { id } = objectId(type, body);
    if (this.held.has(id) || freshened(join(this.gitDir, 'objects', id.slice(0, 2), id.slice(2)))) return id;
    this.held.set(id, { id, type, body });
    return id;
  }

  /** A held object's body when it is of `type`; null when not held (read the store). */
  read(id: string, type: string): Buffer | null {
    const object = this.held.get(id);
    return object?.type === type ? object.body : null;
  }

  /** Writes what is held (one pack, or loose objects) and holds nothing after; true for a pack. */
  write(): boolean {
    if (this.held.size === 0) return false;
    const objects = [...this.held.values()];
    const packed = objects.length >= PACK_FROM && writePack(join(this.gitDir, 'objects'), objects);
    if (!packed) for (const object of objects) writeLooseObject(this.gitDir, object.type, object.body);
    this.held.clear();
    return packed;
  }
}
