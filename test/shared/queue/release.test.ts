import { Job } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attemptJobId, QUEUES } from '../../../src/shared/contracts.js';
import { silentLogger } from '../../../src/shared/logger.js';
import { enqueueAttempts } from '../../../src/shared/queue/enqueue.js';
import { QueueSet } from '../../../src/shared/queue/queues.js';
import { indent, sim, startCluster, type TestCluster } from '../../helpers/flotilla.js';

/**
 * Release at once: a gate that approves adds its dependents' flows before it writes anything that
 * can wait, and the batch of releases is idempotent and respects a cancel.
 */
function task(id: string, deps: string[] = []): string {
  return [
    `  - id: ${id}`,
    `    title: Task ${id}`,
    `    capability: code_implementation`,
    `    critic: false`,
    `    depends_on: [${deps.join(', ')}]`,
    `    exit_criteria: ["test -f ${id}.txt"]`,
    `    description: |`,
    `      Do ${id}.`,
    '',
    indent(sim(`- write: {path: ${id}.txt, content: "${id}"}`)),
  ].join('\n');
}

const mission = (tasks: string[]) =>
  [
    'goal: release',
    'workspace: ./ws',
    'defaults: { max_attempts: 1, timeout: 60s }',
    'tasks:',
    ...tasks,
  ].join('\n');

describe('releasing dependents', () => {
  let cluster: TestCluster;
  beforeAll(async () => {
    cluster = await startCluster({ hosts: 1, slots: 2 });
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it('adds the dependents’ flows before the gate announces the approval', async () => {
    const id = await cluster.submit(mission([task('a'), task('b', ['a']), task('c', ['a'])]));
    const status = await cluster.client.wait(id, { pollMs: 200 });
    expect(status.status).toBe('done');
    // The approval's event (Redis stream ids are the server's clock in ms) …
    const events = await cluster.client.store.readEvents(id, '0', 0);
    const approved = events.find(({ event }) => event.taskId === 'a' && event.status === 'completed');
    expect(approved).toBeDefined();
    const approvedAt = Number(approved?.id.split('-')[0]);
    // … comes after the released tasks' run jobs were added (BullMQ stamps each job when added);
    // before, the gate wrote its log line and events first and enqueued after them.
    const queues = new QueueSet(cluster.client.redis, cluster.config.prefix);
    try {
      for (const dependent of ['b', 'c']) {
        const run = await queues
          .get('dispatch.code_implementation')
          .getJob(attemptJobId(id, dependent, 1, 'run'));
        expect(run?.timestamp).toBeLessThanOrEqual(approvedAt);
      }
    } finally {
      await queues.close();
    }
  });

  it('adds each attempt once however often it is released, and nothing to a cancelled mission', async () => {
    // No host serves it while we look: a mission whose root waits in its queue.
    const id = await cluster.submit(mission([task('x'), task('y', ['x']), task('z', ['x'])]));
    await cluster.client.cancel(id);
    const record = await cluster.client.store.getMission(id);
    const [, y, z] = record.spec.tasks;
    const queues = new QueueSet(cluster.client.redis, cluster.config.prefix);
    const ctx = { store: cluster.client.store, queues, secret: undefined, logger: silentLogger() };
    const gate = (taskId: string) =>
      Job.fromId(queues.get(QUEUES.mission), attemptJobId(id, taskId, 1, 'gate'));
    expect(await enqueueAttempts(ctx, id, [{ task: y!, attempt: 1 }], { unlessCancelled: true })).toEqual([]);
    expect(await gate('y')).toBeUndefined();
    // Without the cancel check (the sweep, a retry), the batch adds y and z once each.
    await enqueueAttempts(ctx, id, [
      { task: y!, attempt: 1 },
      { task: z!, attempt: 1 },
    ]);
    await enqueueAttempts(ctx, id, [{ task: y!, attempt: 1 }]);
    expect((await gate('y'))?.id).toBe(attemptJobId(id, 'y', 1, 'gate'));
    expect((await gate('z'))?.id).toBe(attemptJobId(id, 'z', 1, 'gate'));
    const routes = (await cluster.client.store.getAudit(id)).filter((e) => e.stage === 'route');
    expect(routes.map((e) => e.taskId).sort()).toEqual(['x', 'y', 'z']);
    await queues.close();
  });
});
