import { mkdir, mkdtemp, readdir, readFile, readlink, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../src/shared/logger.js';
import { startHost } from '../../../src/workers/host/host.js';
import { checkoutPool } from '../../../src/workers/workspace/checkout-pool.js';
import { claimCheckoutRoot } from '../../../src/workers/workspace/checkout-root.js';
import { runGit } from '../../../src/workers/workspace/git.js';
import { pruneHostCaches } from '../../../src/workers/workspace/prune.js';
import { openRepoCache } from '../../../src/workers/workspace/repo-cache.js';
import { leaseCheckout } from '../../../src/workers/workspace/warm-checkout.js';
import { indent, SIM_ADAPTERS, sim, startCluster } from '../../helpers/flotilla.js';

/** Host caches stay bounded: checkout slots, pruning at start, and mission specs forgotten at the end. */
let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'flotilla-caches-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

const exists = (path: string) =>
  stat(path).then(
    () => true,
    () => false,
  );
const DAY = 86_400_000;

/** The pid of the process re-parented to init whose working directory is `dir`. */
async function orphanIn(dir: string): Promise<number> {
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const cwd = await readlink(`/proc/${entry}/cwd`).catch(() => null);
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (cwd === dir && ppid === 1) return Number(entry);
  }
  throw new Error(`no orphan in ${dir}`);
}

async function makeRepo(dir: string): Promise<string> {
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'a.txt'), 'a\n');
  const id = ['-c', 'user.name=t', '-c', 'user.email=t@t'];
  await execa('git', ['init', '--quiet', dir]);
  await execa('git', ['-C', dir, 'add', '-A']);
  await execa('git', ['-C', dir, ...id, 'commit', '--quiet', '-m', 'a']);
  return (await execa('git', ['-C', dir, 'rev-parse', 'HEAD'])).stdout.trim();
}

describe('checkout slots', () => {
  it('gives each live host its own slot and hands a dead process’s slot to the next host', async () => {
    const home = join(root, 'slots');
    const a = await claimCheckoutRoot(home);
    const b = await claimCheckoutRoot(home);
    expect([a.dir, b.dir]).toEqual([join(home, 'checkouts', 'p0'), join(home, 'checkouts', 'p1')]);
    await a.release();
    const c = await claimCheckoutRoot(home);
    expect(c.dir).toBe(a.dir);
    // A lock left by a process that is gone (a crashed worker) does not hold its slot.
    const dead = execa('true');
    await dead;
    await writeFile(join(home, 'checkouts', 'p2.lock'), String(dead.pid));
    // …and an agent it left running in one of its checkouts (an orphan: its host is gone, so its
    // parent is init) is stopped before the slot is reused; a process with a live parent is not.
    const checkout = join(home, 'checkouts', 'p2', 'pool', 'c1');
    await mkdir(checkout, { recursive: true });
    await execa('bash', ['-c', '(setsid sleep 60 > /dev/null 2>&1 &)'], { cwd: checkout });
    const bystander = execa('sleep', ['60'], { cwd: checkout, reject: false });
    await new Promise((done) => setTimeout(done, 200));
    const orphanPid = await orphanIn(checkout);
    const d = await claimCheckoutRoot(home);
    expect(d.dir).toBe(join(home, 'checkouts', 'p2'));
    expect(d.orphansKilled).toEqual([orphanPid]);
    // Dead: gone, or a zombie until init reaps it.
    const state = async () =>
      (await readFile(`/proc/${orphanPid}/stat`, 'utf8').catch(() => 'x) X')).split(') ')[1]?.[0];
    const until = Date.now() + 5_000;
    while (!['X', 'Z'].includes((await state()) ?? '') && Date.now() < until) {
      await new Promise((done) => setTimeout(done, 50));
    }
    expect(['X', 'Z']).toContain(await state());
    expect(bystander.exitCode).toBeNull();
    bystander.kill();
    await bystander;
    // A live process's lock does.
    await writeFile(join(home, 'checkouts', 'p3.lock'), String(process.ppid));
    const e = await claimCheckoutRoot(home);
    expect(e.dir).toBe(join(home, 'checkouts', 'p4'));
    for (const slot of [b, c, d, e]) await slot.release();
  });
});

