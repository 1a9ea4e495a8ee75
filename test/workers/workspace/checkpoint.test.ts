import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkpointRef } from '../../../src/shared/contracts.js';
import { decideResume } from '../../../src/workers/stages/run/checkpoint-plan.js';
import { checkoutPool } from '../../../src/workers/workspace/checkout-pool.js';
import {
  checkpointWriter,
  deleteCheckpoint,
  deleteMissionCheckpoints,
} from '../../../src/workers/workspace/checkpoint.js';
import { runGit } from '../../../src/workers/workspace/git.js';
import { openRepoCache } from '../../../src/workers/workspace/repo-cache.js';
import { fetchCheckpoint, leaseAtCheckpoint } from '../../../src/workers/workspace/resume-checkpoint.js';
import { leaseCheckout } from '../../../src/workers/workspace/warm-checkout.js';

/**
 * Checkpoints with real git: one "host" saves a checkout the agent is still working in, another
 * host (its own cache and checkouts) resumes from it. The snapshot must hold exactly the files on
 * disk (a new, a modified and a deleted file; nothing ignored, no dispatch files), must leave the
 * agent's own index alone, and the resumed checkout must have HEAD at the base with the work as
 * uncommitted changes.
 */
let root: string;
let counter = 0;
const scratch = (name: string) => join(root, `${name}-${++counter}`);

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'flotilla-checkpoint-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

const git = async (cwd: string, ...args: string[]) => (await runGit(args, { cwd })).stdout.trim();
const ID = ['-c', 'user.name=t', '-c', 'user.email=t@t'];
const exists = (path: string) =>
  stat(path).then(
    () => true,
    () => false,
  );

async function missionRepo(): Promise<{ dir: string; base: string }> {
  const dir = scratch('repo');
  await mkdir(join(dir, 'src'), { recursive: true });
  await writeFile(join(dir, 'src', 'keep.txt'), 'untouched\n');
  await writeFile(join(dir, 'src', 'edit.txt'), 'original\n');
  await writeFile(join(dir, 'src', 'gone.txt'), 'to be deleted\n');
  await writeFile(join(dir, '.gitignore'), 'dist/\n');
  await git(dir, 'init', '--quiet', '--initial-branch=main');
  await git(dir, 'add', '-A');
  await git(dir, ...ID, 'commit', '--quiet', '-m', 'base');
  return { dir, base: await git(dir, 'rev-parse', 'HEAD') };
}

/** One host's view of the mission repo: its own cache clone and warm checkouts. */
async function host(repo: string) {
  const cache = await openRepoCache({ repo, cacheDir: scratch('cache') });
  const place = { root: scratch('checkouts'), keep: 1 };
  return { cache, place, pool: await checkoutPool(cache, place) };
}

async function indexFingerprint(dir: string): Promise<string> {
  const path = await git(dir, 'rev-parse', '--path-format=absolute', '--git-path', 'index');
  return createHash('sha256')
    .update(await readFile(path))
    .digest('hex');
}

