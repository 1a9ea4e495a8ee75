/**
 * A private redis-server per benchmark on a free loopback port, and the INFO readings the
 * benchmarks report: memory and per-command call counts.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { sleep } from './util.js';

const HOST = '127.0.0.1';

export function freePort() {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, HOST, () => {
      const { port } = server.address();
      server.close(() => resolvePort(port));
    });
  });
}

async function answersPing(port) {
  const client = new Redis({
    host: HOST,
    port,
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  });
  client.on('error', () => {});
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

/** Starts `redis-server` (no persistence, noeviction, like production's policy) and waits for PING. */
export async function startRedis() {
  const dir = await mkdtemp(join(tmpdir(), 'flotilla-bench-redis-'));
  const port = await freePort();
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', HOST, '--save', '', '--appendonly', 'no', '--dir', dir].concat([
      '--maxmemory-policy',
      'noeviction',
      '--daemonize',
      'no',
    ]),
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let exited = false;
  const exit = new Promise((done) =>
    child.on('exit', () => {
      exited = true;
      done();
    }),
  );
  const deadline = Date.now() + 15_000;
  while (!(await answersPing(port))) {
    if (exited || Date.now() > deadline) throw new Error(`redis-server did not start on port ${port}`);
    await sleep(50);
  }
  const admin = new Redis({ host: HOST, port, maxRetriesPerRequest: 1 });
  admin.on('error', () => {});
  return {
    url: `redis://${HOST}:${port}`,
    port,
    admin,
    pid: child.pid,
    async stop() {
      admin.disconnect();
      if (!exited) child.kill('SIGTERM');
      await Promise.race([exit, sleep(5_000)]);
      if (!exited) child.kill('SIGKILL');
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export function parseInfo(text) {
  const out = {};
  for (const line of text.split('\r\n')) {
    const at = line.indexOf(':');
    if (at > 0 && !line.startsWith('#')) out[line.slice(0, at)] = line.slice(at + 1);
  }
  return out;
}

/** INFO's default sections (server, memory, stats, cpu, …) at once, as `{ field: value }` (strings). */
export async function redisInfo(admin) {
  return parseInfo(await admin.info());
}

export async function usedMemory(admin) {
  return Number(parseInfo(await admin.info('memory')).used_memory);
}

/** `{ command: calls }` from INFO commandstats; commands run inside Lua scripts are counted too. */
export async function commandCalls(admin) {
  const info = parseInfo(await admin.info('commandstats'));
  const calls = {};
  for (const [key, value] of Object.entries(info)) {
    const match = /calls=(\d+)/.exec(value);
    if (key.startsWith('cmdstat_') && match) calls[key.slice('cmdstat_'.length)] = Number(match[1]);
  }
  return calls;
}

export function diffCalls(before, after) {
  const out = {};
  for (const [key, value] of Object.entries(after)) {
    const delta = value - (before[key] ?? 0);
    if (delta > 0) out[key] = delta;
  }
  return out;
}

/** The CPU seconds redis-server itself used so far (user + sys), from INFO cpu. */
export async function redisCpuSeconds(admin) {
  const info = parseInfo(await admin.info('cpu'));
  return Number(info.used_cpu_user) + Number(info.used_cpu_sys);
}
