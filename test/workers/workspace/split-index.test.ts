/**
 * The split index's `link` extension (src/workers/workspace/split-index.ts): the EWAH bitmaps read as git
 * writes them, and written so they read back; index-file.test.ts holds whole updates against git.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readGit, runGit } from '../../../src/workers/workspace/git.js';
import { parseIndex } from '../../../src/workers/workspace/index-format.js';
import { ewahBytes, ewahPositions, parseLink } from '../../../src/workers/workspace/split-index.js';

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'flotilla-split-index-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('EWAH bitmaps', () => {
  it.each<[string, number[]]>([
    ['none', []],
    ['the first bit', [0]],
    ['both halves of a word', [3, 31, 32, 63]],
    ['words next to each other', [60, 64, 127, 128]],
    ['words far apart (a run of empty words between)', [5, 64 * 1000 + 7, 64 * 1000 + 70, 5_000_000]],
    ['a full word', Array.from({ length: 64 }, (_, i) => 128 + i)],
  ])('reads back what it writes: %s', (_name, positions) => {
    const bytes = ewahBytes(positions);
    expect(ewahPositions(bytes, 0)).toEqual({ positions, end: bytes.byteLength });
  });

  it('refuses a bitmap that runs past its data', () => {
    const bytes = ewahBytes([1, 2, 700]);
    expect(ewahPositions(bytes.subarray(0, bytes.byteLength - 5), 0)).toBeNull();
  });
});

describe('the link extension as git writes it', () => {
  it('names the shared index and the positions git deleted and replaced', async () => {
    const dir = join(root, 'repo');
    await mkdir(dir);
    await runGit(['init', '--quiet', dir]);
    // 200 files: f000 … f199, so a file's number is its position in the shared index.
    for (let i = 0; i < 200; i++) await writeFile(join(dir, `f${String(i).padStart(3, '0')}`), `${i}\n`);
    await readGit(['add', '--all'], { cwd: dir });
    await readGit(['update-index', '--split-index'], { cwd: dir });
    await readGit(['rm', '--cached', '--quiet', 'f005', 'f130'], { cwd: dir });
    await writeFile(join(dir, 'f070'), 'changed\n');
    await writeFile(join(dir, 'f199'), 'changed\n');
    await readGit(['add', 'f070', 'f199'], { cwd: dir });
    const parsed = parseIndex(await readFile(join(dir, '.git', 'index')));
    const link = parsed?.link ? parseLink(parsed.link) : null;
    expect(link?.deleted).toEqual([5, 130]);
    expect(link?.replaced).toEqual(expect.arrayContaining([70, 199]));
    const shared = await readGit(['rev-parse', '--git-path', `sharedindex.${link?.base.toString('hex')}`], {
      cwd: dir,
    });
    expect((await readFile(join(dir, shared.trim()))).byteLength).toBeGreaterThan(200 * 62);
  });
});
