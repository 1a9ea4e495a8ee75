/**
 * `git restore --source --staged --worktree` done in-process (src/workers/workspace/restore-files.ts),
 * held to git's checkout on twin copies of one checkout: for seeded random moves between two commits
 * (edits, new files in new folders, deletions that empty folders, links, modes, files becoming
 * folders), the work tree, the index entries and the status agree, and git finds every file clean
 * by its stat data; a split index the same. Forms left to git are declined before anything is
 * written, or leave git to write every path again.
 */
import {
  cp,
  lstat,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  readlink,
  rm,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readGit, runGit } from '../../../src/workers/workspace/git.js';
import { looseReader, treeEntriesAt } from '../../../src/workers/workspace/loose-trees.js';
import { restoreInProcess } from '../../../src/workers/workspace/restore-files.js';
import { ID, write } from '../../helpers/checkout-changes.js';
import { createRandom, putRandomFile, type Random, randomPath } from '../../helpers/random.js';

let root: string;
let counter = 0;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'flotilla-restore-files-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

const git = (dir: string, ...args: string[]) => readGit(args, { cwd: dir });

/**
 * A repository named `name` with one commit for each of `commits` (files written, or deleted where
 * null), `prepare` run on it first; its commit ids, HEAD at the last.
 */
async function committed(
  name: string,
  commits: readonly Record<string, string | null>[],
  prepare?: (dir: string) => Promise<unknown>,
): Promise<{ dir: string; ids: string[] }> {
  const dir = join(root, `${name}-${++counter}`);
  await mkdir(dir);
  await runGit(['init', '--quiet', dir]);
  await prepare?.(dir);
  const ids: string[] = [];
  for (const [i, files] of commits.entries()) {
    for (const [path, content] of Object.entries(files)) {
      if (content === null) await rm(join(dir, path));
      else await write(dir, path, content);
    }
    await git(dir, 'add', '--all');
    await git(dir, ...ID, 'commit', '--quiet', '-m', `commit ${i}`);
    ids.push(await git(dir, 'rev-parse', 'HEAD'));
  }
  return { dir, ids };
}

/** Each folder, file (its mode bits and content) and link of a checkout, `.git` left out. */
async function workTree(dir: string, path = ''): Promise<Record<string, string>> {
  const tree: Record<string, string> = {};
  for (const name of (await readdir(join(dir, path))).sort()) {
    const child = path ? `${path}/${name}` : name;
    if (child === '.git') continue;
    const info = await lstat(join(dir, child));
    if (info.isDirectory()) Object.assign(tree, { [child]: 'dir' }, await workTree(dir, child));
    else if (info.isSymbolicLink()) tree[child] = `link:${await readlink(join(dir, child))}`;
    else tree[child] = `${(info.mode & 0o777).toString(8)}:${await readFile(join(dir, child), 'latin1')}`;
  }
  return tree;
}

/** A repository at commit `from`, and `to`: random paths changed, added and deleted on top. */
async function twoCommits(
  random: Random,
  split: boolean,
): Promise<{ dir: string; from: string; to: string }> {
  const dir = join(root, `repo-${++counter}`);
  await mkdir(dir);
  await runGit(['init', '--quiet', dir]);
  if (split) await git(dir, 'config', 'core.splitIndex', 'true');
  for (let i = 0; i < 40; i++) await putRandomFile(dir, randomPath(random), random, `from ${i}`);
  await git(dir, 'add', '--all');
  await git(dir, ...ID, 'commit', '--quiet', '-m', 'from');
  const from = await git(dir, 'rev-parse', 'HEAD');
  const tracked = (await git(dir, 'ls-files', '-z')).split('\0').filter(Boolean);
  for (let i = 0; i < 12; i++) {
    if (random.chance(0.3) && tracked.length > 0) {
      await rm(join(dir, random.pick(tracked)), { force: true });
    } else {
      await putRandomFile(
        dir,
        random.chance(0.5) ? randomPath(random) : random.pick(tracked),
        random,
        `to ${i}`,
      );
    }
  }
  await git(dir, 'add', '--all');
  await git(dir, ...ID, 'commit', '--quiet', '--allow-empty', '-m', 'to');
  const to = await git(dir, 'rev-parse', 'HEAD');
  await git(dir, 'checkout', '--quiet', '--detach', from);
  return { dir, from, to };
}

