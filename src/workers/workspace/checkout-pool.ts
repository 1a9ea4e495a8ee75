/**
 * A host's warm checkouts of one mission repo (DESIGN.md §4 step 1): a few worktrees of the repo
 * cache, made once (one per slot) and reset incrementally for each attempt, instead of a worktree
 * added and removed per stage, whose cost grows with the size of the tree.
 *
 * A lease is exclusive: two jobs never hold one checkout at once. The run stage parks its checkout
 * for the attempt's verify (and verify for the critic), so later stages on this host continue in
 * the run's own checkout without a fetch or a second checkout; a parked checkout nobody claims is
 * free again after `parkMs`, and a waiting job may take one parked longer than `stealAfterMs`, so
 * a lost or re-routed verify never keeps it. State is in memory: a crashed process leaves only the
 * directories, which the next process finds again as idle checkouts (every lease resets first).
 */
import { readdir, rm, stat, utimes } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { removeDirRecord } from './dir-record.js';
import { fileMonitor } from './file-monitor.js';
import { runGit } from './git.js';
import { canClaim, decideAcquire, type EntryState, keepOnRelease, type PoolEntry } from './pool-rules.js';
import type { RepoCache } from './repo-cache.js';
import { removeWorktree } from './worktree.js';

export interface CheckoutLease {
  readonly id: string;
  readonly dir: string;
  /** True for a checkout made by this lease: it is already at the commit it was made at. */
  readonly fresh: boolean;
  /**
   * Ends the lease; the checkout goes back to the pool, or is discarded when `healthy` is false
   * (`reason` says why, for the pool's `onDiscard`).
   */
  release(options?: { readonly healthy?: boolean; readonly reason?: string }): Promise<void>;
  /** Ends the lease, keeping the checkout for the next stage of attempt `key` at `commit`. */
  park(key: string, commit: string): void;
}

export interface CheckoutPoolOptions {
  /** Where this host keeps its checkouts; one folder per repo cache below it. */
  readonly root: string;
  /** Checkouts made when needed (about one per slot); up to twice as many for jobs that waited. */
  readonly keep: number;
  /** How long a parked checkout waits for its next stage. Default 2 minutes. */
  readonly parkMs?: number;
  /** A job that has waited this long may take a checkout parked this long. Default 5 s. */
  readonly stealAfterMs?: number;
  /** A job that has waited this long may have a checkout made beyond `keep`. Default 2 s. */
  readonly growAfterMs?: number;
  /** Told of every checkout discarded as unfit (a failed reset, what an attempt left), for the host's log. */
  readonly onDiscard?: (dir: string, reason: string) => void;
}

export interface CheckoutPool {
  readonly dir: string;
  /** An exclusive checkout, made at `commit` when the pool has to make one. Waits while all are busy. */
  acquire(commit: string, signal?: AbortSignal): Promise<CheckoutLease>;
  /** The checkout parked for attempt `key` at `commit`, now leased to the caller; null when gone. */
  claim(key: string, commit: string): CheckoutLease | null;
  /**
   * Frees the checkout parked for attempt `key`, if any: its next stage runs on another host (which
   * said so on the control channel), so keeping it would only make this host's jobs wait.
   */
  unpark(key: string): boolean;
  /** Entries by state, for tests and the benchmark. */
  counts(): Record<EntryState['kind'], number>;
}

const pools = new Map<string, Promise<PoolImpl>>();

/** The pool for `cache` under `root`; one per process, so every stage on the host shares it. */
export function checkoutPool(cache: RepoCache, options: CheckoutPoolOptions): Promise<CheckoutPool> {
  const dir = join(resolve(options.root), basename(cache.dir));
  let pool = pools.get(dir);
  if (!pool) {
    pool = PoolImpl.open(cache, dir, options);
    pools.set(dir, pool);
    pool.catch(() => pools.delete(dir));
  }
  return pool.then((p) => {
    p.limits = limitsOf(options);
    p.onDiscard = options.onDiscard;
    return p;
  });
}

/** Frees the checkout parked for `key` in every pool of this process (see CheckoutPool.unpark). */
export async function unparkEverywhere(key: string): Promise<number> {
  let freed = 0;
  for (const pool of pools.values()) {
    if ((await pool.catch(() => null))?.unpark(key)) freed += 1;
  }
  return freed;
}

/** Forgets every pool of this process (tests; a closing host). Checkouts stay on disk. */
export function forgetCheckoutPools(): void {
  pools.clear();
}

function limitsOf(options: CheckoutPoolOptions) {
  const keep = Math.max(1, options.keep);
  return {
    keep,
    max: 2 * keep,
    growAfterMs: options.growAfterMs ?? 2_000,
    stealAfterMs: options.stealAfterMs ?? 5_000,
    parkMs: options.parkMs ?? 120_000,
  };
}

interface Waiter {
  readonly commit: string;
  readonly since: number;
  readonly grant: (lease: CheckoutLease) => void;
  readonly fail: (error: unknown) => void;
}

class PoolImpl implements CheckoutPool {
  private readonly entries = new Map<string, EntryState>();
  private readonly waiters: Waiter[] = [];
  private timer: NodeJS.Timeout | undefined;
  private created = 0;
  limits: ReturnType<typeof limitsOf>;
  onDiscard: CheckoutPoolOptions['onDiscard'];

  private constructor(
    private readonly cache: RepoCache,
    readonly dir: string,
    options: CheckoutPoolOptions,
  ) {
    this.limits = limitsOf(options);
    this.onDiscard = options.onDiscard;
  }

