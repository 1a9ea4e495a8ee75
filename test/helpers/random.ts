import { chmod, lstat, mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
/** mulberry32: tiny and deterministic, so a seed names one sequence of random cases for good. */
export function createRandom(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  const int = (below: number) => Math.floor(next() * below);
  const pick = <T>(items: readonly T[]): T => items[int(items.length)] as T;
  return { next, int, pick, chance: (p: number) => next() < p };
}

export type Random = ReturnType<typeof createRandom>;

/**
 * Names that sort around `/` and each other as git sorts them (`a-b`, `a.b` and `a0` beside `a/`),
 * with a space and a non-ASCII letter: the held-to-git tests' paths are made of them.
 */
export const TRICKY_NAMES = ['a', 'a-b', 'a.b', 'a0', 'b', 'zé', 'x y', 'dir', 'dir.txt'] as const;

/** A path of one to three of `names`. */
export function randomPath(random: Random, names: readonly string[] = TRICKY_NAMES): string {
  return Array.from({ length: random.int(3) + 1 }, () => random.pick(names)).join('/');
}

/**
 * Writes `path` below `dir` as a file (now and then an executable) or a link, chosen by `random`,
 * making way for it: a file standing where a folder of its path should be goes, and so does
 * whatever is at `path` itself.
 */
export async function putRandomFile(dir: string, path: string, random: Random, tag: string): Promise<void> {
  const parts = path.split('/');
  for (let i = 1; i < parts.length; i++) {
    const above = join(dir, ...parts.slice(0, i));
    const info = await lstat(above).catch(() => null);
    if (info && !info.isDirectory()) await rm(above);
    if (!info?.isDirectory()) await mkdir(above);
  }
  await rm(join(dir, path), { recursive: true, force: true });
  if (random.chance(0.1)) await symlink(`to-${tag}`, join(dir, path));
  else {
    await writeFile(join(dir, path), `${path} ${tag}\n`);
    if (random.chance(0.2)) await chmod(join(dir, path), 0o755);
  }
}
