/**
 * A checkout's trees read in-process (src/workers/workspace/loose-trees.ts) against git on the same
 * repository: for seeded random pairs of commits (edits, new and deleted files and folders, a
 * file become a folder and back, modes, links, names that sort around `/`), the paths that differ
 * are `git diff-index --cached`'s for an index holding the first, the entries at a few paths are
 * `git ls-tree -r`'s, and the kinds are `git cat-file --batch-check`'s. A packed object leaves
 * the answer to git.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { literalPathspec, readGit, runGit } from '../../../src/workers/workspace/git.js';
import {
  looseKinds,
  looseLsTree,
  looseReader,
  treeChanges,
} from '../../../src/workers/workspace/loose-trees.js';
import { parseLsTree } from '../../../src/workers/workspace/monitored-paths.js';
import { createRandom, putRandomFile, type Random, randomPath } from '../../helpers/random.js';

let root: string;
let counter = 0;
const ID = ['-c', 'user.name=t', '-c', 'user.email=t@t'];

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'flotilla-loose-trees-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

const git = (dir: string, ...args: string[]) => readGit(args, { cwd: dir });

/** A repository with two commits of random trees, the second a random change of the first. */
async function twoCommits(seed: number) {
  const random = createRandom(seed);
  const dir = join(root, `repo-${++counter}`);
  await mkdir(dir);
  await runGit(['init', '--quiet', dir]);
  for (let i = 0; i < 30; i++) await putRandomFile(dir, randomPath(random), random, `base ${i}`);
  await git(dir, 'add', '--all');
  await git(dir, ...ID, 'commit', '--quiet', '-m', 'first');
  const first = await git(dir, 'rev-parse', 'HEAD');
  for (let i = 0; i < 12; i++) {
    const path = randomPath(random);
    if (random.chance(0.3))
      await rm(join(dir, path), { recursive: true, force: true }).catch(() => undefined);
    else await putRandomFile(dir, path, random, `second ${i}`);
  }
  await git(dir, 'add', '--all');
  await git(dir, ...ID, 'commit', '--quiet', '--allow-empty', '-m', 'second');
  const second = await git(dir, 'rev-parse', 'HEAD');
  return { dir, first, second, random };
}

/** A few paths to ask about: files and folders of either commit, and names neither has. */
async function somePaths(dir: string, commits: readonly string[], random: Random): Promise<string[]> {
  const known = new Set<string>();
  for (const commit of commits) {
    for (const path of (await git(dir, 'ls-tree', '-r', '-t', '--name-only', '-z', commit)).split('\0')) {
      if (path) known.add(path);
    }
  }
  const pool = [...known, 'nothing-here', 'a/nothing/here'];
  return [...new Set(Array.from({ length: 8 }, () => random.pick(pool)))];
}

describe('a checkout’s trees read in-process', () => {
  const SEEDS = Array.from({ length: 12 }, (_, i) => i + 1);

  it.each(SEEDS)('lists what differs between two commits as git diff-index does (seed %i)', async (seed) => {
    const { dir, first, second } = await twoCommits(seed);
    await git(dir, 'read-tree', first);
    const byGit = (await git(dir, 'diff-index', '--cached', '--name-only', '-z', '--no-renames', second))
      .split('\0')
      .filter(Boolean);
    const inProcess = await treeChanges(await looseReader(dir), first, second, 10_000);
    expect(inProcess).not.toBeNull();
    expect([...(inProcess ?? [])].sort()).toEqual([...byGit].sort());
    expect(await treeChanges(await looseReader(dir), second, second, 10_000)).toEqual([]);
  });

  it.each(SEEDS)(
    'finds what a commit holds at some paths as git ls-tree and cat-file do (seed %i)',
    async (seed) => {
      const { dir, first, second, random } = await twoCommits(seed);
      const paths = await somePaths(dir, [first, second], random);
      const reader = await looseReader(dir);
      for (const commit of [first, second]) {
        const listed = await git(
          dir,
          'ls-tree',
          '-r',
          '-z',
          '--full-tree',
          commit,
          '--',
          ...paths.map(literalPathspec),
        );
        const entries = await looseLsTree(reader, commit, paths, 10_000);
        expect(entries).toEqual(
          parseLsTree(listed).sort((x, y) => Buffer.compare(Buffer.from(x.path), Buffer.from(y.path))),
        );
        const types = (
          await runGit(['cat-file', '--batch-check=%(objecttype)'], {
            cwd: dir,
            input: `${paths.map((path) => `${commit}:${path}`).join('\n')}\n`,
          })
        ).stdout.split('\n');
        const kinds = paths.map((_, i) =>
          types[i] === 'tree' ? 'folder' : types[i]?.endsWith('missing') ? 'none' : 'other',
        );
        expect(await looseKinds(reader, commit, paths)).toEqual(kinds);
      }
    },
  );

  it('reads packed objects too, and leaves git the answer past the limit or where it cannot read', async () => {
    const { dir, first, second } = await twoCommits(99);
    const changed = await treeChanges(await looseReader(dir), first, second, 10_000);
    expect(changed?.length).toBeGreaterThan(1);
    expect(await treeChanges(await looseReader(dir), first, second, 1)).toBeNull();
    await git(dir, 'gc', '--quiet', '--prune=now');
    expect(await treeChanges(await looseReader(dir), first, second, 10_000)).toEqual(changed);
    // One object more, so the repack makes a pack of another name (one of the same name is kept).
    const extra = await git(dir, ...ID, 'commit-tree', `${second}^{tree}`, '-m', 'extra');
    await git(dir, 'update-ref', 'refs/heads/extra', extra);
    await git(dir, '-c', 'pack.indexVersion=1', 'gc', '--quiet', '--prune=now');
    // The pack read above is gone: the folder is listed again, and holds only what it does not read.
    expect(await treeChanges(await looseReader(dir), first, second, 10_000)).toBeNull();
    expect(await looseLsTree(await looseReader(dir), second, ['a'], 10_000)).toBeNull();
    expect(await looseKinds(await looseReader(dir), second, ['a'])).toBeNull();
  });
});
