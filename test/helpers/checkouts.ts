/**
 * Plain worktrees of a host's repo cache, for tests of the commit and merge steps on their own
 * (the stages take their checkouts from the warm pool, src/workers/workspace/checkout-pool.ts).
 */
import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { integrationBranch } from '../../src/shared/contracts.js';
import { integrationCommit } from '../../src/workers/workspace/attempt-checkout.js';
import { runGit } from '../../src/workers/workspace/git.js';
import type { RepoCache } from '../../src/workers/workspace/repo-cache.js';
import { removeWorktree } from '../../src/workers/workspace/worktree.js';

async function addDetached(cache: RepoCache, workRoot: string, name: string, commit: string) {
  const dir = join(resolve(workRoot), `${name}-${randomBytes(3).toString('hex')}`);
  await mkdir(resolve(workRoot), { recursive: true });
  // `git worktree add` reads the other worktrees' admin folders: one at a time per cache.
  await cache.exclusive(() =>
    runGit(['worktree', 'add', '--quiet', '--detach', dir, commit], { cwd: cache.dir }),
  );
  return dir;
}

export interface CheckoutAttemptOptions {
  readonly cache: RepoCache;
  readonly missionId: string;
  readonly taskId: string;
  readonly attempt: number;
  readonly workRoot: string;
}

/** A fresh detached worktree at the integration branch's tip, as the run stage starts from. */
export async function checkoutAttempt(options: CheckoutAttemptOptions) {
  const { cache, missionId, taskId, attempt } = options;
  await cache.fetch([integrationBranch(missionId)]);
  const baseCommit = await integrationCommit(cache, missionId);
  const dir = await addDetached(cache, options.workRoot, `${taskId}-a${attempt}`, baseCommit);
  return { dir, baseCommit };
}

/** A detached worktree of a pushed attempt ref, as a verify on another host would see it. */
export async function checkoutForVerify(options: { cache: RepoCache; branch: string; workRoot: string }) {
  const { cache, branch } = options;
  await cache.fetch([branch]);
  const commit = await cache.remoteCommit(branch);
  if (!commit) throw new Error(`${cache.repo}: branch ${branch} not found`);
  const dir = await addDetached(cache, options.workRoot, 'verify', commit);
  return { dir, commit, cleanup: () => removeWorktree(dir) };
}
