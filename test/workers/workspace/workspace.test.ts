import { mkdir, mkdtemp, readFile, rm, stat, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { attemptRef, integrationBranch } from '../../../src/shared/contracts.js';
import { isFlotillaError } from '../../../src/shared/errors.js';
import { diffAgainstIntegration } from '../../../src/workers/workspace/attempt-checkout.js';
import { commitAttempt } from '../../../src/workers/workspace/commit.js';
import { runGit } from '../../../src/workers/workspace/git.js';
import { integrateAttempt } from '../../../src/workers/workspace/integrate.js';
import { prepareWorkspace } from '../../../src/workers/workspace/prepare-workspace.js';
import { openRepoCache, type RepoCache } from '../../../src/workers/workspace/repo-cache.js';
import { snapshotChanges } from '../../../src/workers/workspace/snapshot-changes.js';
import { removeWorktree } from '../../../src/workers/workspace/worktree.js';
import { enforceWriteScope } from '../../../src/workers/workspace/write-scope.js';
import { checkoutAttempt, checkoutForVerify } from '../../helpers/checkouts.js';

// The tests must pass on a machine with no git identity at all: the global and system config are
// hidden, and `user.useConfigOnly` stops git from guessing one from the host name, so every commit
// below relies on flotilla's own fallback identity.
const savedEnv = { ...process.env };
let root: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'flotilla-workspace-'));
  await writeFile(join(root, 'empty-gitconfig'), '');
  process.env.GIT_CONFIG_GLOBAL = join(root, 'empty-gitconfig');
  process.env.GIT_CONFIG_NOSYSTEM = '1';
  process.env.GIT_CONFIG_COUNT = '1';
  process.env.GIT_CONFIG_KEY_0 = 'user.useConfigOnly';
  process.env.GIT_CONFIG_VALUE_0 = 'true';
  for (const key of [
    'GIT_AUTHOR_NAME',
    'GIT_AUTHOR_EMAIL',
    'GIT_COMMITTER_NAME',
    'GIT_COMMITTER_EMAIL',
    'EMAIL',
  ]) {
    delete process.env[key];
  }
});

afterAll(async () => {
  process.env = savedEnv;
  await rm(root, { recursive: true, force: true });
});

let counter = 0;
function scratch(name: string): string {
  counter += 1;
  return join(root, `${name}-${counter}`);
}

async function git(cwd: string, ...args: string[]): Promise<string> {
  return (await runGit(args, { cwd })).stdout.trim();
}

/** A plain folder with a few files, made a mission repo with an integration branch. */
async function missionRepo(missionId: string) {
  const dir = scratch('mission');
  await mkdir(join(dir, 'src'), { recursive: true });
  await writeFile(join(dir, 'README.md'), '# calc\n');
  await writeFile(join(dir, 'shared.txt'), 'line 1\nline 2\nline 3\n');
  await writeFile(join(dir, 'src', 'calc.ts'), 'export const add = (a: number, b: number) => a + b;\n');
  return prepareWorkspace({ workspace: dir, missionId });
}

interface Host {
  cache: RepoCache;
  workRoot: string;
}

async function host(repo: string): Promise<Host> {
  const cacheDir = scratch('cache');
  return { cache: await openRepoCache({ repo, cacheDir }), workRoot: scratch('work') };
}

/** One attempt that writes `files`, commits and pushes; returns its ref and commits. */
async function attemptWriting(h: Host, missionId: string, taskId: string, files: Record<string, string>) {
  const checkout = await checkoutAttempt({ ...h, missionId, taskId, attempt: 1 });
  for (const [path, text] of Object.entries(files)) {
    await mkdir(join(checkout.dir, path, '..'), { recursive: true });
    await writeFile(join(checkout.dir, path), text);
  }
  const ref = attemptRef(missionId, taskId, 1);
  const committed = await commitAttempt({ dir: checkout.dir, message: `${taskId}: work`, ref });
  await removeWorktree(checkout.dir);
  return { ...checkout, ref, commit: committed.commit, workCommit: committed.workCommit };
}

/** What the gate passes to integrateAttempt for an attempt made by attemptWriting(). */
function merging(made: { ref: string; workCommit: string }, taskId: string) {
  return { attemptId: `${taskId}/a1`, ref: made.ref, workCommit: made.workCommit };
}

