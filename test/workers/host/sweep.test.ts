import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadMissionOrThrow } from '../../../src/producer/load.js';
import { attemptJobId, JOBS, QUEUES } from '../../../src/shared/contracts.js';
import { withSignature } from '../../../src/shared/signing.js';
import { prepareWorkspace } from '../../../src/workers/workspace/prepare-workspace.js';
import { indent, sim, startCluster, type TestCluster } from '../../helpers/flotilla.js';

/**
 * A producer killed between writing a mission's state and adding its first jobs must not lose the
 * mission: a host's sweep finds the queued tasks without jobs and adds them. A host killed between
 * its gate job failing for good and settling the task must not either: the sweep settles it.
 */
describe('the sweep', () => {
  let cluster: TestCluster;

  beforeAll(async () => {
    cluster = await startCluster({ hosts: 0 });
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it('runs a mission whose submitter died before enqueuing anything', async () => {
    const dir = join(cluster.dir, 'orphan');
    await mkdir(join(dir, 'ws'), { recursive: true });
    const file = join(dir, 'mission.yaml');
    await writeFile(
      file,
      [
        'goal: orphaned',
        'workspace: ./ws',
        'tasks:',
        '  - id: one',
        '    title: one',
        '    exit_criteria: ["test -f one.txt"]',
        '    description: |',
        indent(sim('- write: {path: one.txt, content: "1"}')),
        '  - id: two',
        '    title: two',
        '    depends_on: [one]',
        '    exit_criteria: ["test -f one.txt && test -f two.txt"]',
        '    description: |',
        indent(sim('- write: {path: two.txt, content: "2"}')),
      ].join('\n'),
    );
    const spec = await loadMissionOrThrow(file);
    const id = 'orphaned-mission';
    const workspace = await prepareWorkspace({ workspace: spec.workspace, missionId: id });
    // What submit writes before it adds the root's flow; the "crash" is stopping here.
    await cluster.client.store.createMission({
      id,
      spec,
      repo: workspace.repo,
      baseCommit: workspace.baseCommit,
      roots: ['one'],
      now: new Date().toISOString(),
    });
    await cluster.addHost({ sweepMs: 500 });
    const status = await cluster.client.wait(id, { pollMs: 200 });
    expect(status.status).toBe('done');
    expect(status.tasks.map((t) => [t.id, t.status, t.attempts])).toEqual([
      ['one', 'completed', 1],
      ['two', 'completed', 1],
    ]);
  });
});

describe('the sweep, for a gate job that failed for good', () => {
  // A cluster of its own: the first test's host would take the gate job this test fails by hand.
  let cluster: TestCluster;

  beforeAll(async () => {
    cluster = await startCluster({ hosts: 0 });
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it('settles a task whose gate job failed for good while no host heard of it', async () => {
    const dir = join(cluster.dir, 'failed-gate');
    await mkdir(join(dir, 'ws'), { recursive: true });
    const file = join(dir, 'mission.yaml');
    const task = (id: string, deps: string[] = []) => [
      `  - id: ${id}`,
      `    title: ${id}`,
      ...(deps.length > 0 ? [`    depends_on: [${deps.join(', ')}]`] : []),
      '    exit_criteria: ["true"]',
      '    critic: false',
      '    description: |',
      indent(sim(`- write: {path: ${id}.txt, content: "${id}"}`)),
    ];
    await writeFile(
      file,
      [
        'goal: failed gate',
        'workspace: ./ws',
        'tasks:',
        ...task('one'),
        ...task('two', ['one']),
        ...task('three'),
      ].join('\n'),
    );
    const spec = await loadMissionOrThrow(file);
    const id = 'failed-gate-mission';
    const workspace = await prepareWorkspace({ workspace: spec.workspace, missionId: id });
    await cluster.client.store.createMission({
      id,
      spec,
      repo: workspace.repo,
      baseCommit: workspace.baseCommit,
      roots: ['one', 'three'],
      now: new Date().toISOString(),
    });
    await cluster.client.store.mark(id, 'one', 1, 'reviewing');
    // One's gate job, failed by a bare BullMQ worker: what is left after a host that ran its last
    // try died before its `failed` handler settled the task (or after BullMQ failed it for stalling).
    const connection = new Redis(cluster.redis.url, { maxRetriesPerRequest: null });
    const prefix = cluster.config.prefix;
    const queue = new Queue(QUEUES.mission, { connection, prefix });
    const worker = new Worker(
      QUEUES.mission,
      async () => {
        throw new Error('git update-ref refs/heads/flotilla/x: fatal: cannot lock ref (injected)');
      },
      { connection, prefix, autorun: false },
    );
    try {
      const ref = { missionId: id, taskId: 'one', attempt: 1 };
      const jobId = attemptJobId(id, 'one', 1, 'gate');
      const failed = new Promise<void>((done) => worker.once('failed', () => done()));
      await queue.add(JOBS.gate, withSignature(ref, cluster.config.secret), { jobId, attempts: 1 });
      void worker.run();
      await failed;
      expect(await (await queue.getJob(jobId))?.getState()).toBe('failed');
    } finally {
      await worker.close();
      await queue.close();
      await connection.quit();
    }

    // Three has no job at all (the sweep adds it); one's failed gate is settled by the sweep.
    // Without the failed-gate check this never returns: one stays reviewing for ever.
    await cluster.addHost({ hostId: 'failed-gate-host', sweepMs: 500 });
    const status = await cluster.client.wait(id, { pollMs: 200 });
    expect(status.status).toBe('partial');
    const tasks = Object.fromEntries(status.tasks.map((t) => [t.id, t]));
    expect(tasks.one).toMatchObject({ status: 'failed', attempts: 1 });
    expect(tasks.one?.error).toBe(
      'gate failed after 1 try: git update-ref refs/heads/flotilla/x: fatal: cannot lock ref (injected)',
    );
    expect(tasks.two).toMatchObject({ status: 'skipped', error: 'dependency one failed' });
    expect(tasks.three).toMatchObject({ status: 'completed', attempts: 1 });
    const gates = (await cluster.client.store.getAudit(id)).filter(
      (e) => e.stage === 'gate' && e.taskId === 'one',
    );
    expect(gates.map((e) => e.event)).toEqual([{ kind: 'gate', action: 'fail', reason: tasks.one?.error }]);
  });
});