describe('checkpoints', () => {
  it('saves a running checkout without touching its index, and another host resumes from it', async () => {
    const { dir: repo, base } = await missionRepo();
    const ref = checkpointRef('m1', 'build', 1);

    // Host A: the agent works in its checkout; it stages one change and commits another itself.
    const a = await host(repo);
    const lease = await leaseCheckout(a.pool, base, undefined);
    const work = lease.dir;
    const writer = checkpointWriter({
      dir: work,
      ref,
      baseCommit: base,
      message: 'flotilla checkpoint: build',
    });
    // Nothing changed yet: nothing is saved.
    expect(await writer.save()).toBe('unchanged');
    expect(
      (await runGit(['rev-parse', '--verify', '--quiet', ref], { cwd: repo, allowFailure: true })).exitCode,
    ).toBe(1);
    await writeFile(join(work, 'src', 'edit.txt'), 'changed by the agent\n');
    await writeFile(join(work, 'src', 'new.txt'), 'written by the agent\n');
    await rm(join(work, 'src', 'gone.txt'));
    await mkdir(join(work, 'dist'), { recursive: true });
    await writeFile(join(work, 'dist', 'bundle.js'), 'ignored build output\n');
    await mkdir(join(work, '.planning', 'dispatch'), { recursive: true });
    await writeFile(join(work, '.planning', 'dispatch', 'build-a1-PROMPT.md'), 'the prompt\n');
    await git(work, 'add', 'src/edit.txt');
    const stagedBefore = await git(work, 'diff', '--cached', '--name-status');
    const indexBefore = await indexFingerprint(work);
    const saved = await writer.save();
    if (saved === 'unchanged') throw new Error('expected a checkpoint');

    // The agent's index is exactly as it was: same bytes, same staged change, nothing else staged.
    expect(await indexFingerprint(work)).toBe(indexBefore);
    expect(await git(work, 'diff', '--cached', '--name-status')).toBe(stagedBefore);
    expect(await git(work, 'rev-parse', 'HEAD')).toBe(base);

    // The mission repo has the checkpoint on the work-in-progress ref, a child of the base.
    expect(await git(repo, 'rev-parse', ref)).toBe(saved.commit);
    expect(await git(repo, 'rev-parse', `${ref}^`)).toBe(base);
    expect((await git(repo, 'ls-tree', '-r', '--name-only', ref)).split('\n').sort()).toEqual([
      '.gitignore',
      'src/edit.txt',
      'src/keep.txt',
      'src/new.txt',
    ]);

    // Nothing changed: no second commit. The agent's own commit does not move the checkpoint's parent.
    expect(await writer.save()).toBe('unchanged');
    await writeFile(join(work, 'src', 'later.txt'), 'after the first checkpoint\n');
    await git(work, 'add', '-A');
    await git(work, ...ID, 'commit', '--quiet', '-m', "the agent's own commit");
    const second = await writer.save();
    if (second === 'unchanged') throw new Error('expected a second checkpoint');
    expect(second.commit).not.toBe(saved.commit);
    expect(await git(repo, 'rev-parse', `${ref}^`)).toBe(base);
    expect(await git(repo, 'show', `${ref}:src/later.txt`)).toBe('after the first checkpoint');
    // The agent's `git add -A` staged and committed flotilla's prompt file too: never work.
    expect(await git(work, 'ls-files', '.planning')).toBe('.planning/dispatch/build-a1-PROMPT.md');
    expect(await git(repo, 'ls-tree', '-r', '--name-only', ref)).not.toContain('.planning');
    // A host crash: A's checkout is never released, A never runs again.

    // Host B resumes.
    const b = await host(repo);
    const decision = decideResume(await fetchCheckpoint(b.cache, ref));
    if (!decision.resume) throw new Error(`expected to resume: ${JSON.stringify(decision)}`);
    expect(decision.checkpoint).toEqual({ commit: second.commit, baseCommit: base });
    const resumed = await leaseAtCheckpoint({
      cache: b.cache,
      place: b.place,
      checkpoint: decision.checkpoint,
    });
    const dir = resumed.dir;
    expect(dir).not.toBe(work);
    expect(resumed.baseCommit).toBe(base);
    expect(await git(dir, 'rev-parse', 'HEAD')).toBe(base);
    // The work is there, as uncommitted changes against the base; the index is the base's.
    expect(await readFile(join(dir, 'src', 'edit.txt'), 'utf8')).toBe('changed by the agent\n');
    expect(await readFile(join(dir, 'src', 'new.txt'), 'utf8')).toBe('written by the agent\n');
    expect(await readFile(join(dir, 'src', 'later.txt'), 'utf8')).toBe('after the first checkpoint\n');
    expect(await readFile(join(dir, 'src', 'keep.txt'), 'utf8')).toBe('untouched\n');
    expect(await exists(join(dir, 'src', 'gone.txt'))).toBe(false);
    expect(await exists(join(dir, 'dist', 'bundle.js'))).toBe(false);
    expect(await exists(join(dir, '.planning', 'dispatch', 'build-a1-PROMPT.md'))).toBe(false);
    expect(await git(dir, 'diff', '--cached', '--name-only')).toBe('');
    const status = await runGit(['status', '--porcelain', '--untracked-files=all'], { cwd: dir });
    expect(status.stdout.split('\n').filter(Boolean).sort()).toEqual([
      ' D src/gone.txt',
      ' M src/edit.txt',
      '?? src/later.txt',
      '?? src/new.txt',
    ]);

    // The attempt ended: the ref goes, and a later delivery finds nothing to resume from.
    await deleteCheckpoint(dir, ref);
    expect(
      (await runGit(['rev-parse', '--verify', '--quiet', ref], { cwd: repo, allowFailure: true })).exitCode,
    ).toBe(1);
    expect(await fetchCheckpoint(b.cache, ref)).toBeNull();
    await resumed.lease.release();
  });

  it('finds nothing for an attempt that never saved a checkpoint', async () => {
    const { dir: repo } = await missionRepo();
    const b = await host(repo);
    expect(await fetchCheckpoint(b.cache, checkpointRef('m2', 'never', 1))).toBeNull();
  });

  it("deletes the checkpoint refs a mission left once it ended, and only that mission's", async () => {
    const { dir: repo, base } = await missionRepo();
    for (const ref of [
      checkpointRef('m3', 'a', 1),
      checkpointRef('m3', 'b', 2),
      checkpointRef('m30', 'a', 1),
    ]) {
      await git(repo, 'update-ref', ref, base);
    }
    const b = await host(repo);
    expect(await deleteMissionCheckpoints(b.cache, 'm3')).toBe(2);
    expect(await git(repo, 'for-each-ref', '--format=%(refname)', 'refs/flotilla-wip/')).toBe(
      checkpointRef('m30', 'a', 1),
    );
    expect(await deleteMissionCheckpoints(b.cache, 'm3')).toBe(0);
  });
});
