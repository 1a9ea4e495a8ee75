/**
 * The checkout's index moved in-process (src/workers/workspace/index-file.ts) against `git update-index
 * --add --remove --replace` on copies of the same checkout: for seeded random changes (edits, new
 * files in new folders, deletions, links, modes), the entries, the tree git writes from the index
 * (a cache tree left valid where it should not be would give the old tree) and the status agree,
 * and git finds every file clean by its stat data; a split index the same, round after round and
 * with git writing between. Forms the writer leaves to git leave the index untouched.
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
  utimes,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readGit, runGit } from '../../../src/workers/workspace/git.js';
import { writeLooseObject } from '../../../src/workers/workspace/git-files.js';
import { type CommittedPath, writeIndexUpdates } from '../../../src/workers/workspace/index-file.js';
import { parseIndex } from '../../../src/workers/workspace/index-format.js';
import { createRandom, putRandomFile, type Random, randomPath } from '../../helpers/random.js';

let root: string;
let counter = 0;
const ID = ['-c', 'user.name=t', '-c', 'user.email=t@t'];

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'flotilla-index-file-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

const git = (dir: string, ...args: string[]) => readGit(args, { cwd: dir });

async function putFile(dir: string, path: string, text: string): Promise<void> {
  await mkdir(join(dir, path, '..'), { recursive: true });
  await writeFile(join(dir, path), text);
}

async function committedRepo(random: Random, files = 30): Promise<string> {
  const dir = join(root, `repo-${++counter}`);
  await mkdir(dir);
  await runGit(['init', '--quiet', dir]);
  for (let i = 0; i < files; i++) await putRandomFile(dir, randomPath(random), random, `base ${i}`);
  await git(dir, 'add', '--all');
  await git(dir, ...ID, 'commit', '--quiet', '--allow-empty', '-m', 'base');
  return dir;
}

/** The paths `git status` lists as changed, untracked files one by one. */
async function changedPaths(dir: string): Promise<string[]> {
  const out = await git(dir, 'status', '--porcelain=v1', '-z', '--untracked-files=all', '--no-renames');
  return out
    .split('\0')
    .filter(Boolean)
    .map((line) => line.slice(3));
}

/**
 * Each path as the checkout has it now, as commit.ts reads it for the attempt's commit (a folder
 * where a file was is left out), its blob written as the commit writes it.
 */
async function committed(dir: string, paths: readonly string[]): Promise<CommittedPath[]> {
  const out: CommittedPath[] = [];
  for (const path of paths) {
    const full = join(dir, path);
    const info = await lstat(full, { bigint: true }).catch(() => null);
    if (info?.isDirectory()) continue;
    if (!info) {
      out.push({ path, entry: null });
      continue;
    }
    const entry = info.isSymbolicLink()
      ? { mode: '120000' as const, content: await readlink(full, { encoding: 'buffer' }), seen: info }
      : {
          mode: info.mode & 0o100n ? ('100755' as const) : ('100644' as const),
          content: await readFile(full),
          seen: info,
        };
    await writeLooseObject(join(dir, '.git'), 'blob', entry.content);
    out.push({ path, entry });
  }
  return out;
}

async function indexView(dir: string) {
  return {
    entries: await git(dir, 'ls-files', '--stage', '-z'),
    tree: await git(dir, 'write-tree'),
    status: await git(dir, 'status', '--porcelain=v1', '-z', '--untracked-files=all'),
  };
}

/** A new file, `new.txt`: the changed path of most declined cases. */
async function newFile(dir: string): Promise<string[]> {
  await writeFile(join(dir, 'new.txt'), 'new\n');
  return ['new.txt'];
}

/** The first tracked file, flagged with `flag` and changed. */
async function flaggedFile(dir: string, flag: string): Promise<string[]> {
  const [first = ''] = (await git(dir, 'ls-files')).split('\n');
  await git(dir, 'update-index', flag, '--', first);
  await writeFile(join(dir, first), 'changed\n');
  return [first];
}

