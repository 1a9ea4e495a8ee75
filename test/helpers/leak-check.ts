import { setTimeout as sleep } from 'node:timers/promises';
import { Cluster, Redis } from 'ioredis';
import type { RedisHandle } from './redis-server.js';

/** What a test can hand to `trackConnection`: an ioredis client, or a BullMQ Queue/Worker/QueueEvents/FlowProducer. */
export type Trackable = Redis | Cluster | { closing: Promise<void> | undefined; name?: string };

const tracked = new Map<Trackable, string>();

/** Registers `conn` so the next `leakCheck()` fails unless it was closed. Returns `conn` for chaining. */
export function trackConnection<T extends Trackable>(conn: T, label?: string): T {
  tracked.set(conn, label ?? describe(conn));
  return conn;
}

/**
 * For `afterEach`: fails if a tracked client is not in ioredis status `end` or a tracked BullMQ
 * object was never closed. With a private server (`redis.kind !== 'external'`) it also asks the
 * server itself, which sees connections that were never tracked (BullMQ's blocking duplicates
 * included); a shared `REDIS_URL` server has other clients, so that part is skipped there.
 * Every check waits up to `timeoutMs`, because a client ends a moment after `quit()` resolves.
 */
export async function leakCheck(options: { redis?: RedisHandle; timeoutMs?: number } = {}): Promise<void> {
  const deadline = Date.now() + (options.timeoutMs ?? 2_000);
  const problems: string[] = [];
  const entries = [...tracked];
  tracked.clear();
  for (const [conn, label] of entries) {
    const problem = await waitClosed(conn, deadline);
    if (problem) problems.push(`${label}: ${problem}`);
  }
  if (options.redis && options.redis.kind !== 'external') {
    const clients = await waitNoServerClients(options.redis.url, deadline);
    problems.push(...clients.map((line) => `server still has client ${line}`));
  }
  if (problems.length > 0) {
    throw new Error(`leakCheck: ${problems.length} open connection(s):\n  ${problems.join('\n  ')}`);
  }
}

async function waitClosed(conn: Trackable, deadline: number): Promise<string | undefined> {
  if (conn instanceof Redis || conn instanceof Cluster) {
    while (conn.status !== 'end' && Date.now() < deadline) await sleep(20);
    return conn.status === 'end' ? undefined : `ioredis status '${conn.status}' (expected 'end')`;
  }
  if (conn.closing === undefined) return 'close() was never called';
  const timeout = sleep(Math.max(0, deadline - Date.now()), 'close() did not finish in time', { ref: false });
  return Promise.race([conn.closing.then(() => undefined), timeout]);
}

async function waitNoServerClients(url: string, deadline: number): Promise<string[]> {
  const probe = new Redis(url, { maxRetriesPerRequest: 1, connectionName: 'flotilla-leak-check' });
  try {
    const self = await probe.client('ID');
    for (;;) {
      const list = String(await probe.client('LIST'));
      const others = list
        .split('\n')
        .filter((line) => line.startsWith('id=') && !line.startsWith(`id=${self} `));
      if (others.length === 0 || Date.now() >= deadline) return others.map(summarize);
      await sleep(50);
    }
  } finally {
    probe.disconnect();
  }
}

function summarize(line: string): string {
  const fields = new Map(line.split(' ').map((pair) => pair.split('=', 2) as [string, string]));
  return ['addr', 'name', 'cmd', 'age'].map((key) => `${key}=${fields.get(key) ?? ''}`).join(' ');
}

function describe(conn: Trackable): string {
  if (conn instanceof Cluster) return 'ioredis Cluster';
  if (conn instanceof Redis) return `ioredis ${conn.options.host}:${conn.options.port}`;
  return `${conn.constructor.name}${conn.name ? ` '${conn.name}'` : ''}`;
}
