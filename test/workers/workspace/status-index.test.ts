/**
 * A status of a few paths reads a small index (src/workers/workspace/status-index.ts) where the checkout's
 * index is split: held to git's status of the same paths over the whole index, for seeded random
 * trees with ignore rules at several levels (folders, negations, anchored and unanchored), random
 * changes (edits, deletions, modes, files become folders and folders files, staged changes,
 * untracked and ignored files, an ignored folder holding a tracked file) and random sets of
 * paths (changed ones, their folders, paths that do not exist).
 */
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readGit, runGit } from '../../../src/workers/workspace/git.js';
import { writeStatusIndex } from '../../../src/workers/workspace/index-file.js';
import { parsePorcelainV2Z, readWorktree } from '../../../src/workers/workspace/snapshot-changes.js';
import { ID, write } from '../../helpers/checkout-changes.js';
import { createRandom, putRandomFile, type Random, randomPath, TRICKY_NAMES } from '../../helpers/random.js';

let root: string;
let counter = 0;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'flotilla-status-index-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

const git = (dir: string, ...args: string[]) => readGit(args, { cwd: dir });

const PATTERNS = [
  '*.o',
  'a0',
  '/a.b',
  'dir/',
  '!a0',
  'x y',
  'b/*',
  '!*.txt',
  'zé',
  'a-b/',
  '*',
  '!dir.txt',
  '**/a',
  '!*/',
  'a/a',
  'dir/**',
  '**/dir/',
  '.*',
  '!.gitignore',
  '*.b',
];

/** A committed tree with ignore rules at the top and in a few folders, its index split. */
async function splitRepo(random: Random): Promise<string> {
  const dir = join(root, `repo-${++counter}`);
  await mkdir(dir);
  await runGit(['init', '--quiet', dir]);
  await git(dir, 'config', 'core.splitIndex', 'true');
  for (let i = 0; i < 60; i++) await putRandomFile(dir, randomPath(random), random, `base ${i}`);
  for (const folder of ['', 'a', 'dir', 'b']) {
    const info = await readdir(join(dir, folder)).catch(() => null);
    if (!info) continue;
    const rules = Array.from({ length: random.int(3) + 1 }, () => random.pick(PATTERNS));
    await writeFile(join(dir, folder, '.gitignore'), `${rules.join('\n')}\n`);
  }
  // Tracked whatever the rules say: a tracked file inside an ignored folder, too.
  await git(dir, 'add', '--all', '--force');
  await git(dir, ...ID, 'commit', '--quiet', '-m', 'base');
  await git(dir, 'update-index', '--split-index');
  // As a warm checkout's: HEAD a detached commit.
  await git(dir, 'checkout', '--quiet', '--detach');
  return dir;
}

/** Random changes an attempt could leave; the paths it touched. */
async function change(dir: string, random: Random): Promise<string[]> {
  const tracked = (await git(dir, 'ls-files', '-z')).split('\0').filter(Boolean);
  const touched: string[] = [];
  for (let i = 0; i < 10; i++) {
    const roll = random.int(6);
    const path = roll < 3 ? randomPath(random) : random.pick(tracked);
    touched.push(path);
    // A path below what is now a file cannot be made or removed: the change is skipped.
    const notADirectory = (error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOTDIR' && error.code !== 'ENOENT') throw error;
    };
    if (roll === 3) await rm(join(dir, path), { recursive: true, force: true }).catch(notADirectory);
    else if (roll === 4) await chmod(join(dir, path), 0o755).catch(notADirectory);
    else await putRandomFile(dir, path, random, `change ${i}`).catch(notADirectory);
  }
  if (random.chance(0.5)) {
    const staged = touched.find((path) => !path.includes('.gitignore'));
    if (staged) await runGit(['add', '--all', '--force', '--', staged], { cwd: dir, allowFailure: true });
  }
  return touched;
}

/** Some of `touched`, a folder or two above them, and a path nobody made. */
function pathsFor(touched: readonly string[], random: Random): string[] {
  const paths = new Set<string>();
  for (const path of touched) {
    if (random.chance(0.7)) paths.add(path);
    const slash = path.lastIndexOf('/');
    if (slash > 0 && random.chance(0.3)) paths.add(path.slice(0, slash));
  }
  paths.add(`${random.pick(TRICKY_NAMES)}/never-made`);
  return [...paths];
}

/** What git's status says of `paths` over the checkout's whole index. */
async function wholeIndexStatus(dir: string, paths: readonly string[]) {
  const { stdout } = await runGit(
    [
      'status',
      '--porcelain=v2',
      '-z',
      '--branch',
      '--untracked-files=all',
      '--ignored=matching',
      '--no-renames',
      '--',
      ...paths.map((path) => `:(top,literal)${path}`),
    ],
    { cwd: dir, env: { GIT_OPTIONAL_LOCKS: '0' } },
  );
  return parsePorcelainV2Z(stdout);
}

