/** What a repository's object store holds, for tests of how flotilla writes objects. */

import { readGit } from '../../src/workers/workspace/git.js';
import { objectId } from '../../src/workers/workspace/git-files.js';
import type { PackObject } from '../../src/workers/workspace/pack-files.js';

/** `git count-objects -v`'s loose objects and packs. */
export async function objectCounts(repo: string): Promise<{ loose: number; packs: number }> {
  const counts = await readGit(['count-objects', '-v'], { cwd: repo });
  const field = (name: string) => Number(counts.match(new RegExp(`^${name}: (\\d+)$`, 'm'))?.[1]);
  return { loose: field('count'), packs: field('packs') };
}

/** An object to pack, with the id git gives it. */
export function packObject(type: string, text: string | Buffer): PackObject {
  const body = Buffer.from(text);
  return { id: objectId(type, body).id, type, body };
}
