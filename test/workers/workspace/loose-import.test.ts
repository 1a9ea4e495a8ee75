/**
 * An attempt's commits written in-process (src/workers/workspace/loose-import.ts) against `git
 * fast-import` on the same repository: for seeded random changes (edits, new files in new and old
 * folders, deletions that empty a folder, a file become a folder and back, modes, links, names
 * that sort around `/`), the in-process ids equal git's, so every object is byte for byte git's.
 */
import { mkdir, mkdtemp, readFile, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ImportCommit,
  type ImportEntry,
  importStream,
} from '../../../src/workers/workspace/fast-import.js';
import { readGit, runGit } from '../../../src/workers/workspace/git.js';
import {
  compareEntries,
  looseImport,
  parseTree,
  refNameGitTakes,
  treeBody,
} from '../../../src/workers/workspace/loose-import.js';
import { createRandom, type Random } from '../../helpers/random.js';

let root: string;
let counter = 0;
const ID = ['-c', 'user.name=t', '-c', 'user.email=t@t'];

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'flotilla-loose-import-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** Names chosen to sort around `/` (0x2f): `a-b`, `a.b`, `a0` against a folder `a`. */
const NAMES = ['a', 'a-b', 'a.b', 'a0', 'b', 'zé', 'Z', 'x y', 'dir', 'dir.txt'];

/** A repository whose first commit holds a random tree (loose objects), and that commit. */
async function baseRepo(random: Random) {
  const dir = join(root, `repo-${++counter}`);
  await mkdir(dir);
  await runGit(['init', '--quiet', dir]);
  const files: string[] = [];
  for (let i = 0; i < 25; i++) {
    const depth = random.int(3);
    const parts = Array.from({ length: depth + 1 }, () => random.pick(NAMES));
    const path = parts.join('/');
    if (files.some((f) => f.startsWith(`${path}/`) || path.startsWith(`${f}/`) || f === path)) continue;
    files.push(path);
    await mkdir(join(dir, ...parts.slice(0, -1)), { recursive: true });
    if (random.chance(0.1)) await symlink(`target-${i}`, join(dir, path));
    else await writeFile(join(dir, path), `file ${i}\n`, { mode: random.chance(0.2) ? 0o755 : 0o644 });
  }
  await runGit(['add', '--all'], { cwd: dir });
  await runGit([...ID, 'commit', '--quiet', '-m', 'base'], { cwd: dir });
  return { dir, gitDir: join(dir, '.git'), base: await readGit(['rev-parse', 'HEAD'], { cwd: dir }), files };
}

