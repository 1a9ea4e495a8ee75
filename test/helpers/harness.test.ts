import { FlowProducer, Queue, Worker } from 'bullmq';
import { Cluster, Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { getFreePort } from './free-port.js';
import { leakCheck, trackConnection } from './leak-check.js';
import { type RedisHandle, startRedis, startRedisCluster } from './redis-server.js';

const cleanups: (() => Promise<void>)[] = [];
let server: RedisHandle | undefined;

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await leakCheck(server ? { redis: server } : {});
  await server?.stop();
  server = undefined;
});

/** Tracks `closable` for the leak check and closes it after the test, in reverse order. */
function closeLater<T extends Redis | Cluster | Queue | Worker | FlowProducer>(closable: T): T {
  trackConnection(closable);
  cleanups.push(async () => {
    if (closable instanceof Redis || closable instanceof Cluster) await closable.quit();
    else await closable.close();
  });
  return closable;
}

describe('free port', () => {
  it('returns a port nothing listens on', async () => {
    const port = await getFreePort();
    expect(port).toBeGreaterThan(0);
    expect(port).toBeLessThan(65_536);
  });
});

describe('startRedis', () => {
  it('runs a BullMQ job under a unique hash-tagged prefix', async () => {
    server = await startRedis();
    const prefix = server.prefix();
    expect(prefix).toMatch(/^\{flotilla-test-[0-9a-f]+\}$/);
    expect(server.prefix()).not.toBe(prefix);

    const connection = { host: server.host, port: server.port };
    const queue = closeLater(new Queue('harness', { connection, prefix }));
    const done = new Promise<unknown>((resolve, reject) => {
      const worker = closeLater(
        new Worker('harness', async (job) => ({ doubled: job.data.n * 2 }), { connection, prefix }),
      );
      worker.on('completed', (_job, value) => resolve(value));
      worker.on('failed', (_job, error) => reject(error));
    });
    await queue.add('double', { n: 21 });
    expect(await done).toEqual({ doubled: 42 });
  });

  it('brings append-only data back after a SIGKILL and a restart on the same port', async (context) => {
    server = await startRedis({ appendonly: true });
    if (!server.canRestart) context.skip();
    const { host, port } = server;
    const prefix = server.prefix();
    // Both see the crash as connection errors; without listeners those would be unhandled.
    const ignore = () => {};
    const client = closeLater(new Redis({ host, port }));
    client.on('error', ignore);
    let reconnects = 0;
    client.on('reconnecting', () => reconnects++);
    const queue = closeLater(new Queue('durable', { connection: { host, port }, prefix }));
    queue.on('error', ignore);

    await client.set('flotilla-test:survivor', 'written before the crash');
    await queue.add('after-crash', { n: 1 });
    await server.kill();
    await server.restart();

    expect(server.port).toBe(port);
    // The same client reconnects on its own; the value and the waiting job come from the AOF.
    expect(await client.get('flotilla-test:survivor')).toBe('written before the crash');
    expect(await queue.getWaitingCount()).toBe(1);
    const processed = new Promise<string>((resolve) => {
      const worker = closeLater(
        new Worker('durable', async (job) => `processed ${job.name}`, { connection: { host, port }, prefix }),
      );
      worker.on('completed', (_job, value: string) => resolve(value));
    });
    expect(await processed).toBe('processed after-crash');
    expect(reconnects).toBeGreaterThan(0);
  });
});

describe('startRedis without a local redis-server', () => {
  const saved = { PATH: process.env.PATH, REDIS_URL: process.env.REDIS_URL };
  afterEach(() => {
    for (const [key, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  });

  it('uses REDIS_URL as given and refuses to crash or restart a server it does not own', async () => {
    process.env.REDIS_URL = 'redis://127.0.0.1:6390';
    const external = await startRedis({ appendonly: true });
    expect(external).toMatchObject({ kind: 'external', host: '127.0.0.1', port: 6390, canRestart: false });
    await expect(external.kill()).rejects.toThrow(/not supported with REDIS_URL/);
    await expect(external.restart()).rejects.toThrow(/not supported with REDIS_URL/);
    await external.stop();
  });

  it('says what to install when there is neither redis-server nor Docker', async () => {
    delete process.env.REDIS_URL;
    process.env.PATH = '/nonexistent';
    await expect(startRedis()).rejects.toThrow(/apt-get install redis-server.*REDIS_URL/s);
  });
});

describe('startRedisCluster', () => {
  it('runs a job and a parent/child flow on a 3-master cluster with the {flotilla} prefix', async () => {
    const cluster = await startRedisCluster({ masters: 3 });
    cleanups.push(cluster.stop);
    expect(cluster.nodes).toHaveLength(3);
    const prefix = '{flotilla}';
    // Producers (Queue, FlowProducer) and workers get separate clients; workers need
    // maxRetriesPerRequest: null on every node connection (BullMQ refuses a number there).
    const producer = closeLater(new Cluster(cluster.nodes, { redisOptions: {} }));
    const consumer = closeLater(new Cluster(cluster.nodes, { redisOptions: { maxRetriesPerRequest: null } }));

    const order: string[] = [];
    const processor = async (job: { name: string; data: { n: number } }) => {
      order.push(job.name);
      return job.data.n;
    };
    const parentDone = new Promise<unknown>((resolve, reject) => {
      const parents = closeLater(new Worker('cluster-parent', processor, { connection: consumer, prefix }));
      parents.on('completed', (_job, value) => resolve(value));
      parents.on('failed', (_job, error) => reject(error));
    });
    const children = closeLater(new Worker('cluster-child', processor, { connection: consumer, prefix }));
    children.on('failed', (_job, error) => order.push(`failed: ${error.message}`));

    const queue = closeLater(new Queue('cluster-child', { connection: producer, prefix }));
    const job = await queue.add('single', { n: 1 });
    const flows = closeLater(new FlowProducer({ connection: producer, prefix }));
    const flow = await flows.add({
      name: 'parent',
      queueName: 'cluster-parent',
      data: { n: 2 },
      children: [{ name: 'child', queueName: 'cluster-child', data: { n: 3 } }],
    });

    expect(await parentDone).toBe(2);
    expect(order.indexOf('single')).toBeGreaterThanOrEqual(0);
    expect(order.indexOf('child')).toBeLessThan(order.indexOf('parent'));
    expect(await flow.job.getChildrenValues()).toEqual({
      [`${prefix}:cluster-child:${flow.children?.[0]?.job.id}`]: 3,
    });
    expect(await job.isCompleted()).toBe(true);

    // Without a hash tag the same queue's keys spread over slots and BullMQ's scripts are refused.
    const untagged = closeLater(new Queue('cluster-child', { connection: producer, prefix: 'flotilla' }));
    await expect(untagged.add('x', {})).rejects.toThrow(/CROSSSLOT/);
  });
});
