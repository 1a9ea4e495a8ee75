/**
 * The mission repo's roll-up of small packs (src/workers/workspace/housekeep.ts): flotilla's small packs
 * become one, the repository's own large pack and a kept pack are left as they are, and every
 * object stays readable.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readGit, runGit } from '../../../src/workers/workspace/git.js';
import { rollUpSmallPacks, SMALL_PACK_BYTES } from '../../../src/workers/workspace/housekeep.js';
import { readPacked, writePack } from '../../../src/workers/workspace/pack-files.js';
import { packObject } from '../../helpers/git-objects.js';

let root: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'flotilla-housekeep-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

const git = (dir: string, ...args: string[]) => readGit(args, { cwd: dir });

async function packs(dir: string): Promise<string[]> {
  return (await readdir(join(dir, '.git', 'objects', 'pack')))
    .filter((name) => name.endsWith('.pack'))
    .sort();
}

describe('rollUpSmallPacks', () => {
  it('rolls the small packs into one and leaves the large and the kept ones as they are', async () => {
    const dir = join(root, 'repo');
    await runGit(['init', '--quiet', dir], { cwd: root });
    // The repository's own pack, larger than any flotilla writes (random bytes do not compress).
    await writeFile(join(dir, 'big.bin'), randomBytes(SMALL_PACK_BYTES + 100_000));
    await git(dir, 'add', 'big.bin');
    await git(dir, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '--quiet', '-m', 'big');
    await git(dir, 'repack', '-a', '-d', '-q');
    const [large = ''] = await packs(dir);
    const objects = join(dir, '.git', 'objects');
    expect((await stat(join(objects, 'pack', large))).size).toBeGreaterThan(SMALL_PACK_BYTES);

    const written = Array.from({ length: 6 }, (_, i) =>
      Array.from({ length: 3 }, (_, j) => packObject('blob', `pack ${i} object ${j}\n`)),
    );
    for (const objectsOfOne of written) writePack(objects, objectsOfOne);
    const before = await packs(dir);
    expect(before).toHaveLength(7);
    // A kept pack is the user's to keep.
    const kept = before.find((name) => name !== large) ?? '';
    await writeFile(join(objects, 'pack', kept.replace(/\.pack$/, '.keep')), '');

    expect(await rollUpSmallPacks(dir, join(dir, '.git'))).toBe(5);
    const after = await packs(dir);
    expect(after).toHaveLength(3);
    expect(after).toContain(large);
    expect(after).toContain(kept);
    for (const object of written.flat()) {
      expect(readPacked(objects, object.id)).toEqual({ type: 'blob', body: object.body });
      expect(await git(dir, 'cat-file', '-t', object.id)).toBe('blob');
    }
    expect((await runGit(['fsck', '--strict', '--no-dangling'], { cwd: dir })).exitCode).toBe(0);
    // Nothing left to roll up: the new pack alone is small (the kept one does not count).
    expect(await rollUpSmallPacks(dir, join(dir, '.git'))).toBe(0);
  });

  it('leaves a pack with a bitmap, and everything where a multi-pack index names the packs', async () => {
    const dir = join(root, 'arranged');
    await runGit(['init', '--quiet', dir], { cwd: root });
    const objects = join(dir, '.git', 'objects');
    const blob = (text: string) => packObject('blob', text);
    for (let i = 0; i < 3; i++) writePack(objects, [blob(`a${i}`), blob(`b${i}`), blob(`c${i}`)]);
    const [withBitmap = ''] = await packs(dir);
    await writeFile(join(objects, 'pack', withBitmap.replace(/\.pack$/, '.bitmap')), '');
    expect(await rollUpSmallPacks(dir, join(dir, '.git'))).toBe(2);
    expect(await packs(dir)).toContain(withBitmap);

    for (let i = 3; i < 6; i++) writePack(objects, [blob(`a${i}`), blob(`b${i}`), blob(`c${i}`)]);
    await git(dir, 'multi-pack-index', 'write');
    const listed = await packs(dir);
    expect(await rollUpSmallPacks(dir, join(dir, '.git'))).toBe(0);
    expect(await packs(dir)).toEqual(listed);
    expect((await runGit(['multi-pack-index', 'verify'], { cwd: dir })).exitCode).toBe(0);
  });
});
