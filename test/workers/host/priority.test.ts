import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Worker } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MissionStatusJson } from '../../../src/shared/contracts.js';
import { PRIORITY_AGE_MS } from '../../../src/shared/queue/priority.js';
import { QueueSet } from '../../../src/shared/queue/queues.js';
import { createRedis, type RedisClient } from '../../../src/shared/redis.js';
import { agePriorities, overtakenByOthers } from '../../../src/workers/host/age-priorities.js';
import { shouldHold } from '../../../src/workers/stages/run/hold-fetch.js';
import { indent, sim, startCluster, type TestCluster } from '../../helpers/flotilla.js';
import { uniquePrefix } from '../../helpers/redis-server.js';

/**
 * Ready tasks start longest-chain-first (run-job priorities from the graph, producer/priority.ts),
 * and two missions on one queue take turns: on a real Redis with a host of one slot, so the order
 * in which the slot is given is the order BullMQ serves the queue.
 */

function task(id: string, deps: string[], sleep: string): string {
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
    indent(sim(`- sleep: ${sleep}\n- write: {path: ${id}.txt, content: "${id}"}`)),
  ].join('\n');
}

function mission(goal: string, tasks: string[]): string {
  return [
    `goal: ${goal}`,
    `workspace: ./ws`,
    `defaults: { max_attempts: 1, timeout: 60s }`,
    `tasks:`,
    ...tasks,
  ].join('\n');
}

const started = (status: MissionStatusJson, id: string): number => {
  const found = status.tasks.find((t) => t.id === id) as { startedAt?: string | null } | undefined;
  if (!found?.startedAt) throw new Error(`task ${id} never started`);
  return Date.parse(found.startedAt);
};

