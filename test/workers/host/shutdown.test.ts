import { Job, Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { attemptJobId, dispatchQueue } from '../../../src/shared/contracts.js';
import {
  byTask,
  integrationMerges,
  mission,
  openStage,
  type Stage,
  task,
  writes,
} from '../../helpers/hosts-stage.js';
import {
  BIN_BUILDER,
  BIN_REVIEWER,
  cliProcesses,
  errorLines,
  startReadyWorker,
  stopAllWorkers,
  until,
  type WorkerProcess,
} from '../../helpers/worker-process.js';

/**
 * `flotilla worker`'s two-stage shutdown on real processes: the first SIGTERM drains (a running
 * CLI may finish within the grace period, then the host exits 0); a second SIGTERM stops the CLI
 * at once and the job is retried on another host as an infrastructure fault, not a task attempt.
 */
describe('graceful shutdown of a host', () => {
  let stage: Stage;

  beforeAll(async () => {
    stage = await openStage();
  });
  // A test that fails leaves no host behind to take the next test's jobs.
  afterEach(stopAllWorkers);
  afterAll(async () => {
    await stage?.close();
  });

  const start = (hostId: string) =>
    startReadyWorker(stage.cluster, {
      hostId,
      home: stage.home(hostId),
      path: [BIN_BUILDER, BIN_REVIEWER],
      graceSeconds: 120,
    });

  /** Submits one task and waits until its CLI runs on `host` (the only host up). */
  async function runningOn(host: WorkerProcess, taskId: string, steps: string) {
    const { file, ws } = await stage.writeMission(mission([task({ id: taskId, steps })]));
    const id = await stage.submit(file);
    await until(
      `${taskId}'s CLI to run on ${host.hostId}`,
      () => (cliProcesses(host.home).length > 0 ? true : undefined),
      90_000,
    );
    return { id, ws };
  }

  it('first SIGTERM: the running task finishes within the grace period, then the host exits 0', async () => {
    const draining = await start('host-g1');
    const { id, ws } = await runningOn(draining, 'finish', writes('finish', '- sleep: 10s'));
    draining.signal('SIGTERM');
    await draining.waitForLog(/SIGTERM: draining \(up to 120s\)/);
    // The premise: the host drains while its CLI still runs.
    expect(cliProcesses(draining.home)).toHaveLength(1);
    // The second host comes up only now, so the run is surely the first's, and the first takes
    // nothing new: the stages after the run are the second's.
    const other = await start('host-g2');
    const exit = await draining.exited;
    const exitedAt = Date.now();
    expect(exit).toEqual({ code: 0, signal: null });

    const status = await stage.wait(id);
    expect(status.status, await stage.explain(id)).toBe('done');
    expect(byTask(status, 'finish')).toMatchObject({ status: 'completed', attempts: 1, host: 'host-g1' });
    const audit = await stage.audit(id);
    const run = audit.filter((e) => e.stage === 'run');
    expect(run.map((e) => e.host)).toEqual(['host-g1']);
    expect(run[0]?.message).toMatch(/exited 0/);
    // The CLI finished before the host left; the stages after it ran on the host still up.
    expect(Date.parse(run[0]?.at ?? '')).toBeLessThan(exitedAt);
    expect(
      audit.filter((e) => e.stage === 'verify' || e.stage === 'critic').map((e) => e.host),
      await stage.explain(id),
    ).toEqual([other.hostId, other.hostId]);
    expect(await integrationMerges(ws, id)).toHaveLength(1);
  });

  it('second SIGTERM: the CLI is killed, the host exits at once, and another host completes the task', async () => {
    const leaving = await start('host-k1');
    const { id, ws } = await runningOn(leaving, 'long', writes('long', '- sleep: 20s'));
    const cliStarted = Date.now();
    leaving.signal('SIGTERM');
    await leaving.waitForLog(/SIGTERM: draining/);
    const secondAt = Date.now();
    leaving.signal('SIGTERM');
    const exit = await leaving.exited;
    const exitMs = Date.now() - secondAt;
    // Forced: running work was cut off, so not success but the shell's 128 + SIGTERM.
    expect(exit).toEqual({ code: 143, signal: null });
    expect(leaving.hasLog('SIGTERM again: stopping running CLIs now')).toBe(true);
    // Killed, not waited for: the CLI is gone although its 20 s sleep had not ended.
    expect(cliProcesses(leaving.home)).toEqual([]);
    expect(Date.now()).toBeLessThan(cliStarted + 20_000);
    // The job waits in its queue (BullMQ's retry backoff) for a host to take it.
    const other = await start('host-k2');
    expect(errorLines(leaving)).toEqual([]);

    const status = await stage.wait(id);
    expect(status.status, await stage.explain(id)).toBe('done');
    // Not the task's fault: still its first attempt, completed on the other host.
    expect(byTask(status, 'long')).toMatchObject({ status: 'completed', attempts: 1, host: other.hostId });
    const audit = await stage.audit(id);
    expect(audit.filter((e) => e.stage === 'route')).toHaveLength(1);
    expect(audit.filter((e) => e.stage === 'run').map((e) => e.host)).toEqual(['host-k2']);
    expect(audit.filter((e) => e.stage === 'gate').map((e) => e.message)).toEqual([
      expect.stringMatching(/^approved/),
    ]);
    expect(await integrationMerges(ws, id)).toHaveLength(1);

    // BullMQ's own retry carried the job over: two tries of one run job.
    const connection = new Redis(stage.redis.url, { maxRetriesPerRequest: null });
    const queue = new Queue(dispatchQueue('code_implementation'), {
      connection,
      prefix: stage.cluster.prefix,
    });
    try {
      const job = await Job.fromId(queue, attemptJobId(id, 'long', 1, 'run'));
      expect(job?.attemptsMade).toBe(2);
      expect((job?.stacktrace ?? []).join('\n')).toContain('CLI stopped: host shutting down');
    } finally {
      await queue.close();
      await connection.quit();
    }
    console.log(`[shutdown] second SIGTERM to exit: ${exitMs} ms`);
  });
});
