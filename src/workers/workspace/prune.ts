/**
 * Keeps a host's caches bounded (`flotilla worker` runs this at start): repo clones unused for
 * longer than `maxAgeMs` go, with their checkouts; checkout slots no live process holds go once
 * unused that long; a pool keeps at most `keep` checkouts; half-made clones and the per-attempt
 * work folders of earlier processes go. What is decided is pure (`planPrune`); this file's
 * `pruneHostCaches` reads the folders and removes what the plan names.
 */
import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { removeCheckoutRecords } from './checkout-pool.js';
import { checkoutsDir, slotFree } from './checkout-root.js';
import { fileMonitor } from './file-monitor.js';
import { runGit } from './git.js';

export interface PruneOptions {
  readonly home: string;
  /** This host's own checkout slot (`<home>/checkouts/p<N>`): its pools are trimmed to `keep`. */
  readonly ownRoot?: string;
  readonly keep: number;
  readonly maxAgeMs: number;
  readonly now?: number;
}

export interface FolderInfo {
  readonly path: string;
  readonly mtimeMs: number;
}

export interface PruneInput {
  readonly now: number;
  readonly maxAgeMs: number;
  readonly keep: number;
  /** Repo caches by key (`<home>/repos/<key>`), with the time each was last used. */
  readonly caches: readonly (FolderInfo & { readonly key: string; readonly partial: boolean })[];
  /** Checkout slots no live process holds, and this host's own (free: false). */
  readonly slots: readonly (FolderInfo & { readonly free: boolean })[];
  /** Pools (`<slot>/<key>`) with their checkouts. */
  readonly pools: readonly (FolderInfo & {
    readonly slot: string;
    readonly key: string;
    readonly own: boolean;
    readonly checkouts: readonly FolderInfo[];
  })[];
}

/** Folders to remove, in an order that never leaves a checkout whose cache is gone half in place. */
export function planPrune(input: PruneInput): string[] {
  const old = (f: FolderInfo) => input.now - f.mtimeMs > input.maxAgeMs;
  const remove: string[] = [];
  const goneCaches = new Set<string>();
  for (const cache of input.caches) {
    if (old(cache) || (cache.partial && input.now - cache.mtimeMs > 3_600_000)) {
      remove.push(cache.path);
      if (!cache.partial) goneCaches.add(cache.key);
    }
  }
  const goneSlots = new Set(input.slots.filter((s) => s.free && old(s)).map((s) => s.path));
  for (const pool of input.pools) {
    if (goneSlots.has(pool.slot)) continue;
    if (goneCaches.has(pool.key) || !input.caches.some((c) => c.key === pool.key)) {
      remove.push(pool.path);
      continue;
    }
    // Newest first: the checkouts used last are the warmest.
    const byAge = [...pool.checkouts].sort((a, b) => b.mtimeMs - a.mtimeMs);
    byAge.forEach((checkout, index) => {
      if (old(checkout) || (pool.own && index >= input.keep)) remove.push(checkout.path);
    });
  }
  remove.push(...goneSlots);
  return remove;
}

async function folders(dir: string): Promise<FolderInfo[]> {
  const names = await readdir(dir).catch(() => [] as string[]);
  const out: FolderInfo[] = [];
  for (const name of names) {
    const path = join(dir, name);
    const info = await stat(path).catch(() => null);
    if (info?.isDirectory()) out.push({ path, mtimeMs: info.mtimeMs });
  }
  return out;
}

const base = (path: string) => path.slice(path.lastIndexOf('/') + 1);

export async function pruneHostCaches(options: PruneOptions): Promise<string[]> {
  const reposDir = join(options.home, 'repos');
  const caches = (await folders(reposDir)).map((f) => {
    const name = base(f.path);
    return { ...f, key: name.replace(/\.tmp-.*$/, ''), partial: name.includes('.tmp-') };
  });
  // A cache's use is recorded on its directory (openRepoCache touches it), not on what git wrote.
  const slotsDir = checkoutsDir(options.home);
  const slots = [];
  const pools = [];
  for (const slot of await folders(slotsDir)) {
    const own = slot.path === options.ownRoot;
    const free = !own && (await slotFree(slotsDir, base(slot.path)));
    if (!own && !free) continue;
    slots.push({ ...slot, free });
    for (const pool of await folders(slot.path)) {
      const checkouts = (await folders(pool.path)).filter((c) => /^c\d+$/.test(base(c.path)));
      pools.push({ ...pool, slot: slot.path, key: base(pool.path), own, checkouts });
    }
  }
  const plan = planPrune({
    now: options.now ?? Date.now(),
    maxAgeMs: options.maxAgeMs,
    keep: options.keep,
    caches,
    slots,
    pools,
  });
  const monitor = plan.length > 0 ? await fileMonitor() : null;
  for (const path of plan) {
    await monitor?.forgetUnder(path);
    await rm(path, { recursive: true, force: true });
    await removeCheckoutRecords(path);
  }
  // Work folders (per-attempt worktrees of earlier processes): their host ids are gone for good.
  for (const work of await folders(join(options.home, 'work'))) {
    if ((options.now ?? Date.now()) - work.mtimeMs > options.maxAgeMs) {
      await rm(work.path, { recursive: true, force: true });
      plan.push(work.path);
    }
  }
  // The caches forget the worktrees whose folders went.
  for (const cache of caches) {
    if (!plan.includes(cache.path))
      await runGit(['worktree', 'prune'], { cwd: cache.path, allowFailure: true });
  }
  return plan;
}