describe('run-job priority on a shared queue', () => {
  let cluster: TestCluster;

  beforeAll(async () => {
    cluster = await startCluster({ hosts: 1, slots: 1 });
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  /**
   * A one-task mission holding the only slot until `free()` is called, so what the test submits
   * meanwhile queues up behind it however slow the machine is.
   */
  async function holdTheSlot(): Promise<{ id: string; free: () => Promise<void> }> {
    const gate = join(cluster.dir, `free-${Date.now()}`);
    const wait = `for i in $(seq 600); do test -e ${gate} && exit 0; sleep 0.1; done; exit 1`;
    const hold = [
      '  - id: hold',
      '    title: Hold the slot',
      '    capability: code_implementation',
      '    critic: false',
      '    depends_on: []',
      '    exit_criteria: ["true"]',
      '    description: |',
      '      Hold the slot.',
      '',
      indent(sim(`- run: [bash, -c, ${JSON.stringify(wait)}]`)),
    ].join('\n');
    const id = await cluster.submit(mission('hold the slot', [hold]));
    for (;;) {
      if ((await cluster.client.store.getTask(id, 'hold'))?.status === 'running') break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return { id, free: () => writeFile(gate, '') };
  }

  it('gives a freed slot to the head of a long chain released after short tasks', async () => {
    const hold = await holdTheSlot();
    // File order puts the short tasks first, so their run jobs are added first: FIFO would start s1.
    const id = await cluster.submit(
      mission('chain first', [
        task('s1', [], '200ms'),
        task('s2', [], '200ms'),
        task('s3', [], '200ms'),
        task('head', [], '200ms'),
        task('c2', ['head'], '200ms'),
        task('c3', ['c2'], '200ms'),
      ]),
    );
    await hold.free();
    const status = await cluster.client.wait(id, { pollMs: 200 });
    await cluster.client.wait(hold.id, { pollMs: 200 });
    expect(status.status).toBe('done');
    for (const short of ['s1', 's2', 's3'])
      expect(started(status, 'head')).toBeLessThan(started(status, short));
  });

  it('keeps the slot a run frees for the dependent its approval releases, not a side task', async () => {
    const hold = await holdTheSlot();
    const id = await cluster.submit(
      mission('hold for the chain', [
        task('head', [], '200ms'),
        task('c2', ['head'], '200ms'),
        task('c3', ['c2'], '200ms'),
        task('s1', [], '200ms'),
        task('s2', [], '200ms'),
      ]),
    );
    await hold.free();
    const status = await cluster.client.wait(id, { pollMs: 200 });
    await cluster.client.wait(hold.id, { pollMs: 200 });
    expect(status.status).toBe('done');
    // The slot frees when head's CLI is done, before its gate releases c2: without the hold a
    // side task, waiting already, takes it, and the chain waits a whole task at that link. (c3
    // ends the chain: its level is the side tasks', which were there first.)
    const sides = ['s1', 's2'].map((t) => started(status, t));
    expect(started(status, 'head')).toBeLessThan(Math.min(...sides));
    expect(started(status, 'c2')).toBeLessThan(Math.min(...sides));
  });

  it('lets a flat mission in beside a deep one, and the deep one keeps its turn', async () => {
    const hold = await holdTheSlot();
    const deep = await cluster.submit(
      mission('deep', [
        ...['a', 'b', 'c'].flatMap((chain) => [
          task(`${chain}1`, [], '200ms'),
          task(`${chain}2`, [`${chain}1`], '200ms'),
          task(`${chain}3`, [`${chain}2`], '200ms'),
        ]),
      ]),
    );
    const flat = await cluster.submit(mission('flat', [task('f1', [], '200ms'), task('f2', [], '200ms')]));
    await hold.free();
    const [deepStatus, flatStatus] = await Promise.all([
      cluster.client.wait(deep, { pollMs: 200 }),
      cluster.client.wait(flat, { pollMs: 200 }),
      cluster.client.wait(hold.id, { pollMs: 200 }),
    ]);
    expect(deepStatus.status).toBe('done');
    expect(flatStatus.status).toBe('done');
    const heads = ['a1', 'b1', 'c1'].map((t) => started(deepStatus, t));
    const deeper = ['a2', 'b2', 'c2', 'a3', 'b3', 'c3'].map((t) => started(deepStatus, t));
    const flatStarts = ['f1', 'f2'].map((t) => started(flatStatus, t));
    // Both missions' critical paths are the top level: the deep mission's heads, added first, go
    // first, and the flat mission's tasks come before the deep mission's second level.
    expect(Math.max(...heads)).toBeLessThan(Math.min(...flatStarts));
    expect(Math.max(...flatStarts)).toBeLessThan(Math.min(...deeper));
  });
});

describe('priority aging', () => {
  it('lifts a run job that waited too long at a low level above newer top-level jobs', async () => {
    await withQueues(async (redis, queues) => {
      const queue = queues.get('dispatch.aging');
      await queue.add('run', { n: 'side' }, { jobId: 'side', priority: 8 });
      await queue.add('run', { n: 'critical-1' }, { jobId: 'critical-1', priority: 1 });
      const lifted = await agePriorities({ redis, queues, hostId: 'h' }, ['dispatch.aging'], {
        now: Date.now() + PRIORITY_AGE_MS + 1,
        intervalMs: 1_000,
      });
      expect(lifted).toEqual(['side']);
      await queue.add('run', { n: 'critical-2' }, { jobId: 'critical-2', priority: 1 });
      // A second pass within the interval is another host's turn: nothing happens.
      expect(
        await agePriorities({ redis, queues, hostId: 'h2' }, ['dispatch.aging'], {
          now: Date.now() + PRIORITY_AGE_MS + 1,
          intervalMs: 1_000,
        }),
      ).toEqual([]);
      const order: string[] = [];
      const worker = new Worker(
        'dispatch.aging',
        async (job) => {
          order.push(job.id ?? '');
        },
        { connection: redis.duplicate(), prefix: queues.prefix, concurrency: 1 },
      );
      while (order.length < 3) await new Promise((resolve) => setTimeout(resolve, 50));
      await worker.close();
      expect(order).toEqual(['critical-1', 'side', 'critical-2']);
    });
  });
});

describe('which aged jobs another mission overtakes', () => {
  it.each([
    [
      'one mission: its side tasks wait behind its own chains',
      [['m.a.a1.run'], ['m.b.a1.run'], ['m.c.a1.run']],
      [],
    ],
    ['another mission ahead: the job behind it', [['n.a.a1.run'], ['m.b.a1.run']], ['m.b.a1.run']],
    [
      'two levels down, behind the other mission only',
      [['m.a.a1.run', 'n.x.a1.run'], [], ['m.c.a1.run', 'n.y.a1.run']],
      ['m.c.a1.run', 'n.y.a1.run'],
    ],
    ['the same level is FIFO, not overtaking', [[], ['n.a.a1.run', 'm.b.a1.run']], []],
    ['nothing waits', [[], []], []],
  ])('%s', (_name, levels, expected) => {
    expect([...overtakenByOthers(levels)].sort()).toEqual(expected);
  });

  it('leaves an aged side task of a mission alone behind its own critical path', async () => {
    await withQueues(async (redis, queues) => {
      const queue = queues.get('dispatch.aging');
      await queue.add('run', {}, { jobId: 'm1.side.a1.run', priority: 8 });
      await queue.add('run', {}, { jobId: 'm1.head.a1.run', priority: 1 });
      const aged = { now: Date.now() + PRIORITY_AGE_MS + 1, intervalMs: 1_000 };
      expect(await agePriorities({ redis, queues, hostId: 'h' }, ['dispatch.aging'], aged)).toEqual([]);
      // Another mission's critical path arrives: now the side task is overtaken by it, and lifted.
      await queue.add('run', {}, { jobId: 'm2.head.a1.run', priority: 1 });
      await redis.del(queues.get('dispatch.aging').toKey('age-lock'));
      expect(await agePriorities({ redis, queues, hostId: 'h' }, ['dispatch.aging'], aged)).toEqual([
        'm1.side.a1.run',
      ]);
    });
  });
});

describe('holding a queue for a run’s dependents', () => {
  it.each([
    [
      'a released dependent outranks everything waiting',
      { critic: false, released: [2], bestWaiting: 5 },
      true,
    ],
    [
      'a job as good waits already: it takes the slot',
      { critic: false, released: [3], bestWaiting: 3 },
      false,
    ],
    [
      'nothing waits: a released job wakes an idle worker',
      { critic: false, released: [1], bestWaiting: null },
      false,
    ],
    ['no dependent is released by this approval', { critic: false, released: [], bestWaiting: 8 }, false],
    ['a critic reviews first: too long to hold', { critic: true, released: [1], bestWaiting: 8 }, false],
    [
      'the plain wait list (a crashed host’s job) comes first',
      { critic: false, released: [1], bestWaiting: 0 },
      false,
    ],
  ])('%s', (_name, input, expected) => {
    expect(shouldHold(input)).toBe(expected);
  });
});

/** A Redis of a cluster without hosts, and a queue set on it, for a test that drives BullMQ itself. */
async function withQueues(test: (redis: RedisClient, queues: QueueSet) => Promise<void>): Promise<void> {
  const cluster = await startCluster({ hosts: 0 });
  const redis = createRedis({ url: cluster.redis.url, role: 'worker' });
  const queues = new QueueSet(redis, uniquePrefix());
  try {
    await test(redis, queues);
  } finally {
    await queues.close();
    await redis.quit();
    await cluster.stop();
  }
}
