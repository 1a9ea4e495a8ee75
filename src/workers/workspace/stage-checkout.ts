/**
 * Warm checkouts for the stages of an attempt (DESIGN.md §4 steps 1 and 6). The run stage leases
 * one from the host's pool at the integration branch's tip; verify and critic continue in it when
 * it was parked for them on this host, and otherwise lease one at the pushed commit (fetched). The
 * caller ends every lease in one `finally`: `park` to hand it on, `release` otherwise.
 */
import { integrationBranch } from '../../shared/contracts.js';
import { FlotillaError } from '../../shared/errors.js';
import { integrationCommit } from './attempt-checkout.js';
import { type CheckoutLease, checkoutPool } from './checkout-pool.js';
import type { RepoCache } from './repo-cache.js';
import type { SetupSpec } from './setup.js';
import { cleanClaimed, leaseCheckout } from './warm-checkout.js';

export interface PoolPlace {
  /** The host's folder for warm checkouts (one sub-folder per repo cache). */
  readonly root: string;
  /** Checkouts kept per repo: about one per slot. */
  readonly keep: number;
  /** Told of a checkout discarded as unfit (CheckoutPoolOptions.onDiscard). */
  readonly onDiscard?: (dir: string, reason: string) => void;
}

/** The key a parked checkout is kept under: one attempt of one task. */
export function attemptKey(missionId: string, taskId: string, attempt: number): string {
  return `${missionId}/${taskId}/${attempt}`;
}

export interface LeaseForRunOptions {
  readonly cache: RepoCache;
  readonly place: PoolPlace;
  readonly missionId: string;
  readonly setup?: SetupSpec;
  readonly signal?: AbortSignal;
}

export interface RunCheckout {
  readonly lease: CheckoutLease;
  readonly dir: string;
  /** The integration branch's commit the attempt starts from. */
  readonly baseCommit: string;
}

/** A checkout at the integration branch's tip, detached: the attempt's ref exists only once pushed. */
export async function leaseForRun(options: LeaseForRunOptions): Promise<RunCheckout> {
  const { cache, missionId } = options;
  await cache.fetch([integrationBranch(missionId)]);
  const baseCommit = await integrationCommit(cache, missionId);
  const pool = await checkoutPool(cache, options.place);
  const lease = await leaseCheckout(pool, baseCommit, options.setup, options.signal);
  return { lease, dir: lease.dir, baseCommit };
}

export interface LeaseAtCommitOptions {
  readonly cache: RepoCache;
  readonly place: PoolPlace;
  /** The attempt whose parked checkout may be claimed. */
  readonly key: string;
  /** Where the attempt's work was pushed. */
  readonly branch: string;
  /** The commit the run reported: a parked checkout is claimed only at exactly this one. */
  readonly commit?: string;
  readonly setup?: SetupSpec;
  readonly signal?: AbortSignal;
}

export interface CommitCheckout {
  readonly lease: CheckoutLease;
  readonly dir: string;
  readonly commit: string;
  /** True when this continues in the checkout an earlier stage of the attempt parked on this host. */
  readonly claimed: boolean;
}

/**
 * The attempt's work for verify or critic: the parked checkout when this host has it, cleaned of
 * what git ignores but no fetch and no checkout; else the pushed branch, fetched and checked out in
 * a warm checkout.
 */
export async function leaseAtCommit(options: LeaseAtCommitOptions): Promise<CommitCheckout> {
  const { cache, branch } = options;
  const pool = await checkoutPool(cache, options.place);
  if (options.commit) {
    const lease = pool.claim(options.key, options.commit);
    if (lease && (await cleanClaimed(lease, options.commit, options.setup))) {
      return { lease, dir: lease.dir, commit: options.commit, claimed: true };
    }
  }
  await cache.fetch([branch]);
  const commit = await cache.remoteCommit(branch);
  if (!commit) throw new FlotillaError('git/failed', `${cache.repo}: branch ${branch} not found`);
  const lease = await leaseCheckout(pool, commit, options.setup, options.signal);
  return { lease, dir: lease.dir, commit, claimed: false };
}
