import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Job, Queue, Worker } from 'bullmq';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditEvent } from '../../../../src/shared/audit.js';
import { checkpointRef, type RunJobData } from '../../../../src/shared/contracts.js';
import { createRedis } from '../../../../src/shared/redis.js';
import type { HostContext } from '../../../../src/workers/stages/context.js';
import { startCheckpoints } from '../../../../src/workers/stages/run/checkpoints.js';
import { checkoutPool } from '../../../../src/workers/workspace/checkout-pool.js';
import { runGit } from '../../../../src/workers/workspace/git.js';
import { openRepoCache } from '../../../../src/workers/workspace/repo-cache.js';
import { leaseCheckout } from '../../../../src/workers/workspace/warm-checkout.js';
import { startRedis, uniquePrefix } from '../../../helpers/redis-server.js';
import { until } from '../../../helpers/worker-process.js';

/**
 * The checkpoint timer of the run stage (src/workers/stages/run/checkpoints.ts) on a real checkout: a
 * checkpoint is never published once the run job's lock is lost (another host may be running
 * the attempt and saving its own), and a checkpoint that fails is recorded once and does not
 * stop the next one or the run.
 */
let root: string;
let counter = 0;
const scratch = (name: string) => join(root, `${name}-${++counter}`);
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'flotilla-checkpoints-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

const git = async (cwd: string, ...args: string[]) => (await runGit(args, { cwd })).stdout.trim();

/** A mission repo, a host's cache of it, and a run checkout at its base. */
async function runCheckout() {
  const repo = scratch('repo');
  await mkdir(repo, { recursive: true });
  await writeFile(join(repo, 'README.md'), '# repo\n');
  await git(repo, 'init', '--quiet', '--initial-branch=main');
  await git(repo, 'add', '-A');
  await git(repo, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '--quiet', '-m', 'base');
  const base = await git(repo, 'rev-parse', 'HEAD');
  const cache = await openRepoCache({ repo, cacheDir: scratch('cache') });
  const pool = await checkoutPool(cache, { root: scratch('checkouts'), keep: 1 });
  const lease = await leaseCheckout(pool, base, undefined);
  return { repo, base, cache, lease, dir: lease.dir };
}

/** What the timer needs of its host: the lock setting, an audit sink, a logger whose lines are kept. */
function host(lockMs = 10_000) {
  const events: AuditEvent[] = [];
  const lines: { msg: string }[] = [];
  const log = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
  const ctx = {
    hostId: 'h1',
    config: { lockMs },
    store: {
      audit: async (_id: string, entry: { event: AuditEvent }) => {
        events.push(entry.event);
        return events.length;
      },
    },
  } as unknown as HostContext;
  return { ctx, events, lines, log };
}

const refCommit = async (repo: string, ref: string) =>
  (await runGit(['rev-parse', '--verify', '--quiet', ref], { cwd: repo, allowFailure: true })).stdout.trim();

describe('the checkpoint timer', () => {
  it('publishes no checkpoint once the job lock was lost', async () => {
    const server = await startRedis();
    const redis = createRedis({ url: server.url, role: 'worker' });
    const workerConnection = redis.duplicate();
    const prefix = uniquePrefix();
    const queue = new Queue('dispatch.ckpt', { connection: redis, prefix });
    const { repo, base, dir } = await runCheckout();
    const ref = checkpointRef('m', 't', 1);
    const { ctx, events, lines, log } = host();
    const outcome: string[] = [];
    const worker = new Worker(
      'dispatch.ckpt',
      async (job: Job<RunJobData>, token) => {
        const wip = { exists: false };
        const timer = startCheckpoints(ctx, {
          job,
          token,
          cli: 'sim',
          dir,
          baseCommit: base,
          intervalMs: 100,
          wip,
          log,
        });
        await writeFile(join(dir, 'before.txt'), 'saved while the lock was held\n');
        await until(
          'a checkpoint',
          () => (events.some((e) => e.kind === 'checkpoint') ? true : undefined),
          30_000,
          50,
        );
        expect(wip.exists).toBe(true);
        outcome.push(await refCommit(repo, ref));
        // Another host took the job (a stalled check after this one's lock expired).
        await redis.set(`${prefix}:dispatch.ckpt:${job.id}:lock`, 'another-host-token', 'PX', 30_000);
        await writeFile(join(dir, 'after.txt'), 'written after the lock was lost\n');
        await until(
          'the timer to notice the lost lock',
          () =>
            lines.some((l) => l.msg === 'checkpoints stopped: the job lock was lost') ? true : undefined,
          30_000,
          50,
        );
        outcome.push(String(await timer.stop()));
      },
      { connection: workerConnection, prefix },
    );
    // Completing the job fails too (its lock is another's): that is the point.
    worker.on('error', () => {});
    try {
      await queue.add(
        'run',
        { missionId: 'm', taskId: 't', attempt: 1, capability: 'c' },
        { jobId: 'm.t.a1.run' },
      );
      await until('the processor to finish', () => (outcome.length === 2 ? true : undefined), 60_000, 50);
      const [saved, count] = outcome;
      // The ref still holds the checkpoint saved under the lock: after.txt was never published.
      expect(await refCommit(repo, ref)).toBe(saved);
      expect(await git(repo, 'ls-tree', '--name-only', ref)).toBe('README.md\nbefore.txt');
      expect(count).toBe('1');
      expect(events.map((e) => e.kind)).toEqual(['checkpoint']);
    } finally {
      await worker.close(true);
      await queue.close();
      await workerConnection.quit();
      await redis.quit();
      await server.stop();
    }
  }, 120_000);

  it('records a failed checkpoint once, goes on, and saves again when it can', async () => {
    const { repo, base, cache, dir } = await runCheckout();
    const ref = checkpointRef('m', 't', 1);
    const { ctx, events, lines, log } = host();
    // Outside a BullMQ worker there is no token and so no fence: only the git side is exercised.
    const job = { data: { missionId: 'm', taskId: 't', attempt: 1, capability: 'c' } } as Job<RunJobData>;
    const wip = { exists: false };
    // The mission repo is out of reach: every push fails.
    await git(cache.dir, 'remote', 'set-url', 'origin', join(root, 'no-such-repo'));
    const timer = startCheckpoints(ctx, {
      job,
      token: undefined,
      cli: 'sim',
      dir,
      baseCommit: base,
      intervalMs: 100,
      wip,
      log,
    });
    await writeFile(join(dir, 'work.txt'), 'work\n');
    const failures = () => lines.filter((l) => l.msg === 'checkpoint not saved; the run goes on').length;
    await until('three failed checkpoints', () => (failures() >= 3 ? true : undefined), 30_000, 50);
    expect(events.map((e) => e.kind)).toEqual(['checkpoint-failed']);
    expect(wip.exists).toBe(false);
    // Back in reach: the next interval saves.
    await git(cache.dir, 'remote', 'set-url', 'origin', repo);
    await until(
      'a checkpoint',
      () => (events.some((e) => e.kind === 'checkpoint') ? true : undefined),
      30_000,
      50,
    );
    expect(await timer.stop()).toBe(1);
    expect(wip.exists).toBe(true);
    expect(await git(repo, 'show', `${ref}:work.txt`)).toBe('work');
    expect(events.map((e) => e.kind)).toEqual(['checkpoint-failed', 'checkpoint']);
  }, 60_000);
});
