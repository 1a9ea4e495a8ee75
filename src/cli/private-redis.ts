import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { Redis } from 'ioredis';
import { FlotillaError } from '../shared/errors.js';

export interface PrivateRedis {
  readonly url: string;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/**
 * `flotilla run` without REDIS_URL: a redis-server of its own on a free loopback port in a temp
 * dir, stopped when the run ends. Nothing is kept, nothing else is touched.
 */
export async function startPrivateRedis(): Promise<PrivateRedis> {
  const dir = await mkdtemp(join(tmpdir(), 'flotilla-redis-'));
  const port = await freePort();
  let child: ResultPromise;
  try {
    child = execa(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        dir,
        '--maxmemory-policy',
        'noeviction',
      ],
      { reject: false, stdio: 'ignore', cleanup: true },
    );
  } catch {
    throw new FlotillaError(
      'redis/unreachable',
      'REDIS_URL is not set and redis-server is not installed; install redis-server or set REDIS_URL',
    );
  }
  const url = `redis://127.0.0.1:${port}`;
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (child.exitCode !== null && child.exitCode !== undefined) break;
    const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on('error', () => {});
    try {
      await probe.connect();
      await probe.ping();
      probe.disconnect();
      break;
    } catch {
      probe.disconnect();
      if (Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  const result = await Promise.race([child.then((r) => r), new Promise((r) => setTimeout(r, 0, null))]);
  if (
    result &&
    typeof result === 'object' &&
    'failed' in result &&
    (result as { code?: string }).code === 'ENOENT'
  ) {
    throw new FlotillaError(
      'redis/unreachable',
      'REDIS_URL is not set and redis-server is not installed; install redis-server or set REDIS_URL',
    );
  }
  return {
    url,
    stop: async () => {
      child.kill('SIGTERM');
      await child.catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    },
  };
}