/** A case the in-process update leaves to git: the checkout made so, the paths read for the commit. */
interface Declined {
  readonly arrange: (dir: string) => Promise<string[]>;
  /** Runs after the paths were read for the commit, before the index update. */
  readonly afterRead?: (dir: string) => Promise<void>;
  /** The index size bound given to the update. */
  readonly bound?: number;
}

const DECLINED: Record<string, Declined> = {
  'an unmerged entry at a changed path': {
    arrange: async (dir) => {
      const blob = await runGit(['hash-object', '-w', '--stdin'], { cwd: dir, input: 'x\n' });
      const id = blob.stdout.trim();
      await runGit(['update-index', '--index-info'], {
        cwd: dir,
        input: `100644 ${id} 1\tconflict.txt\n100644 ${id} 2\tconflict.txt\n`,
      });
      await writeFile(join(dir, 'conflict.txt'), 'x\n');
      return ['conflict.txt'];
    },
  },
  'an index of version 4': {
    arrange: async (dir) => {
      await git(dir, 'update-index', '--index-version', '4');
      return newFile(dir);
    },
  },
  'a split index whose entries outside the shared one would pass a fifth of it (git writes a new shared one)':
    {
      arrange: async (dir) => {
        await git(dir, 'update-index', '--split-index');
        // Two files added to the five of the shared index: 2 of 7 entries.
        await writeFile(join(dir, 'new-2.txt'), 'new\n');
        return [...(await newFile(dir)), 'new-2.txt'];
      },
    },
  'a lock another git holds': {
    arrange: async (dir) => {
      await writeFile(join(dir, '.git', 'index.lock'), '');
      return newFile(dir);
    },
  },
  'a skip-worktree entry at a changed path': { arrange: (dir) => flaggedFile(dir, '--skip-worktree') },
  'an assume-unchanged entry at a changed path': { arrange: (dir) => flaggedFile(dir, '--assume-unchanged') },
  'a repository with core.fileMode off (git keeps the index’s modes)': {
    arrange: async (dir) => {
      await git(dir, 'config', 'core.fileMode', 'false');
      return newFile(dir);
    },
  },
  'a file rewritten, the same size, since it was read': {
    arrange: newFile,
    afterRead: (dir) => writeFile(join(dir, 'new.txt'), 'old\n'),
  },
  'a file that changed since it was read': {
    arrange: newFile,
    afterRead: (dir) => writeFile(join(dir, 'new.txt'), 'new and longer\n'),
  },
  'an index larger than the bound (git reads and writes a large one faster)': {
    arrange: newFile,
    bound: 100,
  },
};

/** A file name as UTF-8, and one that is not (latin1 `café.txt`), with `git status` showing each. */
const NAMES: [string, Buffer, string][] = [
  ['a UTF-8 name', Buffer.from('same.txt'), 'same.txt'],
  [
    'a name that is not UTF-8',
    Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x2e, 0x74, 0x78, 0x74]),
    '"caf\\351.txt"',
  ],
];

/** `dir/name` with the name's bytes as they are. */
function pathIn(dir: string, name: Buffer): Buffer {
  return Buffer.concat([Buffer.from(`${dir}/`), name]);
}

/** `git status` of what the index tracks, read without letting git write the index (which would smudge it itself). */
async function trackedStatus(dir: string): Promise<string[]> {
  const out = await git(dir, '--no-optional-locks', 'status', '--porcelain');
  return out
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('??'))
    .sort();
}

