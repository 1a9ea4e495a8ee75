/**
 * The pure decisions of a host's warm checkout pool (checkout-pool.ts does the IO): which checkout
 * an attempt gets, when a parked one may be taken from the verify it waits for, and whether a
 * released one is kept. Every job holds at most one checkout and never waits for a second while
 * holding one, and a parked checkout is freed after a while even when no verify comes, so waiting
 * for a checkout cannot deadlock.
 */

export type EntryState =
  /** Clean enough to reset and hand out. */
  | { readonly kind: 'idle'; readonly since: number }
  /** Held by one job until it releases or parks it. */
  | { readonly kind: 'leased' }
  /**
   * Kept for the next stage of one attempt (`key`) at `commit`, so verify (and critic) on this host
   * use the run's own checkout; free for anyone after `until`.
   */
  | {
      readonly kind: 'parked';
      readonly key: string;
      readonly commit: string;
      readonly since: number;
      readonly until: number;
    };

export interface PoolEntry {
  readonly id: string;
  readonly state: EntryState;
}

export interface PoolLimits {
  /** Checkouts the pool makes at once when it needs them (about one per slot). */
  readonly keep: number;
  /**
   * The most it ever holds: beyond `keep`, a checkout is made only for a job that waited
   * `growAfterMs`, e.g. while verifies with long criteria hold the run checkouts they continue in.
   */
  readonly max: number;
  readonly growAfterMs: number;
  /** A waiting job may take a parked checkout parked longer ago than this. */
  readonly stealAfterMs: number;
}

export type AcquireDecision =
  | { readonly action: 'take'; readonly id: string }
  | { readonly action: 'create' }
  | { readonly action: 'wait' };

/**
 * What an acquire does now: an idle checkout (the longest idle first, so the pool cycles through
 * all and none goes stale), else a parked one whose verify did not come in time, else a new one
 * while the pool is below `keep`, else wait for a release. `waitedMs` is how long the caller has
 * waited so far: a parked checkout is stolen only from a caller that waited, since the verify it
 * is parked for usually arrives within moments. Beyond `keep` the pool grows, up to `max`, only
 * for a caller that waited `growAfterMs`: a full checkout of a large tree costs seconds, more than
 * the short wait for a verify to finish in most missions.
 */
export function decideAcquire(
  entries: readonly PoolEntry[],
  limits: PoolLimits,
  now: number,
  waitedMs = 0,
): AcquireDecision {
  const idle = entries.filter((e) => e.state.kind === 'idle').sort((a, b) => since(a) - since(b));
  if (idle[0]) return { action: 'take', id: idle[0].id };
  const parked = entries.filter((e) => e.state.kind === 'parked').sort((a, b) => since(a) - since(b));
  const expired = parked.find((e) => e.state.kind === 'parked' && e.state.until <= now);
  if (expired) return { action: 'take', id: expired.id };
  if (entries.length < limits.keep) return { action: 'create' };
  if (entries.length < limits.max && waitedMs >= limits.growAfterMs) return { action: 'create' };
  const stale = parked.find((e) => now - since(e) >= limits.stealAfterMs);
  if (stale && waitedMs >= limits.stealAfterMs) return { action: 'take', id: stale.id };
  return { action: 'wait' };
}

function since(entry: PoolEntry): number {
  return entry.state.kind === 'leased' ? 0 : entry.state.since;
}

/** True when a job of attempt `key` may continue in this parked checkout at `commit`. */
export function canClaim(state: EntryState, key: string, commit: string, now: number): boolean {
  return state.kind === 'parked' && state.key === key && state.commit === commit && state.until > now;
}

/**
 * Whether a checkout that was just released stays in the pool: a reset that failed discards it
 * (never reused dirty), and so does one beyond `max` (left over when the limits shrank). A worker
 * trims its pools back to `keep` when it starts (prune.ts).
 */
export function keepOnRelease(options: {
  readonly total: number;
  readonly max: number;
  readonly healthy: boolean;
}): boolean {
  return options.healthy && options.total <= options.max;
}