describe('prepareWorkspace', () => {
  it('makes a plain folder a repository with the integration branch at its first commit', async () => {
    const prepared = await missionRepo('m1');
    expect(prepared.branch).toBe('flotilla/m1');
    expect(prepared.repo.startsWith('/')).toBe(true);
    expect(await git(prepared.repo, 'rev-parse', 'flotilla/m1')).toBe(prepared.baseCommit);
    expect(await git(prepared.repo, 'show', `${prepared.baseCommit}:src/calc.ts`)).toContain('add');
    expect(await git(prepared.repo, 'log', '-1', '--format=%an <%ae>')).toBe('flotilla <flotilla@localhost>');
    expect(prepared.notes).toEqual([
      expect.stringMatching(
        /was not a git repository: made it one and committed its \d+ files? \(.*src\/calc\.ts/,
      ),
    ]);
    // Preparing again (a re-submitted mission) keeps the branch where it is, with nothing to say.
    expect(await prepareWorkspace({ workspace: prepared.repo, missionId: 'm1' })).toEqual({
      ...prepared,
      notes: [],
    });
  });

  it('creates a missing folder, gives an empty repository a root commit, and resolves a named base', async () => {
    const missing = await prepareWorkspace({ workspace: scratch('missing'), missionId: 'm2' });
    expect(await git(missing.repo, 'ls-tree', '-r', '--name-only', missing.baseCommit)).toBe('');

    const empty = scratch('empty');
    await mkdir(empty);
    await runGit(['init', '--quiet'], { cwd: empty });
    await writeFile(join(empty, 'staged.txt'), 'mine\n');
    await runGit(['add', 'staged.txt'], { cwd: empty });
    const prepared = await prepareWorkspace({ workspace: empty, missionId: 'm3' });
    expect(await git(empty, 'rev-parse', 'HEAD')).toBe(prepared.baseCommit);
    // The user's staged file is still staged, not swept into flotilla's commit.
    expect(await git(empty, 'status', '--porcelain')).toBe('A  staged.txt');

    await runGit(['-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '--quiet', '-m', 'second'], {
      cwd: empty,
    });
    await runGit(['branch', 'release', prepared.baseCommit], { cwd: empty });
    const fromBase = await prepareWorkspace({ workspace: empty, missionId: 'm4', base: 'release' });
    expect(fromBase.baseCommit).toBe(prepared.baseCommit);

    const error = await prepareWorkspace({ workspace: empty, missionId: 'm5', base: 'nope' }).catch(
      (e: unknown) => e,
    );
    expect(isFlotillaError(error, 'mission/invalid')).toBe(true);
    expect((error as Error).message).toContain("base 'nope' does not name a commit");
  });

  it('creates the integration branch of a URL workspace by pushing from a cache clone', async () => {
    const source = await missionRepo('seed');
    const bare = scratch('remote.git');
    await runGit(['clone', '--bare', '--quiet', source.repo, bare]);
    const url = `file://${bare}`;
    const prepared = await prepareWorkspace({ workspace: url, missionId: 'm6', cacheDir: scratch('cache') });
    expect(prepared.repo).toBe(url);
    expect(await git(bare, 'rev-parse', 'flotilla/m6')).toBe(prepared.baseCommit);
    expect(prepared.baseCommit).toBe(await git(bare, 'rev-parse', 'HEAD'));
  });
});

/** True when `id` is stored in the repository at `dir` itself (loose or packed), not only in its alternates. */
async function storedHere(dir: string, id: string): Promise<boolean> {
  const result = await runGit(['cat-file', '-e', id], {
    cwd: dir,
    allowFailure: true,
    env: { GIT_ALTERNATE_OBJECT_DIRECTORIES: '' },
  });
  const alternates = join(dir, '.git', 'objects', 'info', 'alternates');
  const saved = await readFile(alternates, 'utf8').catch(() => null);
  if (saved === null) return result.exitCode === 0;
  // The alternates file is read whatever the environment says: hide it for the question.
  await unlink(alternates);
  try {
    return (await runGit(['cat-file', '-e', id], { cwd: dir, allowFailure: true })).exitCode === 0;
  } finally {
    await writeFile(alternates, saved);
  }
}

describe('a host cache of a local mission repo', () => {
  it('borrows the repo’s objects: a branch moved there is read without a fetch', async () => {
    const prepared = await missionRepo('m30');
    const { cache } = await host(prepared.repo);
    // A commit made in the mission repo after the clone, on the integration branch.
    await writeFile(join(prepared.repo, 'later.txt'), 'later\n');
    await runGit(['add', 'later.txt'], { cwd: prepared.repo });
    await runGit(['-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '--quiet', '-m', 'later'], {
      cwd: prepared.repo,
    });
    const later = await git(prepared.repo, 'rev-parse', 'HEAD');
    await runGit(['update-ref', `refs/heads/${integrationBranch('m30')}`, later], { cwd: prepared.repo });
    const fetchHead = join(cache.dir, '.git', 'FETCH_HEAD');
    await unlink(fetchHead).catch(() => undefined);

    await cache.fetch([integrationBranch('m30')]);
    expect(await cache.remoteCommit(integrationBranch('m30'))).toBe(later);
    // No `git fetch` ran (it writes FETCH_HEAD), and the commit was not copied into the cache.
    await expect(stat(fetchHead)).rejects.toThrow();
    expect(await storedHere(cache.dir, later)).toBe(false);
    expect(await git(cache.dir, 'cat-file', '-t', later)).toBe('commit');
  });

  it('reads the mission repo’s refs where they are, loose or packed, without a copy in the cache', async () => {
    const prepared = await missionRepo('m36');
    const { cache } = await host(prepared.repo);
    const branch = integrationBranch('m36');
    await cache.fetch([branch]);
    const later = await git(
      prepared.repo,
      '-c',
      'user.name=t',
      '-c',
      'user.email=t@t',
      'commit-tree',
      '-p',
      prepared.baseCommit,
      '-m',
      'later',
      `${prepared.baseCommit}^{tree}`,
    );
    await runGit(['update-ref', `refs/heads/${branch}`, later], { cwd: prepared.repo });
    // Another stage's cache object, which fetched nothing: it reads the repo, not a stale copy.
    const other = await openRepoCache({ repo: prepared.repo, cacheDir: join(cache.dir, '..') });
    expect(await other.remoteCommit(branch)).toBe(later);
    // Packed (`git gc` packs refs), then moved again as a loose ref over the packed one.
    await runGit(['pack-refs', '--all'], { cwd: prepared.repo });
    await cache.fetch([branch]);
    expect(await cache.remoteCommit(branch)).toBe(later);
    await runGit(['update-ref', `refs/heads/${branch}`, prepared.baseCommit], { cwd: prepared.repo });
    await cache.fetch([branch]);
    expect(await cache.remoteCommit(branch)).toBe(prepared.baseCommit);
    await runGit(['update-ref', '-d', `refs/heads/${branch}`], { cwd: prepared.repo });
    expect(await other.remoteCommit(branch)).toBeNull();
  });

  it('reports a ref the mission repo lacks as missing, without a fetch', async () => {
    const prepared = await missionRepo('m31');
    const { cache } = await host(prepared.repo);
    await cache.fetch(['flotilla/no-such-branch']);
    expect(await cache.remoteCommit('flotilla/no-such-branch')).toBeNull();
  });

  it('gives a cache cloned before borrowing (a copy) the repo’s objects as alternates', async () => {
    const prepared = await missionRepo('m32');
    const cacheDir = scratch('cache');
    const first = await openRepoCache({ repo: prepared.repo, cacheDir });
    // What an older flotilla left: a plain local clone, without alternates. Another process opens it.
    await rm(first.dir, { recursive: true, force: true });
    await runGit(['clone', '--no-checkout', '--no-tags', '--quiet', '--', prepared.repo, first.dir]);
    vi.resetModules();
    const { openRepoCache: reopen } = await import('../../../src/workers/workspace/repo-cache.js');
    const again: RepoCache = await reopen({ repo: prepared.repo, cacheDir });
    expect(again.dir).toBe(first.dir);
    const alternates = await readFile(join(again.dir, '.git', 'objects', 'info', 'alternates'), 'utf8');
    expect(alternates.trim()).toBe(join(prepared.repo, '.git', 'objects'));
  });

  it('writes an attempt’s commits into the mission repo only, and moves the checkout to them', async () => {
    const prepared = await missionRepo('m33');
    const h = await host(prepared.repo);
    const checkout = await checkoutAttempt({ ...h, missionId: 'm33', taskId: 't', attempt: 1 });
    await writeFile(join(checkout.dir, 'README.md'), '# calc, changed\n');
    const ref = attemptRef('m33', 't', 1);
    const committed = await commitAttempt({
      dir: checkout.dir,
      message: 't: work',
      ref,
      localRepo: prepared.repo,
    });
    expect(await git(prepared.repo, 'rev-parse', ref)).toBe(committed.commit);
    expect(await git(checkout.dir, 'rev-parse', 'HEAD')).toBe(committed.commit);
    expect(await git(checkout.dir, 'status', '--porcelain')).toBe('');
    expect(await storedHere(h.cache.dir, committed.commit)).toBe(false);
    expect(await storedHere(h.cache.dir, committed.workCommit)).toBe(false);
    await removeWorktree(checkout.dir);
  });

  it('imports into a checkout that cannot see the mission repo’s objects as well', async () => {
    const prepared = await missionRepo('m34');
    // A checkout of a plain copy of the mission repo, which borrows nothing from it.
    const copy = scratch('copy');
    await runGit(['clone', '--no-checkout', '--no-tags', '--quiet', '--', prepared.repo, copy]);
    const dir = scratch('checkout');
    await runGit(['worktree', 'add', '--quiet', '--detach', dir, prepared.baseCommit], { cwd: copy });
    await writeFile(join(dir, 'README.md'), '# calc, changed again\n');
    const ref = attemptRef('m34', 't', 1);
    const committed = await commitAttempt({
      dir,
      message: 't: work',
      ref,
      baseCommit: prepared.baseCommit,
      localRepo: prepared.repo,
    });
    expect(await git(prepared.repo, 'rev-parse', ref)).toBe(committed.commit);
    expect(await git(dir, 'rev-parse', 'HEAD')).toBe(committed.commit);
    expect(await git(dir, 'status', '--porcelain')).toBe('');
    expect(await storedHere(copy, committed.commit)).toBe(true);
    await removeWorktree(dir);
  });
});

describe('attempts on several hosts', () => {
  it('checks out, commits, pushes and integrates concurrently from two hosts', async () => {
    const prepared = await missionRepo('m7');
    const [hostA, hostB] = await Promise.all([host(prepared.repo), host(prepared.repo)]);
    const [one, two] = await Promise.all([
      attemptWriting(hostA, 'm7', 'one', { 'src/one.ts': 'export const one = 1;\n' }),
      attemptWriting(hostB, 'm7', 'two', { 'src/two.ts': 'export const two = 2;\n' }),
    ]);
    expect(one.baseCommit).toBe(prepared.baseCommit);
    expect(await git(prepared.repo, 'rev-parse', one.ref)).toBe(one.commit);

    const results = await Promise.all([
      integrateAttempt({ ...hostA, missionId: 'm7', ...merging(one, 'one'), message: 'merge one' }),
      integrateAttempt({ ...hostB, missionId: 'm7', ...merging(two, 'two'), message: 'merge two' }),
    ]);
    expect(results.every((r) => r.ok)).toBe(true);
    const tip = await git(prepared.repo, 'rev-parse', integrationBranch('m7'));
    expect(await git(prepared.repo, 'ls-tree', '-r', '--name-only', tip)).toContain('src/two.ts');
    expect(await git(prepared.repo, 'ls-tree', '-r', '--name-only', tip)).toContain('src/one.ts');
    const merges = await git(prepared.repo, 'log', '--merges', '--first-parent', '--format=%s', tip);
    expect(merges.split('\n').sort()).toEqual(['merge one', 'merge two']);

    // A task that starts now sees both approved dependencies' work.
    const next = await checkoutAttempt({ ...hostA, missionId: 'm7', taskId: 'three', attempt: 1 });
    expect(next.baseCommit).toBe(tip);
    expect(await readFile(join(next.dir, 'src', 'two.ts'), 'utf8')).toContain('two');
    await removeWorktree(next.dir);

    // Integrating an integrated branch again (a re-delivered gate) merges nothing.
    const again = await integrateAttempt({
      ...hostB,
      missionId: 'm7',
      ...merging(one, 'one'),
      message: 'merge one',
    });
    expect(again).toEqual({ ok: true, commit: tip, alreadyIntegrated: true });
    expect(await git(prepared.repo, 'rev-parse', integrationBranch('m7'))).toBe(tip);
  });

  it('reports a merge conflict with the conflicting file and leaves the integration branch alone', async () => {
    const prepared = await missionRepo('m8');
    const [hostA, hostB] = await Promise.all([host(prepared.repo), host(prepared.repo)]);
    const first = await attemptWriting(hostA, 'm8', 'first', { 'shared.txt': 'line 1\nfirst\nline 3\n' });
    const second = await attemptWriting(hostB, 'm8', 'second', { 'shared.txt': 'line 1\nsecond\nline 3\n' });
    const merged = await integrateAttempt({
      ...hostA,
      missionId: 'm8',
      ...merging(first, 'first'),
      message: 'merge first',
    });
    expect(merged.ok).toBe(true);
    const tip = await git(prepared.repo, 'rev-parse', integrationBranch('m8'));

    const conflicted = await integrateAttempt({
      ...hostB,
      missionId: 'm8',
      ...merging(second, 'second'),
      message: 'merge second',
    });
    expect(conflicted.ok).toBe(false);
    if (conflicted.ok) return;
    expect(conflicted.files).toEqual(['shared.txt']);
    expect(conflicted.conflict).toContain('CONFLICT (content): Merge conflict in shared.txt');
    expect(await git(prepared.repo, 'rev-parse', integrationBranch('m8'))).toBe(tip);
  });

  it('lets a third host verify and diff the pushed work', async () => {
    const prepared = await missionRepo('m9');
    const builder = await host(prepared.repo);
    const checkout = await checkoutAttempt({ ...builder, missionId: 'm9', taskId: 'mean', attempt: 2 });
    await writeFile(join(checkout.dir, 'src', 'mean.ts'), 'export const mean = (xs: number[]) => 0;\n');
    await mkdir(join(checkout.dir, '.planning', 'dispatch'), { recursive: true });
    await writeFile(
      join(checkout.dir, '.planning', 'dispatch', 'mean-a2-RESULT.md'),
      '**Status**: Complete\n',
    );
    const ref = attemptRef('m9', 'mean', 2);
    const committed = await commitAttempt({
      dir: checkout.dir,
      message: 'mean',
      ref,
      author: 'sim <sim@example.com>',
    });
    expect(committed).toMatchObject({ changed: true, ref });
    expect(await git(checkout.dir, 'log', '-2', '--format=%an|%cn')).toBe('sim|flotilla\nsim|flotilla');
    // The work commit holds the work only; the dispatch files are in the published commit on top.
    expect(await git(prepared.repo, 'diff', '--name-only', prepared.baseCommit, committed.workCommit)).toBe(
      'src/mean.ts',
    );
    expect(await git(prepared.repo, 'diff', '--name-only', committed.workCommit, committed.commit)).toBe(
      '.planning/dispatch/mean-a2-RESULT.md',
    );
    await removeWorktree(checkout.dir);

    const verifier = await host(prepared.repo);
    const verify = await checkoutForVerify({ ...verifier, branch: ref });
    expect(verify.commit).toBe(committed.commit);
    expect(await readFile(join(verify.dir, 'src', 'mean.ts'), 'utf8')).toContain('mean');
    // The audit trail travels with the branch.
    expect(await readFile(join(verify.dir, '.planning', 'dispatch', 'mean-a2-RESULT.md'), 'utf8')).toContain(
      'Complete',
    );
    await verify.cleanup();
    await expect(stat(verify.dir)).rejects.toThrow();
    await verify.cleanup();

    const diff = await diffAgainstIntegration({
      ...verifier,
      missionId: 'm9',
      branch: ref,
    });
    expect(diff).toContain('+++ b/src/mean.ts');
    expect(diff).not.toContain('.planning');
    const capped = await diffAgainstIntegration({
      ...verifier,
      missionId: 'm9',
      branch: ref,
      maxChars: 40,
    });
    expect(capped).toBe(`${diff.slice(0, 40)}\n[diff truncated at 40 characters]\n`);
  });

  it('clones once per cache, resets a re-delivered attempt, and commits nothing when nothing changed', async () => {
    const prepared = await missionRepo('m10');
    const cacheDir = scratch('cache');
    const [cache, sameCache] = await Promise.all([
      openRepoCache({ repo: prepared.repo, cacheDir }),
      openRepoCache({ repo: prepared.repo, cacheDir }),
    ]);
    expect(sameCache.dir).toBe(cache.dir);
    const before = await stat(join(cache.dir, '.git'));
    const workRoot = scratch('work');

    const first = await checkoutAttempt({ cache, workRoot, missionId: 'm10', taskId: 't', attempt: 1 });
    await writeFile(join(first.dir, 'README.md'), 'changed by the first delivery\n');
    const ref = attemptRef('m10', 't', 1);
    await commitAttempt({ dir: first.dir, message: 'first delivery', ref });
    // The job is delivered again while the first delivery's worktree is still on disk.
    const second = await checkoutAttempt({
      cache: sameCache,
      workRoot,
      missionId: 'm10',
      taskId: 't',
      attempt: 1,
    });
    expect(second.dir).not.toBe(first.dir);
    expect(await git(second.dir, 'rev-parse', 'HEAD')).toBe(prepared.baseCommit);
    expect(await readFile(join(second.dir, 'README.md'), 'utf8')).toBe('# calc\n');

    const unchanged = await commitAttempt({ dir: second.dir, message: 'nothing', ref });
    // No work: an empty work commit on the starting commit, which the gate merges as nothing.
    expect(unchanged).toMatchObject({ changed: false, ref });
    expect(await git(prepared.repo, 'rev-parse', `${unchanged.workCommit}^{tree}`)).toBe(
      await git(prepared.repo, 'rev-parse', `${prepared.baseCommit}^{tree}`),
    );
    // The force push replaced what the first delivery pushed.
    expect(await git(prepared.repo, 'rev-parse', ref)).toBe(unchanged.commit);
    expect(await git(prepared.repo, 'rev-parse', `${ref}^`)).toBe(unchanged.workCommit);
    expect(await git(prepared.repo, 'rev-parse', `${ref}^^`)).toBe(prepared.baseCommit);
    const integrated = await integrateAttempt({
      cache,
      missionId: 'm10',
      attemptId: 't/a1',
      ref,
      workCommit: unchanged.workCommit,
      message: 'merge t',
    });
    expect(integrated).toEqual({ ok: true, commit: prepared.baseCommit, alreadyIntegrated: true });

    const after = await stat(join(cache.dir, '.git'));
    expect(after.ino).toBe(before.ino);
    expect(after.birthtimeMs).toBe(before.birthtimeMs);
    await removeWorktree(second.dir);
    await removeWorktree(first.dir);
  });
});

describe('write scope', () => {
  async function dirtyCheckout(missionId: string) {
    const prepared = await missionRepo(missionId);
    const h = await host(prepared.repo);
    const checkout = await checkoutAttempt({ ...h, missionId, taskId: 't', attempt: 1 });
    const dir = checkout.dir;
    await writeFile(join(dir, 'src', 'calc.ts'), 'export const add = 0;\n'); // tracked, inside src/
    await writeFile(join(dir, 'src', 'new.ts'), 'new\n'); // untracked, inside src/
    await writeFile(join(dir, 'README.md'), 'rewritten\n'); // tracked, outside
    await unlink(join(dir, 'shared.txt')); // tracked deletion, outside
    await mkdir(join(dir, 'outside', 'deep'), { recursive: true });
    await writeFile(join(dir, 'outside', 'deep', 'x.txt'), 'x\n'); // untracked, outside
    await writeFile(join(dir, 'staged.txt'), 'staged\n');
    await runGit(['add', 'staged.txt'], { cwd: dir }); // staged addition, outside
    await mkdir(join(dir, '.planning', 'dispatch'), { recursive: true });
    await writeFile(join(dir, '.planning', 'dispatch', 't-a1-PROMPT.md'), 'prompt\n');
    return dir;
  }

  it('rolls back changes outside allowed_paths and keeps the rest', async () => {
    const dir = await dirtyCheckout('m11');
    expect(await snapshotChanges(dir)).toEqual([
      'README.md',
      'outside/deep/x.txt',
      'shared.txt',
      'src/calc.ts',
      'src/new.ts',
      'staged.txt',
    ]);
    const { violations } = await enforceWriteScope({ dir, allowedPaths: ['src/'], readOnly: false });
    expect(violations).toEqual(['README.md', 'outside/deep/x.txt', 'shared.txt', 'staged.txt']);
    expect(await readFile(join(dir, 'README.md'), 'utf8')).toBe('# calc\n');
    expect(await readFile(join(dir, 'shared.txt'), 'utf8')).toBe('line 1\nline 2\nline 3\n');
    await expect(stat(join(dir, 'outside'))).rejects.toThrow();
    await expect(stat(join(dir, 'staged.txt'))).rejects.toThrow();
    expect(await readFile(join(dir, '.planning', 'dispatch', 't-a1-PROMPT.md'), 'utf8')).toBe('prompt\n');
    expect(await snapshotChanges(dir)).toEqual(['src/calc.ts', 'src/new.ts']);
    await removeWorktree(dir);
  });

  it('rolls back names that are not UTF-8 outside allowed_paths, tracked and untracked, by their bytes', async () => {
    const dir = await dirtyCheckout('m14');
    const at = (...bytes: number[]) => Buffer.concat([Buffer.from(`${dir}/`), Buffer.from(bytes)]);
    // "café.txt" and "caf\xff/x.txt" in latin-1, outside src/; one of them tracked.
    const tracked = at(0x63, 0x61, 0x66, 0xe9, 0x2e, 0x74, 0x78, 0x74);
    await writeFile(tracked, 'tracked\n');
    await runGit(['add', '-A'], { cwd: dir });
    await runGit(['-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-q', '-m', 'latin-1'], {
      cwd: dir,
    });
    await writeFile(tracked, 'changed outside the scope\n');
    await mkdir(at(0x63, 0x61, 0x66, 0xff), { recursive: true });
    const untracked = Buffer.concat([at(0x63, 0x61, 0x66, 0xff), Buffer.from('/x.txt')]);
    await writeFile(untracked, 'new outside the scope\n');
    await enforceWriteScope({ dir, allowedPaths: ['src/'], readOnly: false });
    expect(await readFile(tracked, 'utf8')).toBe('tracked\n');
    await expect(stat(untracked)).rejects.toThrow();
    await expect(stat(at(0x63, 0x61, 0x66, 0xff))).rejects.toThrow();
    await removeWorktree(dir);
  });

  it('reverts every change in read-only mode, except flotilla’s own files', async () => {
    const dir = await dirtyCheckout('m12');
    const { violations } = await enforceWriteScope({ dir, readOnly: true });
    expect(violations).toHaveLength(6);
    expect(await snapshotChanges(dir)).toEqual([]);
    expect(await readFile(join(dir, 'src', 'calc.ts'), 'utf8')).toContain('a + b');
    expect(await readFile(join(dir, '.planning', 'dispatch', 't-a1-PROMPT.md'), 'utf8')).toBe('prompt\n');
    await removeWorktree(dir);
  });

  it('changes nothing without a limit', async () => {
    const dir = await dirtyCheckout('m13');
    expect(await enforceWriteScope({ dir, allowedPaths: [], readOnly: false })).toEqual({ violations: [] });
    expect(await snapshotChanges(dir)).toHaveLength(6);
    await removeWorktree(dir);
  });
});

describe('git errors', () => {
  it('says git is missing when it is not on PATH', async () => {
    const error = await runGit(['--version'], { env: { PATH: join(root, 'no-bin') } }).catch(
      (e: unknown) => e,
    );
    expect(isFlotillaError(error, 'git/missing')).toBe(true);
    expect((error as Error).message).toBe('git is not installed or not on PATH');
  });

  it('names the command and the first line of stderr when git fails', async () => {
    const error = await runGit(['rev-parse', '--verify', 'no-such-ref'], { cwd: root }).catch(
      (e: unknown) => e,
    );
    expect(isFlotillaError(error, 'git/failed')).toBe(true);
    expect((error as Error).message).toMatch(/^git rev-parse --verify no-such-ref: fatal: /);
  });

  it('explains a mission that was never prepared, and cleans up quietly', async () => {
    const prepared = await missionRepo('m14');
    const h = await host(prepared.repo);
    const error = await checkoutAttempt({ ...h, missionId: 'other', taskId: 't', attempt: 1 }).catch(
      (e: unknown) => e,
    );
    expect(isFlotillaError(error, 'git/failed')).toBe(true);
    expect((error as Error).message).toContain('integration branch flotilla/other not found');
    await expect(removeWorktree(join(root, 'never-made'))).resolves.toBeUndefined();
  });
});
