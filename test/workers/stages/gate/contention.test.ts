import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { attemptJobId, integrationBranch, QUEUES } from '../../../../src/shared/contracts.js';
import { contendedDelayMs } from '../../../../src/workers/stages/gate/processor.js';
import { runGit } from '../../../../src/workers/workspace/git.js';
import { indent, sim, startCluster, type TestCluster } from '../../../helpers/flotilla.js';
import { refWrites, resetRefWrites } from '../../../helpers/ref-write-seam.js';

vi.mock('../../../../src/workers/workspace/ref-files.js', async (original) =>
  (await import('../../../helpers/ref-write-seam.js')).seamed(await original()),
);

/**
 * A gate whose merge keeps losing the integration branch to other hosts. With 20 hosts gating at
 * once (bench/scale.js), 12 of 548 gates lost 8 batches in each of their job's 5 attempts: the
 * job failed for good and its task stayed `verifying`, the mission running for ever. A contended
 * gate now hands its job back for later without spending an attempt, and integrates once the
 * branch is free.
 *
 * The contention is made deterministic: while `contending` is on, "another host" moves the
 * branch right before each of the gate's writes (the seam in the in-process ref writer), so every
 * compare-and-swap is lost as it is to a busy branch. (A lock held through a whole batch is not
 * contention: the gate reports it, integrate.test.ts.)
 */
let cluster: TestCluster;

beforeAll(async () => {
  cluster = await startCluster({ hosts: 1, slots: 1 });
});
afterAll(async () => {
  resetRefWrites();
  await cluster?.stop();
});

const yaml = [
  'goal: contended gate',
  'workspace: ./ws',
  'defaults: { backoff: 100ms, max_attempts: 1 }',
  'tasks:',
  '  - id: solo',
  '    title: solo',
  '    exit_criteria: ["test -f solo.txt"]',
  '    critic: false',
  '    description: |',
  indent(sim('- write: {path: solo.txt, content: "solo"}')),
].join('\n');

describe('a gate that keeps losing the integration branch', () => {
  it('is handed back, not failed, and integrates once the branch is free', async () => {
    const id = await cluster.submit(yaml);
    const repo = (await cluster.client.store.getMission(id)).meta.repo;
    const branch = `refs/heads/${integrationBranch(id)}`;
    let contending = true;
    refWrites.before = async (ref) => {
      if (!contending || ref !== branch) return;
      const git = (...args: string[]) => runGit(args, { cwd: repo }).then((r) => r.stdout.trim());
      const tip = await git('rev-parse', branch);
      await git(
        'update-ref',
        branch,
        await git('commit-tree', `${tip}^{tree}`, '-p', tip, '-m', 'other host'),
      );
    };
    // Contended until the gate job has started more often than its 5 attempts allow a failing job to:
    // before the fix it failed for good at the fifth, and this loop ends on that instead.
    const gateKey = `${cluster.config.prefix}:${QUEUES.mission}:${attemptJobId(id, 'solo', 1, 'gate')}`;
    let started = 0;
    let failedReason: string | null = null;
    while (started <= 5 && failedReason === null) {
      await sleep(200);
      const [ats, finishedOn, reason] = await cluster.client.redis.hmget(
        gateKey,
        'ats',
        'finishedOn',
        'failedReason',
      );
      started = Number(ats ?? 0);
      if (finishedOn && reason) failedReason = reason;
    }
    expect(failedReason).toBeNull();
    contending = false;
    const status = await cluster.client.wait(id, { pollMs: 200 });
    expect(status.status).toBe('done');
    expect(status.tasks[0]).toMatchObject({ id: 'solo', status: 'completed', attempts: 1 });
    const log = await runGit(['log', '--merges', '--format=%s', `refs/heads/${integrationBranch(id)}`], {
      cwd: repo,
    });
    expect(log.stdout.trim()).toBe('flotilla: merge solo (attempt 1)');
  }, 180_000);

  it('comes back after 1–3 s, spread at random so gates that lost together come back apart', () => {
    expect(contendedDelayMs(0)).toBe(1_000);
    expect(contendedDelayMs(0.5)).toBe(2_000);
    expect(contendedDelayMs(0.9999)).toBeLessThan(3_000);
  });
});