describe('a status of a few paths over a small index', () => {
  for (const seed of Array.from({ length: Number(process.env.SEEDS ?? 8) }, (_, i) => i + 1)) {
    it(`lists what git lists over the whole index (seed ${seed})`, async () => {
      const random = createRandom(seed * 977);
      const dir = await splitRepo(random);
      for (let round = 0; round < 3; round++) {
        const paths = pathsFor(await change(dir, random), random);
        const small = await writeStatusIndex(dir, paths);
        expect(small, `round ${round}: the small index is made`).not.toBeNull();
        await rm(small ?? '', { force: true });
        expect(await readWorktree(dir, { only: paths }), `round ${round}: ${paths.join(', ')}`).toEqual(
          await wholeIndexStatus(dir, paths),
        );
        // The next round starts from what git's own write makes of this one.
        await git(dir, 'add', '--all', '--force');
        await git(dir, ...ID, 'commit', '--quiet', '--allow-empty', '-m', `round ${round}`);
      }
      // Nothing left beside the index.
      const gitDir = join(dir, '.git');
      expect((await readdir(gitDir)).filter((name) => name.startsWith('flotilla-status-'))).toEqual([]);
    });
  }

  it('lets git skip the folders of HEAD the paths are not in: its cache tree names them', async () => {
    const dir = join(root, `folders-${++counter}`);
    await mkdir(dir);
    await runGit(['init', '--quiet', dir]);
    await git(dir, 'config', 'core.splitIndex', 'true');
    for (let i = 0; i < 40; i++) await write(dir, `folder-${i}/inner/file.txt`, `${i}\n`);
    await git(dir, 'add', '--all');
    await git(dir, ...ID, 'commit', '--quiet', '-m', 'base');
    await git(dir, 'update-index', '--split-index');
    await git(dir, 'checkout', '--quiet', '--detach');
    await write(dir, 'folder-7/inner/new.txt', 'new\n');
    const paths = ['folder-7/inner/new.txt'];
    const small = (await writeStatusIndex(dir, paths)) ?? '';
    const trees = async (env: Record<string, string>) => {
      const trace = join(root, `trace-${++counter}`);
      await runGit(['status', '--porcelain=v2', '--', ...paths], {
        cwd: dir,
        env: { ...env, GIT_OPTIONAL_LOCKS: '0', GIT_TRACE2_PERF: trace },
      });
      return Number((await readFile(trace, 'utf8')).match(/"traverse_trees_count":(\d+)/)?.[1] ?? 0);
    };
    // HEAD's root, folder-7 and folder-7/inner: the 39 other folders skipped.
    expect(await trees({ GIT_INDEX_FILE: small })).toBeLessThanOrEqual(3);
    await rm(small);
    expect(await readWorktree(dir, { only: paths })).toEqual(await wholeIndexStatus(dir, paths));
  });

  it('keeps git’s racy check: the small index has the index’s own time, so a same-second edit is seen', async () => {
    const dir = await splitRepo(createRandom(11));
    // ctime not trusted, so a file's times can be set: the edit is then seen by its content alone.
    await git(dir, 'config', 'core.trustctime', 'false');
    const then = new Date(Math.floor(Date.now() / 1000 - 100) * 1000);
    await write(dir, 'racy.txt', 'before\n');
    await utimes(join(dir, 'racy.txt'), then, then);
    await git(dir, 'add', 'racy.txt');
    await git(dir, ...ID, 'commit', '--quiet', '-m', 'racy.txt');
    await utimes(join(dir, '.git', 'index'), then, then);
    // The same size and times, other content: only a content check can tell.
    await writeFile(join(dir, 'racy.txt'), 'BEFORE\n');
    await utimes(join(dir, 'racy.txt'), then, then);
    const whole = await wholeIndexStatus(dir, ['racy.txt']);
    expect(whole.changes).toEqual([{ path: 'racy.txt', untracked: false }]);
    const small = await writeStatusIndex(dir, ['racy.txt']);
    expect(small).not.toBeNull();
    await rm(small ?? '');
    expect(await readWorktree(dir, { only: ['racy.txt'] })).toEqual(whole);
  });

  it('holds the ignore and attribute files git reads from the index above the paths (deleted, skip-worktree)', async () => {
    const dir = join(root, `rules-${++counter}`);
    await mkdir(dir);
    await runGit(['init', '--quiet', dir]);
    await git(dir, 'config', 'core.splitIndex', 'true');
    for (let i = 0; i < 20; i++) await write(dir, `x/f${i}`, `${i}\n`);
    await write(dir, '.gitignore', '*.log\n');
    await write(dir, 'x/.gitattributes', '*.txt ident\n');
    await write(dir, 'x/id.txt', '$Id$\n');
    await git(dir, 'add', '--all');
    await git(dir, ...ID, 'commit', '--quiet', '-m', 'base');
    await git(dir, 'update-index', '--split-index');
    await git(dir, 'checkout', '--quiet', '--detach');
    await git(dir, 'update-index', '--skip-worktree', '.gitignore');
    await rm(join(dir, '.gitignore'));
    await rm(join(dir, 'x/.gitattributes'));
    await write(dir, 'x/new.log', 'ignored by the index’s .gitignore\n');
    for (const paths of [['x/new.log'], ['x/id.txt']]) {
      expect(await readWorktree(dir, { only: paths }), paths[0]).toEqual(await wholeIndexStatus(dir, paths));
    }
    expect((await wholeIndexStatus(dir, ['x/new.log'])).ignored).toEqual(['x/new.log']);
  });

  it('removes a small index another process left (a host killed during its status), once', async () => {
    const dir = await splitRepo(createRandom(5));
    const left = join(dir, '.git', 'flotilla-status-999999999-1.index');
    await writeFile(left, 'left by a killed host');
    const small = await writeStatusIndex(dir, ['a']);
    expect(small).not.toBeNull();
    expect((await readdir(join(dir, '.git'))).filter((name) => name.startsWith('flotilla-status-'))).toEqual([
      small?.split('/').at(-1),
    ]);
    await rm(small ?? '');
  });

  it('is not made for a whole index: git reads a small one as fast itself', async () => {
    const dir = join(root, `whole-${++counter}`);
    await mkdir(dir);
    await runGit(['init', '--quiet', dir]);
    await writeFile(join(dir, 'a.txt'), 'a\n');
    await git(dir, 'add', '--all');
    await git(dir, ...ID, 'commit', '--quiet', '-m', 'base');
    expect(await writeStatusIndex(dir, ['a.txt'])).toBeNull();
  });
});
