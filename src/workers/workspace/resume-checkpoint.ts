/**
 * The read side of checkpoints (checkpoint.ts writes them): the attempt's work-in-progress ref as
 * the mission repo has it, and a warm checkout holding its files as uncommitted changes on top of
 * the commit the interrupted run started from, so the rest of the run stage (write scope, the
 * attempt's commit relative to its base) works as if the run had never stopped.
 */
import { FlotillaError } from '../../shared/errors.js';
import { type CheckoutLease, checkoutPool } from './checkout-pool.js';
import { describeGitFailure, readGit, runGit } from './git.js';
import type { RepoCache } from './repo-cache.js';
import type { LeaseForRunOptions, RunCheckout } from './stage-checkout.js';
import { leaseCheckout } from './warm-checkout.js';

/** A checkpoint commit as found: its parents (one, the base, for a checkpoint flotilla wrote) and tree. */
export interface FoundCheckpoint {
  readonly commit: string;
  readonly parents: readonly string[];
  readonly tree: string;
}

/**
 * The checkpoint on `ref` in the mission repo, fetched into the cache; null when the repo has no
 * such ref. Only a fetch that succeeded counts: the cache may hold a copy the repo has since deleted.
 */
export async function fetchCheckpoint(cache: RepoCache, ref: string): Promise<FoundCheckpoint | null> {
  return cache.exclusive(async () => {
    const args = ['fetch', '--no-tags', '--quiet', 'origin', `+${ref}:${ref}`];
    const fetched = await runGit(args, { cwd: cache.dir, allowFailure: true });
    if (fetched.exitCode !== 0) {
      if (/couldn't find remote ref/i.test(fetched.stderr)) return null;
      throw new FlotillaError('git/failed', describeGitFailure(args, fetched));
    }
    const [commit = '', tree = '', parents = ''] = (
      await readGit(['show', '--no-patch', '--format=%H%n%T%n%P', ref, '--'], { cwd: cache.dir })
    ).split('\n');
    return { commit, tree, parents: parents.split(' ').filter(Boolean) };
  });
}

export interface Checkpoint {
  readonly commit: string;
  /** The commit the interrupted run started from: the checkpoint's parent. */
  readonly baseCommit: string;
}

/**
 * A run checkout at the checkpoint's base, holding the checkpoint's files: HEAD and the index at
 * the base, the work as uncommitted changes. A failed restore discards the checkout and throws.
 */
export async function leaseAtCheckpoint(
  options: Omit<LeaseForRunOptions, 'missionId'> & { readonly checkpoint: Checkpoint },
): Promise<RunCheckout> {
  const { checkpoint } = options;
  const pool = await checkoutPool(options.cache, options.place);
  const lease: CheckoutLease = await leaseCheckout(
    pool,
    checkpoint.baseCommit,
    options.setup,
    options.signal,
  );
  try {
    await restoreCheckpoint(lease.dir, checkpoint);
  } catch (error) {
    await lease.release({ healthy: false, reason: 'a checkpoint could not be restored into it' });
    throw error;
  }
  return { lease, dir: lease.dir, baseCommit: checkpoint.baseCommit };
}

/** The checkpoint's files into a clean checkout, then HEAD and index back to its base. */
export async function restoreCheckpoint(dir: string, checkpoint: Checkpoint): Promise<void> {
  await runGit(['checkout', '--quiet', '--force', '--detach', checkpoint.commit], { cwd: dir });
  await runGit(['reset', '--quiet', '--mixed', checkpoint.baseCommit], { cwd: dir });
}
