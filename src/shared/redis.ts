import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { FlotillaError } from './errors.js';
import { redactUrlCredentials } from './url-credentials.js';

export type RedisClient = Redis | Cluster;

/**
 * `redis://host:port` is one Redis; `unix:///path/to/redis.sock` one Redis on a unix socket (the
 * home's own server, shared/home-redis.ts); `redis+cluster://h1:p1,h2:p2` is a Redis Cluster (the
 * hash-tagged prefix keeps every flotilla key of a deployment in one slot).
 */
export interface ConnectionSpec {
  readonly url: string;
  /** Workers block on Redis and must never give up a command: maxRetriesPerRequest null. */
  readonly role: 'worker' | 'producer';
}

export function createRedis({ url, role }: ConnectionSpec): RedisClient {
  const common: RedisOptions =
    role === 'worker'
      ? { maxRetriesPerRequest: null, enableReadyCheck: true }
      : { maxRetriesPerRequest: 1, enableOfflineQueue: true, connectTimeout: 3_000 };
  if (url.startsWith('redis+cluster://')) {
    const nodes = url
      .slice('redis+cluster://'.length)
      .split(',')
      .map((hostPort) => {
        const [host, port] = hostPort.split(':');
        return { host: host || '127.0.0.1', port: Number(port || 6379) };
      });
    return new Cluster(nodes, { redisOptions: common, enableOfflineQueue: true });
  }
  // ioredis reads a bare path as a socket but parses `unix://` as a host named "unix".
  if (url.startsWith('unix://')) return new Redis({ ...common, path: socketPath(url) });
  return new Redis(url, common);
}

/** The socket of a `unix:///path` URL. */
export function socketPath(url: string): string {
  return decodeURIComponent(new URL(url).pathname);
}

/** Producers fail fast: one PING with a short deadline, and a one-line message when it fails. */
export async function connectOrFail(url: string, timeoutMs = 3_000): Promise<RedisClient> {
  const client = createRedis({ url, role: 'producer' });
  // ioredis reports connection errors as events; without a listener they'd be printed.
  let lastError: Error | undefined;
  client.on('error', (error: Error) => {
    lastError = error;
  });
  try {
    await Promise.race([
      client.ping(),
      new Promise((_, reject) => setTimeout(() => reject(new Error('timed out')), timeoutMs).unref()),
    ]);
    return client;
  } catch (error) {
    client.disconnect();
    const reason = describeRedisError(lastError ?? (error as Error));
    throw new FlotillaError(
      'redis/unreachable',
      `Redis is not reachable at ${redactUrlCredentials(url)} (${reason})`,
    );
  }
}

function describeRedisError(error: Error): string {
  const code = (error as NodeJS.ErrnoException).code;
  return code ? `${code}` : error.message;
}