/** Random entries against `files`: edits, deletions, new files (new folders too), type flips. */
function randomEntries(random: Random, files: readonly string[]): ImportEntry[] {
  const entries = new Map<string, ImportEntry>();
  const content = (i: number) => Buffer.from(`changed ${i} ${random.int(1000)}\n`);
  for (let i = 0; i < 12; i++) {
    const roll = random.int(6);
    const existing = random.pick(files);
    if (roll === 0) entries.set(existing, { path: existing, deleted: true });
    else if (roll === 1) entries.set(existing, { path: existing, mode: '100755', content: content(i) });
    else if (roll === 2) {
      // A file become a folder: the file goes, a file below its name comes.
      entries.set(existing, { path: existing, deleted: true });
      entries.set(`${existing}/inside`, { path: `${existing}/inside`, mode: '100644', content: content(i) });
    } else if (roll === 3) {
      const path = [random.pick(NAMES), random.pick(NAMES), `new-${i}`].join('/');
      entries.set(path, { path, mode: '100644', content: content(i) });
    } else if (roll === 4) {
      const path = `${random.pick(NAMES)}-link-${i}`;
      entries.set(path, { path, mode: '120000', content: Buffer.from(`somewhere/${i}`) });
    } else entries.set(existing, { path: existing, mode: '100644', content: content(i) });
  }
  // Folders a new path needs must not be files the base keeps (fast-import would replace them).
  return [...entries.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

function commitsOf(ref: string, base: string, work: ImportEntry[], dispatch: ImportEntry[]): ImportCommit[] {
  const common = { committer: 'Flo <f@x>', author: 'Agent <a@x>', time: 1_700_000_000 };
  return [
    { ...common, ref, mark: 1, parent: base, message: 'work\n\nFlotilla-Attempt: m/t/a1\n', entries: work },
    { ...common, ref, mark: 2, parent: ':1', message: 'work (dispatch files)', entries: dispatch },
  ];
}

async function fastImport(dir: string, commits: ImportCommit[]): Promise<string[]> {
  const out = await runGit(['fast-import', '--quiet', '--done', '--force'], {
    cwd: dir,
    input: importStream(commits),
  });
  return out.stdout.trim().split('\n');
}

describe('an attempt’s commits written in-process', () => {
  it.each(Array.from({ length: 12 }, (_, i) => i + 1))(
    'writes what git fast-import writes, seed %i',
    async (seed) => {
      const random = createRandom(seed);
      const { dir, gitDir, base, files } = await baseRepo(random);
      const work = randomEntries(random, files);
      const dispatch: ImportEntry[] = [
        { path: '.planning/dispatch/t-a1-PROMPT.md', mode: '100644', content: Buffer.from('prompt\n') },
      ];
      const ours = await looseImport(gitDir, commitsOf('refs/flotilla/ours', base, work, dispatch));
      expect(ours).not.toBeNull();
      const theirs = await fastImport(dir, commitsOf('refs/flotilla/theirs', base, work, dispatch));
      expect(ours).toEqual(theirs);
      expect(await readGit(['rev-parse', 'refs/flotilla/ours'], { cwd: dir })).toBe(theirs[1]);
      expect(
        (await runGit(['fsck', '--strict', '--no-dangling'], { cwd: dir, allowFailure: true })).exitCode,
      ).toBe(0);
    },
  );

  it('deletes every file of a folder, and the folder with them, as git does', async () => {
    const random = createRandom(99);
    const { dir, gitDir, base, files } = await baseRepo(random);
    const work: ImportEntry[] = [...files].sort().map((path) => ({ path, deleted: true }));
    const ours = await looseImport(gitDir, commitsOf('refs/flotilla/ours', base, work, []));
    const theirs = await fastImport(dir, commitsOf('refs/flotilla/theirs', base, work, []));
    expect(ours).toEqual(theirs);
    // Nothing left: the empty tree.
    expect(await readGit(['rev-parse', `${theirs[0]}^{tree}`], { cwd: dir })).toBe(
      '4b825dc642cb6eb9a060e54bf8d69288fbee4904',
    );
  });

  it('never takes over an attempt ref’s lock, however old; writes once it is gone', async () => {
    const random = createRandom(11);
    const { dir, gitDir, base, files } = await baseRepo(random);
    const work = randomEntries(random, files);
    await mkdir(join(gitDir, 'refs', 'flotilla'), { recursive: true });
    const lock = join(gitDir, 'refs', 'flotilla', 'ours.lock');
    await writeFile(lock, 'a writer at work\n');
    // An hour old: a killed host's, or a live writer's; neither git nor flotilla can tell.
    const old = (Date.now() - 3_600_000) / 1000;
    await utimes(lock, old, old);
    expect(await looseImport(gitDir, commitsOf('refs/flotilla/ours', base, work, []))).toBeNull();
    expect(await readFile(lock, 'utf8')).toBe('a writer at work\n');
    await rm(lock);
    const ids = await looseImport(gitDir, commitsOf('refs/flotilla/ours', base, work, []));
    expect(ids).not.toBeNull();
    expect(await readGit(['rev-parse', 'refs/flotilla/ours'], { cwd: dir })).toBe(ids?.[1]);
  });

  it('leaves it to git in a repository that matches names ignoring case (macOS, Windows)', async () => {
    const random = createRandom(21);
    const { dir, gitDir, base, files } = await baseRepo(random);
    await runGit(['config', 'core.ignoreCase', 'true'], { cwd: dir });
    expect(
      await looseImport(gitDir, commitsOf('refs/flotilla/ours', base, randomEntries(random, files), [])),
    ).toBeNull();
  });

  it('leaves it to git when a change deletes a folder whole (fast-import removes it; flotilla lists files)', async () => {
    const random = createRandom(3);
    const { gitDir, base, files } = await baseRepo(random);
    const folder = files.find((path) => path.includes('/'))?.split('/')[0] ?? '';
    expect(folder).not.toBe('');
    expect(
      await looseImport(gitDir, commitsOf('refs/flotilla/ours', base, [{ path: folder, deleted: true }], [])),
    ).toBeNull();
  });

  it.each([
    'refs/flotilla/../../config',
    'refs/flotilla/a b',
    'refs/flotilla/a..b',
    'refs/flotilla/x.lock',
    'refs/flotilla/.hidden',
    'refs/flotilla//dbl',
  ])('refuses a ref name git would not take: %s', (ref) => {
    expect(refNameGitTakes(ref)).toBe(false);
  });

  it('takes an attempt ref’s name', () => {
    expect(refNameGitTakes('refs/flotilla/mission-1a2b/build_x/a3')).toBe(true);
  });

  it('leaves a branch to git (its reflog, a checkout of it): attempt refs only', async () => {
    const random = createRandom(5);
    const { gitDir, base, files } = await baseRepo(random);
    expect(
      await looseImport(gitDir, commitsOf('refs/heads/feature', base, randomEntries(random, files), [])),
    ).toBeNull();
  });

  it('reads the trees it needs from git’s packs, deltas and all', async () => {
    const random = createRandom(8);
    const { dir, gitDir, base, files } = await baseRepo(random);
    await runGit(['repack', '-a', '-d', '-q', '-f'], { cwd: dir });
    await runGit(['prune-packed'], { cwd: dir });
    const work = randomEntries(random, files);
    const ours = await looseImport(gitDir, commitsOf('refs/flotilla/ours', base, work, []));
    const theirs = await fastImport(dir, commitsOf('refs/flotilla/theirs', base, work, []));
    expect(ours).toEqual(theirs);
    expect(
      (await runGit(['fsck', '--strict', '--no-dangling'], { cwd: dir, allowFailure: true })).exitCode,
    ).toBe(0);
  });

  it('leaves it to git when a tree it needs is where it does not read (an index of version 1)', async () => {
    const random = createRandom(7);
    const { dir, gitDir, base, files } = await baseRepo(random);
    await runGit(['-c', 'pack.indexVersion=1', 'repack', '-a', '-d', '-q'], { cwd: dir });
    await runGit(['prune-packed'], { cwd: dir });
    const work = randomEntries(random, files);
    expect(await looseImport(gitDir, commitsOf('refs/flotilla/ours', base, work, []))).toBeNull();
    expect(
      (await runGit(['rev-parse', '--verify', '-q', 'refs/flotilla/ours'], { cwd: dir, allowFailure: true }))
        .exitCode,
    ).not.toBe(0);
  });

  it('orders a tree’s entries as git does, a folder compared as if its name ended in a slash', () => {
    const entry = (name: string, mode: string) => ({ name: Buffer.from(name), mode, id: '0'.repeat(40) });
    const sorted = [
      entry('a', '40000'),
      entry('a-b', '100644'),
      entry('a.b', '100644'),
      entry('a0', '100644'),
    ].sort(compareEntries);
    expect(sorted.map((e) => e.name.toString())).toEqual(['a-b', 'a.b', 'a', 'a0']);
    expect(parseTree(treeBody(sorted))).toEqual(sorted);
  });
});