describe('the index moved in-process', () => {
  const SEEDS = Array.from({ length: 16 }, (_, i) => i + 1);
  let applied = 0;

  it.each(SEEDS)('holds what git update-index makes of the same changes (seed %i)', async (seed) => {
    const random = createRandom(seed);
    const dir = await committedRepo(random);
    await randomChanges(dir, random, 10, 'change');
    const paths = (await changedPaths(dir)).sort();
    const byGitDir = `${dir}-git`;
    await cp(dir, byGitDir, { recursive: true, preserveTimestamps: true, verbatimSymlinks: true });
    // Every change staged, as update-index of the listed paths stages them (and where a link
    // took a folder's place, which update-index refuses, as git add does).
    await git(byGitDir, 'add', '--all');
    const before = await readFile(join(dir, '.git', 'index'));
    expect(parseIndex(before)).not.toBeNull();
    const done = await writeIndexUpdates(dir, await committed(dir, paths));
    if (!done) {
      // Left to git: the index as it was.
      expect(await readFile(join(dir, '.git', 'index'))).toEqual(before);
      return;
    }
    applied += 1;
    // Clean by stat data alone: git would have to rehash nothing the update wrote.
    expect(await git(dir, 'diff-files', '--name-only')).toBe('');
    expect(await indexView(dir)).toEqual(await indexView(byGitDir));
  });

  it('took every one of the random changes itself (files become folders and back included)', () => {
    expect(applied).toBe(SEEDS.length);
  });

  it.each(NAMES)(
    'writes a racily clean entry it does not change with size 0, as git would, so git sees the edit (%s)',
    async (_kind, name, shown) => {
      const random = createRandom(99);
      const dir = await committedRepo(random, 0);
      const file = pathIn(dir, name);
      // core.trustctime off: only the times and size git records can tell a change, as on some systems.
      await git(dir, 'config', 'core.trustctime', 'false');
      await writeFile(file, 'one\n');
      // Modified a minute ago, before the index git writes next: not racy then, so not smudged.
      const second = Math.floor(Date.now() / 1000) - 60;
      await utimes(file, second + 0.1, second + 0.1);
      await git(dir, 'add', '--all');
      await writeFile(join(dir, 'other.txt'), 'x\n');
      // The same size, the same second (another nanosecond, which a git built without nanosecond
      // times does not compare), and the index written in that second too: only the contents say
      // it changed, and the entry is racy, as git's was when it wrote the index.
      await writeFile(file, 'two\n');
      await utimes(file, second + 0.7, second + 0.7);
      await utimes(join(dir, '.git', 'index'), second + 0.5, second + 0.5);
      expect(await trackedStatus(dir)).toEqual([`AM ${shown}`]);
      expect(await writeIndexUpdates(dir, await committed(dir, ['other.txt']))).toBe(true);
      // Had the entry kept its size, git would trust it against the newer index and miss the edit.
      expect(await trackedStatus(dir)).toEqual([`AM ${shown}`, 'A  other.txt'].sort());
    },
  );

  it('takes away the entries below a path that becomes a file, past names that sort between them', async () => {
    const dir = await committedRepo(createRandom(5), 0);
    for (const path of ['a-b', 'a.c', 'a/x', 'a/y/z']) await putFile(dir, path, `${path}\n`);
    await git(dir, 'add', '--all');
    await git(dir, ...ID, 'commit', '--quiet', '-m', 'folder a');
    await rm(join(dir, 'a'), { recursive: true });
    await writeFile(join(dir, 'a'), 'now a file\n');
    const byGitDir = `${dir}-git`;
    await cp(dir, byGitDir, { recursive: true, preserveTimestamps: true, verbatimSymlinks: true });
    await runGit(['update-index', '--add', '--remove', '--replace', '--', 'a'], { cwd: byGitDir });
    // Only `a` is named: --replace itself takes `a/x` and `a/y/z` away.
    expect(await writeIndexUpdates(dir, await committed(dir, ['a']))).toBe(true);
    expect(await git(dir, 'ls-files')).toBe('a\na-b\na.c');
    expect(await indexView(dir)).toEqual(await indexView(byGitDir));
  });

  it.each(Object.entries(DECLINED))('leaves %s to git, the index untouched', async (_name, declined) => {
    const dir = await committedRepo(createRandom(7), 5);
    const entries = await committed(dir, await declined.arrange(dir));
    await declined.afterRead?.(dir);
    const before = await readFile(join(dir, '.git', 'index'));
    expect(await writeIndexUpdates(dir, entries, declined.bound)).toBe(false);
    expect(await readFile(join(dir, '.git', 'index'))).toEqual(before);
  });
});

