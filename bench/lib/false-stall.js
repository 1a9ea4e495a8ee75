/**
 * False stalls: a host whose event loop is blocked cannot renew its job's lock. This runs one
 * BullMQ job on a worker in this process with flotilla's lock settings, blocks this process's
 * event loop for `blockMs` inside the job, and lets a second worker — another process, like
 * another host — run the stalled checks meanwhile. The result says whether the job was handed to
 * the other worker (a false stall: the first host was alive, only busy).
 */
import { spawn } from 'node:child_process';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { ROOT, sleep, uniquePrefix } from './util.js';

const OTHER_HOST = `
import { Worker } from 'bullmq';
import { Redis } from 'ioredis';
const e = process.env;
const worker = new Worker(e.QUEUE, async () => { console.log('redelivered'); }, {
  connection: new Redis(e.URL, { maxRetriesPerRequest: null }), prefix: e.PREFIX,
  lockDuration: Number(e.LOCK), lockRenewTime: Number(e.RENEW), stalledInterval: Number(e.STALLED),
});
worker.on('stalled', () => console.log('stalled'));
await worker.waitUntilReady();
console.log('ready');
`;

export async function measureFalseStall(redisUrl, { lockMs, renewMs, stalledMs }, blockMs) {
  const prefix = uniquePrefix('stall');
  const name = 'false-stall';
  const connection = new Redis(redisUrl, { maxRetriesPerRequest: null });
  const queue = new Queue(name, { connection, prefix });
  let release;
  const otherReady = new Promise((resolve) => {
    release = resolve;
  });
  let lockLost = false;
  let finished = false;
  const worker = new Worker(
    name,
    async () => {
      await otherReady;
      const until = Date.now() + blockMs;
      while (Date.now() < until) {
        // a synchronous block: no timer, no lock renewal, runs in this process meanwhile
      }
      // Give renewals and the other host's checks time to show what the block did.
      await sleep(lockMs + stalledMs);
    },
    {
      connection: connection.duplicate(),
      prefix,
      lockDuration: lockMs,
      lockRenewTime: renewMs,
      stalledInterval: stalledMs,
    },
  );
  worker.on('lockRenewalFailed', () => {
    lockLost = true;
  });
  worker.on('error', () => {});
  worker.on('completed', () => {
    finished = true;
  });
  worker.on('failed', () => {
    finished = true;
  });
  await worker.waitUntilReady();
  await queue.add('job', {});
  while (!(await queue.getActiveCount())) await sleep(50);
  const other = spawn(process.execPath, ['--input-type=module', '-e', OTHER_HOST], {
    cwd: ROOT,
    env: {
      ...process.env,
      QUEUE: name,
      URL: redisUrl,
      PREFIX: prefix,
      LOCK: String(lockMs),
      RENEW: String(renewMs),
      STALLED: String(stalledMs),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let said = '';
  other.stdout.on('data', (chunk) => {
    said += chunk;
  });
  while (!said.includes('ready')) await sleep(50);
  release();
  const deadline = Date.now() + blockMs + 3 * (lockMs + stalledMs);
  while (!finished && Date.now() < deadline) await sleep(100);
  other.kill('SIGKILL');
  await worker.close(true);
  await queue.close();
  connection.disconnect();
  const redelivered = said.includes('redelivered') || said.includes('stalled');
  return { blockMs, redelivered, lockLost };
}
