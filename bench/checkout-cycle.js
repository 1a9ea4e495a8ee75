/**
 * The workspace's share of one task on a large tree: a warm checkout leased (its reset), an
 * attempt's changes made (a new file, a new folder, an ignored file, an edit in place), the
 * attempt's listing read, the checkout released; `--slots N` runs N such tasks at once on N
 * checkouts, as a host's slots do. The CPU figures are the cycles' own: this process's (the folder
 * scans run here) and git's (children reaped), besides the wall time. Each mode runs its cycles in turn with the others (`--modes off,on`: git's walks
 * against the folder record, FLOTILLA_CHECKOUT_SCAN), so load hits them alike.
 *
 *   npm run build && node bench/run.js checkout-cycle --repos generated,linux --cycles 20
 */
import { execFileSync } from 'node:child_process';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkoutPool, forgetCheckoutPools } from '../dist/workers/workspace/checkout-pool.js';
import { resetFileMonitor } from '../dist/workers/workspace/file-monitor.js';
import { openRepoCache } from '../dist/workers/workspace/repo-cache.js';
import { leaseCheckout, readLeasedWorktree } from '../dist/workers/workspace/warm-checkout.js';
import { generatedRepo, linuxRepo, scratchClone } from './lib/big-repo.js';
import { fmt, now, printTable } from './lib/util.js';

export const defaults = { repos: ['generated', 'linux'], cycles: 20, modes: ['off', 'on'], slots: 1 };

/** This process's reaped children's CPU (user + system), ms: /proc/self/stat fields 16 and 17. */
async function childrenCpuMs() {
  const stat = await readFile('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[13]) + Number(fields[14])) * 1000) / 100;
}

function selfCpuMs() {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
}

async function attempt(dir, n) {
  await writeFile(join(dir, `flotilla-bench-${n}.txt`), `task ${n}\n`);
  await mkdir(join(dir, `bench-new-${n}`, 'deep'), { recursive: true });
  await writeFile(join(dir, `bench-new-${n}`, 'deep', 'file.txt'), 'a new folder\n');
  await writeFile(join(dir, `bench-${n}.log`), 'ignored, or not\n');
  await writeFile(join(dir, 'README.md'), `edited in place by ${n}\n`);
}

async function setUp(kind, root, mode, slots) {
  const source = kind === 'linux' ? await linuxRepo() : await generatedRepo();
  const repo = await scratchClone(source, join(root, `${kind}-${mode}.git`));
  const cache = await openRepoCache({ repo, cacheDir: join(root, `cache-${kind}-${mode}`) });
  const pool = await checkoutPool(cache, { root: join(root, `checkouts-${kind}-${mode}`), keep: slots });
  const base = execFileSync('git', ['--git-dir', repo, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
  // The first leases make the checkouts (and, scanning, their records): not counted.
  const leases = await Promise.all(Array.from({ length: slots }, () => leaseCheckout(pool, base, undefined)));
  for (const lease of leases) await lease.release();
  return { pool, base };
}

async function withMode(mode, body) {
  process.env.FLOTILLA_CHECKOUT_SCAN = mode;
  return body();
}

export async function run(options = {}) {
  const repos = options.repos ?? defaults.repos;
  const cycles = Number(options.cycles ?? defaults.cycles);
  const modes = options.modes ?? defaults.modes;
  const slots = Number(options.slots ?? defaults.slots);
  process.env.FLOTILLA_WATCHMAN = 'off';
  process.env.FLOTILLA_MONITOR = 'off';
  resetFileMonitor();
  const root = join(tmpdir(), `flotilla-bench-cycle-${process.pid}`);
  await mkdir(root, { recursive: true });
  const rows = [['repo', 'mode', 'cycles', 'wall ms', 'node CPU ms', 'git CPU ms', 'CPU ms']];
  const results = [];
  try {
    for (const kind of repos) {
      const setups = {};
      for (const mode of modes) setups[mode] = await withMode(mode, () => setUp(kind, root, mode, slots));
      const sums = Object.fromEntries(modes.map((m) => [m, { wall: 0, self: 0, children: 0 }]));
      for (let n = 0; n < cycles; n++) {
        for (const mode of modes) {
          await withMode(mode, async () => {
            const [wall0, self0, children0] = [now(), selfCpuMs(), await childrenCpuMs()];
            const one = async (k) => {
              const lease = await leaseCheckout(setups[mode].pool, setups[mode].base, undefined);
              await attempt(lease.dir, `${n}-${k}`);
              const listing = await readLeasedWorktree(lease.dir);
              await lease.release();
              if (listing.changes.length < 3) throw new Error(`${kind} ${mode}: the listing missed changes`);
            };
            await Promise.all(Array.from({ length: slots }, (_, k) => one(k)));
            const sum = sums[mode];
            sum.wall += now() - wall0;
            sum.self += selfCpuMs() - self0;
            sum.children += (await childrenCpuMs()) - children0;
          });
        }
      }
      for (const mode of modes) {
        const s = sums[mode];
        const per = (x) => x / (cycles * slots);
        rows.push([
          kind,
          mode,
          String(cycles),
          fmt(per(s.wall), 0),
          fmt(per(s.self), 0),
          fmt(per(s.children), 0),
          fmt(per(s.self + s.children), 0),
        ]);
        results.push({
          repo: kind,
          mode,
          cycles,
          ...Object.fromEntries(Object.entries(s).map(([k, v]) => [k, per(v)])),
        });
      }
    }
  } finally {
    forgetCheckoutPools();
    await rm(root, { recursive: true, force: true });
  }
  console.log(
    `one task's workspace work (lease with its reset, changes, listing, release), ${slots} at a time; per task (wall: the wave's, shared by its ${slots}):`,
  );
  printTable(rows);
  return results;
}