describe('pruneHostCaches', () => {
  it('removes caches unused past the limit with their checkouts, and trims this host’s pool to keep', async () => {
    const home = join(root, 'prune');
    const fresh = await makeRepo(join(root, 'repo-fresh'));
    const oldCommit = await makeRepo(join(root, 'repo-old'));
    const cacheDir = join(home, 'repos');
    const freshCache = await openRepoCache({ repo: join(root, 'repo-fresh'), cacheDir });
    const oldCache = await openRepoCache({ repo: join(root, 'repo-old'), cacheDir });
    const slot = await claimCheckoutRoot(home);
    const freshPool = await checkoutPool(freshCache, { root: slot.dir, keep: 3 });
    const oldPool = await checkoutPool(oldCache, { root: slot.dir, keep: 1 });
    const leases = await Promise.all([1, 2, 3].map(() => leaseCheckout(freshPool, fresh, undefined)));
    for (const lease of leases) await lease.release();
    const oldLease = await leaseCheckout(oldPool, oldCommit, undefined);
    await oldLease.release();
    const longAgo = new Date(Date.now() - 30 * DAY);
    await utimes(oldCache.dir, longAgo, longAgo);

    const removed = await pruneHostCaches({ home, ownRoot: slot.dir, keep: 1, maxAgeMs: 14 * DAY });
    expect(removed).toContain(oldCache.dir);
    expect(await exists(oldCache.dir)).toBe(false);
    expect(await exists(join(slot.dir, oldCache.dir.split('/').pop() ?? ''))).toBe(false);
    const poolDir = join(slot.dir, freshCache.dir.split('/').pop() ?? '');
    const left = (await readdir(poolDir)).filter((name) => /^c\d+$/.test(name));
    expect(left).toHaveLength(1);
    // The cache forgot the removed worktrees too.
    const { stdout } = await runGit(['worktree', 'list', '--porcelain'], { cwd: freshCache.dir });
    expect(stdout.match(/^worktree /gm)).toHaveLength(2); // the cache itself and the one kept
    await slot.release();
  });

  it('runs when a host starts with pruneCaches (as `flotilla worker` does)', async () => {
    const home = join(root, 'start');
    const stale = join(home, 'repos', '0123456789abcdef');
    await mkdir(join(stale, '.git'), { recursive: true });
    const longAgo = new Date(Date.now() - 30 * DAY);
    await utimes(stale, longAgo, longAgo);
    const cluster = await startCluster({ hosts: 0, env: { FLOTILLA_HOME: home } });
    try {
      const host = await startHost({
        config: cluster.config,
        redisUrl: cluster.redis.url,
        adaptersDir: SIM_ADAPTERS,
        slots: 1,
        logger: silentLogger(),
        pruneCaches: true,
      });
      expect(await exists(stale)).toBe(false);
      await host.close({ force: true });
    } finally {
      await cluster.stop();
    }
  });
});

describe('parked checkouts', () => {
  it('are freed when another host says the attempt’s next stage took a checkout there', async () => {
    const cluster = await startCluster({ hosts: 1, slots: 2 });
    try {
      const commit = await makeRepo(join(cluster.dir, 'repo'));
      const cache = await openRepoCache({
        repo: join(cluster.dir, 'repo'),
        cacheDir: join(cluster.config.home, 'repos'),
      });
      // In-process hosts share this process's pools: this is the host's own pool for the repo.
      const pool = await checkoutPool(cache, { root: join(cluster.config.home, 'checkouts', 'p0'), keep: 2 });
      const lease = await leaseCheckout(pool, commit, undefined);
      lease.park('m/t/1', commit);
      lease.park('m/t/1', commit);
      const other = await leaseCheckout(pool, commit, undefined);
      other.park('m/t/2', commit);
      await cluster.client.store.publishControl({ type: 'unpark', missionId: 'm', key: 'm/t/1' });
      const deadline = Date.now() + 10_000;
      while (pool.counts().parked > 1 && Date.now() < deadline)
        await new Promise((done) => setTimeout(done, 50));
      expect(pool.counts()).toEqual({ idle: 1, leased: 0, parked: 1 });
      expect(pool.claim('m/t/1', commit)).toBeNull();
      expect(pool.claim('m/t/2', commit)).not.toBeNull();
    } finally {
      await cluster.stop();
    }
  });
});

describe('mission specs on hosts', () => {
  it('are forgotten by every host once the mission ends', async () => {
    const cluster = await startCluster({ hosts: 0 });
    try {
      const hosts = [
        await cluster.addHost({ slots: 1, sweepMs: 300 }),
        await cluster.addHost({ slots: 1, sweepMs: 300 }),
      ];
      const tasks = ['a', 'b', 'c', 'd'].flatMap((id) => [
        `  - id: ${id}`,
        `    title: Task ${id}`,
        '    capability: code_implementation',
        '    critic: false',
        `    exit_criteria: ["test -f ${id}.txt"]`,
        '    description: |',
        `      Task ${id}.`,
        '',
        indent(sim(`- sleep: 1s\n- write: {path: ${id}.txt, content: "${id}"}`)),
      ]);
      const yaml = ['goal: Forget me', 'workspace: ./ws', 'tasks:', ...tasks, ''].join('\n');
      const id = await cluster.submit(yaml);
      let seenOn = 0;
      const watch = setInterval(() => {
        seenOn = Math.max(seenOn, hosts.filter((h) => h.cachedMissions().includes(id)).length);
      }, 50);
      const status = await cluster.client.wait(id, { pollMs: 200 });
      expect(status.status).toBe('done');
      const deadline = Date.now() + 20_000;
      while (hosts.some((h) => h.cachedMissions().length > 0) && Date.now() < deadline) {
        await new Promise((done) => setTimeout(done, 100));
      }
      clearInterval(watch);
      expect(seenOn).toBe(2); // both hosts held the spec while the mission ran
      expect(hosts.map((h) => h.cachedMissions())).toEqual([[], []]);
    } finally {
      await cluster.stop();
    }
  });
});
