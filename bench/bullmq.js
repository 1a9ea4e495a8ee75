/**
 * Raw BullMQ on this machine, for calibration against the figures BullMQ's authors and others
 * publish (docs/BENCHMARKS.md), and as the floor flotilla's own Redis work stands on: the scenarios
 * of taskforcesh/bullmq-bench (queue-add, queue-add-bulk, worker-concurrent with concurrency 10),
 * plus adding the 4-job chain flotilla adds per task attempt (run → verify → critic → gate).
 */
import { FlowProducer, Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { startRedis } from './lib/redis.js';
import { fmt, fmtStats, now, printTable, summarize, uniquePrefix, withDeadline } from './lib/util.js';

export const defaults = { n: 10_000, runs: 3 };

const DATA = { missionId: 'm-0123456789', taskId: 't00001', attempt: 1, capability: 'code_implementation' };

async function once(redisUrl, n) {
  const connection = new Redis(redisUrl, { maxRetriesPerRequest: null });
  const prefix = uniquePrefix('bullmq');
  const out = {};
  try {
    const queue = new Queue('calibrate', { connection, prefix });
    let t = now();
    for (let i = 0; i < n; i++) await queue.add('job', DATA);
    out.add = n / ((now() - t) / 1000);

    const bulk = new Queue('calibrate-bulk', { connection, prefix });
    t = now();
    for (let i = 0; i < n; i += 100) {
      await bulk.addBulk(Array.from({ length: Math.min(100, n - i) }, () => ({ name: 'job', data: DATA })));
    }
    out.addBulk = n / ((now() - t) / 1000);

    let done = 0;
    let finish;
    const drained = new Promise((resolve) => {
      finish = resolve;
    });
    t = now();
    const worker = new Worker('calibrate', async () => 'ok', { connection, prefix, concurrency: 10 });
    worker.on('completed', () => {
      done += 1;
      if (done === n) finish();
    });
    await withDeadline(drained, 10 * 60_000, 'bullmq worker');
    out.worker = n / ((now() - t) / 1000);
    await worker.close();

    const flows = new FlowProducer({ connection, prefix });
    const flowCount = Math.max(1, Math.floor(n / 5));
    const child = { ...{ ignoreDependencyOnFailure: true }, attempts: 3 };
    t = now();
    for (let i = 0; i < flowCount; i++) {
      const id = (stage) => `m.t${i}.a1.${stage}`;
      await flows.add({
        name: 'gate',
        queueName: 'mission',
        data: DATA,
        opts: { jobId: id('gate') },
        children: [
          {
            name: 'critic',
            queueName: 'critic',
            data: DATA,
            opts: { ...child, jobId: id('critic') },
            children: [
              {
                name: 'verify',
                queueName: 'verify',
                data: DATA,
                opts: { ...child, jobId: id('verify') },
                children: [
                  { name: 'run', queueName: 'dispatch.x', data: DATA, opts: { ...child, jobId: id('run') } },
                ],
              },
            ],
          },
        ],
      });
    }
    out.flow4 = flowCount / ((now() - t) / 1000);
    await flows.close();
    await queue.close();
    await bulk.close();
  } finally {
    connection.disconnect();
  }
  return out;
}

export async function run(options, log = console.log) {
  const n = options.jobs ?? defaults.n;
  const runs = options.runs ?? defaults.runs;
  log(
    `bullmq: raw BullMQ on this machine, ${n} jobs per scenario, ${runs} run(s), one redis-server, one connection`,
  );
  const results = [];
  for (let r = 0; r < runs; r++) {
    const redis = await startRedis();
    try {
      const result = await once(redis.url, n);
      results.push(result);
      log(
        `  run ${r + 1}: add ${fmt(result.add, 0)}/s, addBulk ${fmt(result.addBulk, 0)}/s, worker (concurrency 10) ${fmt(result.worker, 0)}/s, 4-job flows ${fmt(result.flow4, 0)}/s`,
      );
    } finally {
      await redis.stop();
    }
  }
  const stat = (key) => summarize(results.map((r) => r[key]));
  const out = { n, add: stat('add'), addBulk: stat('addBulk'), worker: stat('worker'), flow4: stat('flow4') };
  log('');
  printTable(
    [
      ['scenario', 'per second'],
      ['queue.add, one at a time', fmtStats(out.add, 0)],
      ['queue.addBulk, 100 per call', fmtStats(out.addBulk, 0)],
      ['worker, no-op, concurrency 10', fmtStats(out.worker, 0)],
      ['FlowProducer.add, 4-job chain', fmtStats(out.flow4, 0)],
    ],
    log,
  );
  return out;
}