/** Random changes to `dir`: files written (links, modes, files where folders were) and paths removed. */
async function randomChanges(dir: string, random: Random, count: number, tag: string): Promise<void> {
  for (let i = 0; i < count; i++) {
    const path = randomPath(random);
    if (random.chance(0.3))
      await rm(join(dir, path), { recursive: true, force: true }).catch(() => undefined);
    else await putRandomFile(dir, path, random, `${tag} ${i}`);
  }
}

/** The shared index files beside the index. */
async function splitFiles(dir: string): Promise<{ shared: string[] }> {
  const names = await readdir(join(dir, '.git'));
  return { shared: names.filter((name) => name.startsWith('sharedindex.')).sort() };
}

describe('a split index moved in-process (core.splitIndex, as the warm checkouts of a large tree have)', () => {
  /** A repository of `files` files, its index split: every entry in the shared index. */
  async function splitRepo(random: Random, files: number): Promise<string> {
    const dir = await committedRepo(random, 0);
    for (let i = 0; i < files; i++) await putFile(dir, `base/d${i % 10}/f${i}.txt`, `base ${i}\n`);
    await git(dir, 'add', '--all');
    await git(dir, ...ID, 'commit', '--quiet', '-m', 'base files');
    await git(dir, 'update-index', '--split-index');
    return dir;
  }

  it('holds what git update-index makes of the same changes, round after round, git writing in between', async () => {
    const random = createRandom(42);
    const dir = await splitRepo(random, 300);
    let ours = 0;
    for (let round = 0; round < 12; round++) {
      await randomChanges(dir, random, 6, `round ${round}`);
      // Now and then a file of the shared index edited too, so a shared entry is replaced.
      await writeFile(join(dir, `base/d${round % 10}/f${round * 10 + (round % 10)}.txt`), `round ${round}\n`);
      const paths = (await changedPaths(dir)).sort();
      const byGitDir = `${dir}-git-${round}`;
      await cp(dir, byGitDir, { recursive: true, preserveTimestamps: true, verbatimSymlinks: true });
      await git(byGitDir, 'add', '--all');
      if (round % 4 === 3) {
        // git writes this round's index: the next round reads what git made of the split.
        await git(dir, 'add', '--all');
      } else {
        const before = await splitFiles(dir);
        expect(await writeIndexUpdates(dir, await committed(dir, paths))).toBe(true);
        ours += 1;
        // The shared index stays as it was: the write was of the split file alone.
        expect((await splitFiles(dir)).shared).toEqual(before.shared);
      }
      expect(await git(dir, 'diff-files', '--name-only')).toBe('');
      expect(await indexView(dir)).toEqual(await indexView(byGitDir));
      // git reads the written index whole: every entry, the shared ones included.
      expect(await git(dir, 'ls-files', '--stage', '-z')).toBe(
        await git(byGitDir, 'ls-files', '--stage', '-z'),
      );
      await rm(byGitDir, { recursive: true, force: true });
    }
    expect(ours).toBe(9);
    // git's own checks of the index it reads: its entries in order, the cache tree, the link.
    await git(dir, 'fsck', '--no-progress', '--cache', '--no-dangling');
  });

  it.each(Array.from({ length: 8 }, (_, i) => i + 1))(
    'holds what git makes of random changes, files becoming folders and back (seed %i)',
    async (seed) => {
      const random = createRandom(seed * 7);
      const dir = await splitRepo(random, 200);
      for (let i = 0; i < 20; i++) await putRandomFile(dir, randomPath(random), random, `base ${i}`);
      await git(dir, 'add', '--all');
      await git(dir, ...ID, 'commit', '--quiet', '-m', 'tricky names');
      await git(dir, 'update-index', '--split-index');
      await randomChanges(dir, random, 10, 'change');
      const paths = (await changedPaths(dir)).sort();
      const byGitDir = `${dir}-git`;
      await cp(dir, byGitDir, { recursive: true, preserveTimestamps: true, verbatimSymlinks: true });
      await git(byGitDir, 'add', '--all');
      expect(await writeIndexUpdates(dir, await committed(dir, paths))).toBe(true);
      expect(await git(dir, 'diff-files', '--name-only')).toBe('');
      expect(await indexView(dir)).toEqual(await indexView(byGitDir));
    },
  );

  it('adds a long path that sorts just before the shared index’s last, short entry', async () => {
    const dir = await committedRepo(createRandom(11), 0);
    for (let i = 1; i <= 40; i++) await putFile(dir, `a${i}`, `${i}\n`);
    await putFile(dir, 'b', 'b\n');
    await git(dir, 'add', '--all');
    await git(dir, ...ID, 'commit', '--quiet', '-m', 'a and b');
    await git(dir, 'update-index', '--split-index');
    // Looking for entries below the new path reads past `b`, the last entry, into the file's end.
    await putFile(dir, 'az/very/long/path/name/file.txt', 'new\n');
    const byGitDir = `${dir}-git`;
    await cp(dir, byGitDir, { recursive: true, preserveTimestamps: true, verbatimSymlinks: true });
    await git(byGitDir, 'add', '--all');
    expect(await writeIndexUpdates(dir, await committed(dir, ['az/very/long/path/name/file.txt']))).toBe(
      true,
    );
    expect(await indexView(dir)).toEqual(await indexView(byGitDir));
  });

  it.each([
    ['the shared index alone', ...(NAMES[0] ?? [])],
    ['a replacing entry', ...(NAMES[0] ?? [])],
    ['an added entry', ...(NAMES[0] ?? [])],
    ['the shared index alone', ...(NAMES[1] ?? [])],
  ] as [string, string, Buffer, string][])(
    'writes a racily clean entry in %s with size 0 (%s), so git sees the edit',
    async (where, _kind, name, shown) => {
      const dir = await splitRepo(createRandom(3), 20);
      const file = pathIn(dir, name);
      await git(dir, 'config', 'core.trustctime', 'false');
      await writeFile(file, 'one\n');
      // Modified a minute ago: older than the index git writes next, so its entry is not smudged.
      const second = Math.floor(Date.now() / 1000) - 60;
      await utimes(file, second + 0.1, second + 0.1);
      if (where !== 'an added entry') await git(dir, 'add', '--all');
      await git(dir, 'update-index', '--split-index');
      // Another size, so git sees the file changed and writes its entry anew, replacing the shared one.
      const edit = where === 'a replacing entry' ? ['ONE!\n', 'two!\n'] : ['one\n', 'two\n'];
      if (where === 'a replacing entry') {
        await writeFile(file, edit[0] ?? '');
        await utimes(file, second + 0.1, second + 0.1);
      }
      if (where !== 'the shared index alone') await git(dir, 'add', '--all');
      await writeFile(join(dir, 'other.txt'), 'x\n');
      await writeFile(file, edit[1] ?? '');
      await utimes(file, second + 0.7, second + 0.7);
      await utimes(join(dir, '.git', 'index'), second + 0.5, second + 0.5);
      expect(await trackedStatus(dir)).toEqual([`AM ${shown}`]);
      const before = await splitFiles(dir);
      expect(await writeIndexUpdates(dir, await committed(dir, ['other.txt']))).toBe(true);
      expect((await splitFiles(dir)).shared).toEqual(before.shared);
      // Had the entry kept its size, git would trust it against the newer index and miss the edit.
      expect(await trackedStatus(dir)).toEqual([`AM ${shown}`, 'A  other.txt'].sort());
    },
  );
});