  /** Checkouts left by an earlier process are idle ones; anything else in the folder goes. */
  static async open(cache: RepoCache, dir: string, options: CheckoutPoolOptions): Promise<PoolImpl> {
    const pool = new PoolImpl(cache, dir, options);
    await runGit(['worktree', 'prune'], { cwd: cache.dir, allowFailure: true });
    const names = await readdir(dir).catch(() => [] as string[]);
    for (const name of names.sort()) {
      const path = join(dir, name);
      const number = /^c(\d+)$/.exec(name)?.[1];
      if (number && (await isWorktree(path))) {
        pool.entries.set(name, { kind: 'idle', since: 0 });
        pool.created = Math.max(pool.created, Number(number));
      } else if (!name.endsWith('.json')) {
        await rm(path, { recursive: true, force: true });
      }
    }
    return pool;
  }

  counts() {
    const counts = { idle: 0, leased: 0, parked: 0 };
    for (const state of this.entries.values()) counts[state.kind] += 1;
    return counts;
  }

  acquire(commit: string, signal?: AbortSignal): Promise<CheckoutLease> {
    signal?.throwIfAborted();
    return new Promise((grant, fail) => {
      const waiter: Waiter = { commit, since: Date.now(), grant, fail };
      this.waiters.push(waiter);
      signal?.addEventListener(
        'abort',
        () => {
          const index = this.waiters.indexOf(waiter);
          if (index >= 0) {
            this.waiters.splice(index, 1);
            fail(signal.reason);
          }
        },
        { once: true },
      );
      this.serve();
    });
  }

  claim(key: string, commit: string): CheckoutLease | null {
    for (const [id, state] of this.entries) {
      if (canClaim(state, key, commit, Date.now())) {
        this.entries.set(id, { kind: 'leased' });
        return this.lease(id, false);
      }
    }
    return null;
  }

  unpark(key: string): boolean {
    for (const [id, state] of this.entries) {
      if (state.kind === 'parked' && state.key === key) {
        this.entries.set(id, { kind: 'idle', since: Date.now() });
        this.serve();
        return true;
      }
    }
    return false;
  }

  /** Hands out checkouts to waiters in arrival order while the rules allow. */
  private serve(): void {
    while (this.waiters.length > 0) {
      const waiter = this.waiters[0] as Waiter;
      const now = Date.now();
      const list: PoolEntry[] = [...this.entries].map(([id, state]) => ({ id, state }));
      const decision = decideAcquire(list, this.limits, now, now - waiter.since);
      if (decision.action === 'wait') break;
      this.waiters.shift();
      if (decision.action === 'take') {
        this.entries.set(decision.id, { kind: 'leased' });
        waiter.grant(this.lease(decision.id, false));
      } else {
        const id = `c${++this.created}`;
        this.entries.set(id, { kind: 'leased' });
        this.create(id, waiter.commit).then(
          () => waiter.grant(this.lease(id, true)),
          (error: unknown) => {
            this.entries.delete(id);
            waiter.fail(error);
            this.serve();
          },
        );
      }
    }
    // Parked checkouts expire and become stealable with time alone, so waiters poll while they wait.
    if (this.waiters.length > 0 && !this.timer) {
      this.timer = setInterval(() => this.serve(), 200);
      this.timer.unref();
    } else if (this.waiters.length === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  private async create(id: string, commit: string): Promise<void> {
    const path = join(this.dir, id);
    await rm(path, { recursive: true, force: true });
    // One at a time per cache: `git worktree add` reads the other worktrees' admin folders, and
    // fails on one another add is still writing ("failed to read .git/worktrees/c4/commondir").
    // A split index: git then writes only the entries that changed (10–15 ms on 80,000 files
    // against ~40 for the whole 8 MB), and the setting stays with the checkout's index.
    await this.cache.exclusive(() =>
      runGit(['-c', 'core.splitIndex=true', 'worktree', 'add', '--quiet', '--detach', path, commit], {
        cwd: this.cache.dir,
      }),
    );
  }

  private lease(id: string, fresh: boolean): CheckoutLease {
    let ended = false;
    const end = () => {
      // One finally ends a lease; a second call (a park after a release) must not free it twice.
      if (ended) return false;
      ended = true;
      // The folder's time is the checkout's last use, by which a host prunes old ones (prune.ts).
      const now = new Date();
      void utimes(join(this.dir, id), now, now).catch(() => undefined);
      return true;
    };
    return {
      id,
      dir: join(this.dir, id),
      fresh,
      release: async (options = {}) => {
        if (!end()) return;
        const healthy = options.healthy ?? true;
        if (keepOnRelease({ total: this.entries.size, max: this.limits.max, healthy })) {
          this.entries.set(id, { kind: 'idle', since: Date.now() });
          this.serve();
          return;
        }
        this.entries.delete(id);
        this.serve();
        if (!healthy) this.onDiscard?.(join(this.dir, id), options.reason ?? 'unfit');
        await removeWorktree(join(this.dir, id));
        await removeCheckoutRecords(join(this.dir, id));
        await fileMonitor().then((monitor) => monitor?.forget(join(this.dir, id)));
      },
      park: (key, commit) => {
        if (!end()) return;
        const now = Date.now();
        this.entries.set(id, { kind: 'parked', key, commit, since: now, until: now + this.limits.parkMs });
        this.serve();
      },
    };
  }
}

/** The files a checkout keeps beside it: its state (setup.ts) and its directories' record (dir-record.ts). */
export async function removeCheckoutRecords(dir: string): Promise<void> {
  await rm(`${dir}.json`, { force: true });
  await removeDirRecord(dir);
}

async function isWorktree(path: string): Promise<boolean> {
  try {
    return (await stat(join(path, '.git'))).isFile();
  } catch {
    return false;
  }
}