/** Moves a copy of `dir` (at `from`) to `to`: restored in-process then HEAD moved, as a warm checkout's reset does, or by git's checkout. */
async function restored(dir: string, from: string, to: string, how: 'in-process' | 'git') {
  const copy = join(root, `${how}-${++counter}`);
  await cp(dir, copy, { recursive: true, verbatimSymlinks: true });
  // The copy's files have new stat data: git refreshes its index before the paths are compared.
  await git(copy, 'update-index', '--refresh', '-q');
  const paths = (await git(copy, 'diff-tree', '-r', '-z', '--name-only', '--no-renames', from, to))
    .split('\0')
    .filter(Boolean);
  const target = await treeEntriesAt(copy, await looseReader(copy), to, paths, 10_000);
  let done = true;
  if (how === 'in-process') {
    done = await restoreInProcess(copy, paths, target, await looseReader(copy));
    await git(copy, 'update-ref', '--no-deref', 'HEAD', to);
  } else {
    // git's restore of the same paths refuses a file that replaces a folder of index entries
    // (their paths no longer match once it reads the file in): git's checkout is the reference.
    await git(copy, 'checkout', '--quiet', '--detach', to);
  }
  return { copy, done, paths };
}

/** What git's index holds (modes, ids, paths), and whether git finds every file clean by stat. */
async function indexState(dir: string) {
  return {
    entries: await git(dir, 'ls-files', '--stage'),
    // `-q --refresh` prints nothing when every entry's stat data matches its file.
    stale: (
      await runGit(['update-index', '--refresh', '-q', '--ignore-missing'], { cwd: dir, allowFailure: true })
    ).stdout,
    status: await git(dir, 'status', '--porcelain=v1', '--untracked-files=all'),
    staged: await git(dir, 'diff-index', '--cached', '--name-only', 'HEAD'),
  };
}

