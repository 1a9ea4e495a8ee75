import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { detachedHead, gitDirOf, writeDetachedHead } from '../../../src/workers/workspace/checkout-head.js';
import { readGit, runGit } from '../../../src/workers/workspace/git.js';

/**
 * A worktree of a `clone --shared` of a repository, as a host's warm checkout of a local mission
 * repo is: a commit made in the repository is a loose object the worktree borrows.
 */
let root: string;
let origin: string;
let worktree: string;
let base: string;
const identity = ['-c', 'user.name=t', '-c', 'user.email=t@t'];

async function commitIn(repo: string, message: string): Promise<string> {
  const tree = await readGit(['mktree'], { cwd: repo, input: '' });
  return readGit([...identity, 'commit-tree', tree, '-p', base, '-m', message], { cwd: repo });
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'flotilla-checkout-head-'));
  origin = join(root, 'origin');
  await runGit(['init', '--quiet', origin]);
  await runGit([...identity, 'commit', '--quiet', '--allow-empty', '-m', 'base'], { cwd: origin });
  base = await readGit(['rev-parse', 'HEAD'], { cwd: origin });
  const cache = join(root, 'cache');
  await runGit(['clone', '--quiet', '--no-checkout', '--shared', origin, cache]);
  worktree = join(root, 'worktree');
  await runGit(['worktree', 'add', '--quiet', '--detach', worktree, base], { cwd: cache });
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('writeDetachedHead', () => {
  it('moves HEAD to a commit the checkout borrows from the repository it was cloned from', async () => {
    const later = await commitIn(origin, 'later');
    expect(await writeDetachedHead(worktree, later)).toBe(true);
    expect(await detachedHead(worktree)).toBe(later);
    expect(await readGit(['rev-parse', 'HEAD'], { cwd: worktree })).toBe(later);
    expect(await readGit(['status', '--porcelain'], { cwd: worktree })).toBe('');
  });

  it('leaves HEAD to git in a reftable repository, where the HEAD file is not where HEAD is', async () => {
    const later = await commitIn(origin, 'later, reftable');
    const before = await detachedHead(worktree);
    // git 2.39 cannot make one: the folder a reftable repository keeps its refs in is what is looked for.
    const tables = join(root, 'cache', '.git', 'reftable');
    await mkdir(tables);
    try {
      expect(await writeDetachedHead(worktree, later)).toBe(false);
      expect(await detachedHead(worktree)).toBe(before);
    } finally {
      await rm(tables, { recursive: true });
    }
  });

  it('leaves HEAD alone for a commit the checkout cannot see, so git is asked (and refuses)', async () => {
    const elsewhere = join(root, 'elsewhere');
    await runGit(['init', '--quiet', elsewhere]);
    await runGit([...identity, 'commit', '--quiet', '--allow-empty', '-m', 'other'], { cwd: elsewhere });
    const foreign = await readGit(['rev-parse', 'HEAD'], { cwd: elsewhere });
    const before = await detachedHead(worktree);
    expect(await writeDetachedHead(worktree, foreign)).toBe(false);
    expect(await detachedHead(worktree)).toBe(before);
  });

  it('moves HEAD to a packed commit it reads, and leaves it alone for one only git could find', async () => {
    const packed = await commitIn(origin, 'packed');
    await runGit(['update-ref', 'refs/heads/packed', packed], { cwd: origin });
    await runGit(['repack', '-a', '-d', '-q'], { cwd: origin });
    await runGit(['prune-packed'], { cwd: origin });
    expect(await writeDetachedHead(worktree, packed)).toBe(true);
    expect(await detachedHead(worktree)).toBe(packed);
    // A pack whose index is of version 1 (git before 1.5.2) the reader does not read.
    const older = await commitIn(origin, 'older');
    await runGit(['update-ref', 'refs/heads/older', older], { cwd: origin });
    await runGit(['-c', 'pack.indexVersion=1', 'repack', '-a', '-d', '-q'], { cwd: origin });
    await runGit(['prune-packed'], { cwd: origin });
    expect(await writeDetachedHead(worktree, older)).toBe(false);
    expect(await detachedHead(worktree)).toBe(packed);
    expect(await writeDetachedHead(worktree, '1'.repeat(40))).toBe(false);
    expect(await detachedHead(worktree)).toBe(packed);
  });

  it('leaves HEAD and a lock it did not take alone', async () => {
    const later = await commitIn(origin, 'locked');
    const lock = join(await gitDirOf(worktree), 'HEAD.lock');
    await writeFile(lock, 'another git\n');
    try {
      const before = await detachedHead(worktree);
      expect(await writeDetachedHead(worktree, later)).toBe(false);
      expect(await detachedHead(worktree)).toBe(before);
      expect(await readFile(lock, 'utf8')).toBe('another git\n');
    } finally {
      await rm(lock, { force: true });
    }
  });

  it('refuses what is not an object id', async () => {
    expect(await writeDetachedHead(worktree, 'refs/heads/main')).toBe(false);
  });
});