describe('restoreInProcess', () => {
  for (const split of [false, true]) {
    for (const seed of [1, 2, 3, 4, 5, 6]) {
      it(`leaves the work tree and index git's checkout leaves (seed ${seed}${split ? ', split index' : ''})`, async () => {
        const { dir, from, to } = await twoCommits(createRandom(seed * 31 + (split ? 7 : 0)), split);
        const ours = await restored(dir, from, to, 'in-process');
        const theirs = await restored(dir, from, to, 'git');
        expect(ours.paths.length).toBeGreaterThan(0);
        expect(ours.done).toBe(true);
        expect(await workTree(ours.copy)).toEqual(await workTree(theirs.copy));
        const state = await indexState(ours.copy);
        expect(state).toEqual({ ...(await indexState(theirs.copy)), stale: '', status: '', staged: '' });
        expect(await git(ours.copy, 'fsck', '--no-dangling', '--no-progress')).toBe('');
        if (split)
          expect(
            (await readdir(join(ours.copy, '.git'))).some((name) => name.startsWith('sharedindex.')),
          ).toBe(true);
      });
    }
  }

  it('removes the folders a deletion leaves empty, as git does, and keeps those that hold something', async () => {
    const {
      dir,
      ids: [from = '', to = ''],
    } = await committed('folders', [
      { 'top.txt': 'top\n' },
      { 'gone/deeper/file.txt': 'to be deleted\n', 'kept/file.txt': 'to be deleted\n' },
    ]);
    await writeFile(join(dir, 'kept/untracked.txt'), 'untracked, kept\n');
    // From `to` back to `from`: both files go.
    const ours = await restored(dir, to, from, 'in-process');
    expect(ours.done).toBe(true);
    expect(await workTree(ours.copy)).toEqual({
      kept: 'dir',
      'kept/untracked.txt': '644:untracked, kept\n',
      'top.txt': '644:top\n',
    });
    expect(await workTree(ours.copy)).toEqual(await workTree((await restored(dir, to, from, 'git')).copy));
  });

  it('declines, writing nothing, where git converts content on its way out or a submodule moves', async () => {
    for (const [name, prepare] of [
      [
        'a .gitattributes with eol',
        (dir: string) => writeFile(join(dir, '.gitattributes'), '*.txt eol=crlf\n'),
      ],
      ['core.autocrlf', (dir: string) => git(dir, 'config', 'core.autocrlf', 'true')],
      ['core.ignoreCase', (dir: string) => git(dir, 'config', 'core.ignoreCase', 'true')],
      ['core.fileMode off', (dir: string) => git(dir, 'config', 'core.fileMode', 'false')],
    ] as const) {
      const {
        dir,
        ids: [from = '', to = ''],
      } = await committed('declined', [{ 'a.txt': 'from\n' }, { 'a.txt': 'to\n' }], prepare);
      await git(dir, 'checkout', '--quiet', '--detach', from);
      const before = await readFile(join(dir, 'a.txt'), 'utf8');
      const target = await treeEntriesAt(dir, await looseReader(dir), to, ['a.txt'], 10);
      expect(await restoreInProcess(dir, ['a.txt'], target, await looseReader(dir)), name).toBe(false);
      expect(await readFile(join(dir, 'a.txt'), 'utf8'), name).toBe(before);
      expect(before.startsWith('from'), name).toBe(true);
    }
    const dir = join(root, `submodule-${++counter}`);
    await mkdir(dir);
    await runGit(['init', '--quiet', dir]);
    const sub = '1234567890123456789012345678901234567890';
    const gitlink = [{ mode: '160000', oid: sub, path: 'sub' }];
    expect(await restoreInProcess(dir, ['sub'], gitlink, await looseReader(dir)), 'a submodule').toBe(false);
    expect(await readdir(dir), 'a submodule').toEqual(['.git']);
  });

  it('declines, writing nothing, a path git refuses or cannot name, or one below a link', async () => {
    const { dir } = await committed('refused', [{ 'd/f': 'tracked\n' }]);
    const blob = await git(dir, 'rev-parse', 'HEAD:d/f');
    const reader = await looseReader(dir);
    const file = (path: string) => [{ mode: '100644', oid: blob, path }];
    // A tree git would refuse to check out: a hook planted below a `.git`, in any of its spellings.
    for (const path of [
      'sub/.git/hooks/post-checkout',
      'sub/.GIT/config',
      'sub/.git./x',
      'GIT~1/x',
      'a/../b',
      // What git's verify_path() refuses beyond these (verify-path.ts): macOS's and Windows' readings.
      '.g\u200cit/hooks/post-checkout',
      'a\\.git',
      'sub/.git::$INDEX_ALLOCATION/x',
    ]) {
      expect(await restoreInProcess(dir, [path], file(path), reader), path).toBe(false);
    }
    const link = (path: string) => [{ mode: '120000', oid: blob, path }];
    for (const path of ['.gitmodules', 'sub/GITMOD~1']) {
      expect(await restoreInProcess(dir, [path], link(path), reader), path).toBe(false);
    }
    // A name git listed with bytes that are not UTF-8 (replaced): git must find the path itself.
    expect(await restoreInProcess(dir, ['caf\uFFFD'], [], reader)).toBe(false);
    expect((await readdir(dir)).sort()).toEqual(['.git', 'd']);
    // A folder the agent replaced by a link to somewhere else: nothing is written through it.
    const outside = join(root, `outside-${++counter}`);
    await mkdir(outside);
    await rm(join(dir, 'd'), { recursive: true });
    await symlink(outside, join(dir, 'd'));
    expect(await restoreInProcess(dir, ['d/f'], file('d/f'), reader)).toBe(false);
    expect(await readdir(outside)).toEqual([]);
  });

  it('declines where a folder stands at a path the commit holds as a file', async () => {
    const {
      dir,
      ids: [from = '', to = ''],
    } = await committed('folder-in-the-way', [{ a: 'from\n' }, { a: 'to\n' }]);
    await git(dir, 'checkout', '--quiet', '--detach', from);
    await rm(join(dir, 'a'));
    await mkdir(join(dir, 'a'));
    await writeFile(join(dir, 'a/inside'), 'the agent’s\n');
    const target = await treeEntriesAt(dir, await looseReader(dir), to, ['a'], 10);
    expect(await restoreInProcess(dir, ['a'], target, await looseReader(dir))).toBe(false);
    expect(await readFile(join(dir, 'a/inside'), 'utf8')).toBe('the agent’s\n');
  });
});
