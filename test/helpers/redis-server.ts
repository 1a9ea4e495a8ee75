import { randomBytes } from 'node:crypto';
import { accessSync, constants } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa, type ResultPromise } from 'execa';
import { Redis } from 'ioredis';
import { getFreePort } from './free-port.js';

/** A Redis for one test file: a private `redis-server`, a testcontainer, or the server in `REDIS_URL`. */
export interface RedisHandle {
  url: string;
  host: string;
  port: number;
  /** Data directory of a private server; '' for `REDIS_URL`, '/data' inside a container. */
  dir: string;
  kind: 'spawned' | 'container' | 'external';
  /** Only a spawned server can be crashed and restarted; tests that need it skip otherwise. */
  canRestart: boolean;
  /** Stops the server and removes a temp dir it created. Idempotent; a no-op for `REDIS_URL`. */
  stop(): Promise<void>;
  /** Crashes the server (SIGKILL unless told otherwise); `restart()` brings it back. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Starts the server again on the same port and dir (stopping it first if it runs). */
  restart(): Promise<void>;
  /** A fresh hash-tagged BullMQ prefix, so tests sharing one Redis (or a cluster) never collide. */
  prefix(): string;
}

export interface StartRedisOptions {
  /** `--appendonly yes` with `--appendfsync always`, so a SIGKILL loses nothing acknowledged. */
  appendonly?: boolean;
  /** Data dir to use (kept on stop); default a temp dir removed on stop. */
  dir?: string;
  /** Cluster mode is `startRedisCluster()`. */
  cluster?: false;
}

export interface RedisClusterHandle {
  nodes: { host: string; port: number }[];
  stop(): Promise<void>;
}

const HOST = '127.0.0.1';
const READY_TIMEOUT_MS = 15_000;

export function uniquePrefix(): string {
  return `{flotilla-test-${randomBytes(5).toString('hex')}}`;
}

export async function startRedis(options: StartRedisOptions = {}): Promise<RedisHandle> {
  const external = process.env.REDIS_URL;
  if (external) return externalHandle(external);
  if (onPath('redis-server')) return spawnedHandle(options);
  return containerHandle(options);
}

function externalHandle(url: string): RedisHandle {
  const parsed = new URL(url);
  const unsupported = (what: string) => () =>
    Promise.reject(
      new Error(`RedisHandle.${what}() is not supported with REDIS_URL (${url}); check handle.canRestart`),
    );
  return {
    url,
    host: parsed.hostname,
    port: Number(parsed.port || 6379),
    dir: '',
    kind: 'external',
    canRestart: false,
    // The server is not ours: stopping it means nothing, and afterAll hooks call stop() unconditionally.
    stop: () => Promise.resolve(),
    kill: unsupported('kill'),
    restart: unsupported('restart'),
    prefix: uniquePrefix,
  };
}

async function spawnedHandle(options: StartRedisOptions): Promise<RedisHandle> {
  const dir = options.dir ?? (await mkdtemp(join(tmpdir(), 'flotilla-redis-')));
  const args = (port: number) => [
    ...['--port', String(port), '--bind', HOST, '--save', '', '--dir', dir, '--daemonize', 'no'],
    ...['--appendonly', options.appendonly ? 'yes' : 'no', '--maxmemory-policy', 'noeviction'],
    ...(options.appendonly ? ['--appendfsync', 'always'] : []),
  ];
  let server: RedisProcess | undefined = await launchOnFreePort(args);
  const port = server.port;
  let stopped = false;
  const running = (what: string): RedisProcess => {
    if (stopped) throw new Error(`RedisHandle.${what}(): the server was stopped for good`);
    if (!server) throw new Error(`RedisHandle.${what}(): the server is not running (call restart())`);
    return server;
  };
  return {
    url: `redis://${HOST}:${port}`,
    host: HOST,
    port,
    dir,
    kind: 'spawned',
    canRestart: true,
    async stop() {
      if (stopped) return;
      stopped = true;
      await server?.terminate('SIGTERM');
      server = undefined;
      if (options.dir === undefined) await rm(dir, { recursive: true, force: true });
    },
    async kill(signal = 'SIGKILL') {
      await running('kill').terminate(signal);
      server = undefined;
    },
    async restart() {
      if (stopped) throw new Error('RedisHandle.restart(): the server was stopped for good');
      await server?.terminate('SIGTERM');
      server = undefined;
      server = await launch(args(port), port);
    },
    prefix: uniquePrefix,
  };
}

async function containerHandle(options: StartRedisOptions): Promise<RedisHandle> {
  const tc = await import('testcontainers').catch(() => undefined);
  const runtime = await tc?.getContainerRuntimeClient().catch(() => undefined);
  if (!tc || !runtime) throw new Error(NO_REDIS_MESSAGE);
  const container = await new tc.GenericContainer('redis:7')
    .withExposedPorts(6379)
    .withCommand(['redis-server', '--save', '', '--appendonly', options.appendonly ? 'yes' : 'no'])
    .withWaitStrategy(tc.Wait.forLogMessage('Ready to accept connections'))
    .start();
  const host = container.getHost();
  const port = container.getMappedPort(6379);
  const unsupported = (what: string) => () =>
    Promise.reject(new Error(`RedisHandle.${what}() is not supported for a testcontainers Redis`));
  let stopping: Promise<unknown> | undefined;
  return {
    url: `redis://${host}:${port}`,
    host,
    port,
    dir: '/data',
    kind: 'container',
    canRestart: false,
    stop: async () => {
      stopping ??= container.stop();
      await stopping;
    },
    kill: unsupported('kill'),
    restart: unsupported('restart'),
    prefix: uniquePrefix,
  };
}

const NO_REDIS_MESSAGE =
  'Cannot start a Redis for the tests: `redis-server` is not on PATH and no Docker engine is reachable.\n' +
  'Do one of: install Redis 7 (Debian/Ubuntu: `apt-get install redis-server redis-tools`; macOS: ' +
  '`brew install redis`); start a Docker engine (the tests then run `redis:7` through testcontainers); ' +
  'or set REDIS_URL=redis://host:port to use an existing Redis (each test uses its own key prefix).';

/**
 * A Redis Cluster of `masters` private nodes (no replicas), for checking that the hash-tagged
 * prefix keeps every BullMQ key of a queue in one slot.
 */
export async function startRedisCluster(options: { masters?: number } = {}): Promise<RedisClusterHandle> {
  const masters = options.masters ?? 3;
  if (masters < 3) throw new Error('startRedisCluster: redis-cli --cluster create needs at least 3 masters');
  if (!onPath('redis-server') || !onPath('redis-cli')) throw new Error(NO_REDIS_MESSAGE);
  const dirs: string[] = [];
  const servers: RedisProcess[] = [];
  const stop = async () => {
    await Promise.all(servers.map((server) => server.terminate('SIGTERM')));
    await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
  };
  try {
    for (let i = 0; i < masters; i++) {
      const dir = await mkdtemp(join(tmpdir(), 'flotilla-redis-cluster-'));
      dirs.push(dir);
      const busPort = await getFreePort();
      // The bus port is set explicitly: the default (port + 10000) overflows for ephemeral ports.
      const args = (port: number) => [
        ...['--port', String(port), '--cluster-port', String(busPort), '--bind', HOST, '--dir', dir],
        ...['--save', '', '--appendonly', 'no', '--daemonize', 'no', '--maxmemory-policy', 'noeviction'],
        ...['--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`],
        ...['--cluster-node-timeout', '5000'],
      ];
      servers.push(await launchOnFreePort(args));
    }
    const addresses = servers.map((server) => `${HOST}:${server.port}`);
    await execa(
      'redis-cli',
      ['--cluster', 'create', ...addresses, '--cluster-replicas', '0', '--cluster-yes'],
      {
        timeout: 30_000,
        stdin: 'ignore',
      },
    );
    await Promise.all(servers.map((server) => waitForClusterOk(server.port)));
  } catch (error) {
    await stop();
    throw error;
  }
  return { nodes: servers.map((server) => ({ host: HOST, port: server.port })), stop };
}

async function waitForClusterOk(port: number): Promise<void> {
  const deadline = Date.now() + 20_000;
  const client = new Redis({ host: HOST, port, lazyConnect: true, maxRetriesPerRequest: 1 });
  client.on('error', () => {});
  try {
    await client.connect();
    for (;;) {
      const info = await client.cluster('INFO');
      if (info.includes('cluster_state:ok')) return;
      if (Date.now() > deadline)
        throw new Error(`cluster node ${HOST}:${port} never reached cluster_state:ok`);
      await sleep(100);
    }
  } finally {
    client.disconnect();
  }
}

interface RedisProcess {
  port: number;
  /** Sends `signal`, waits for exit (SIGKILL after 5 s if it lingers). */
  terminate(signal: NodeJS.Signals): Promise<void>;
}

async function launchOnFreePort(args: (port: number) => string[]): Promise<RedisProcess> {
  // getFreePort releases the port before redis binds it; another process may win the race.
  for (let attempt = 1; ; attempt++) {
    const port = await getFreePort();
    try {
      return await launch(args(port), port);
    } catch (error) {
      if (attempt >= 3 || !String(error).includes('Address already in use')) throw error;
    }
  }
}

async function launch(args: string[], port: number): Promise<RedisProcess> {
  const subprocess: ResultPromise = execa('redis-server', args, {
    buffer: false,
    reject: false,
    stdin: 'ignore',
    forceKillAfterDelay: 5_000,
  });
  let output = '';
  const keepTail = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-4_000);
  };
  subprocess.stdout?.on('data', keepTail);
  subprocess.stderr?.on('data', keepTail);
  let exited = false;
  const exit = subprocess.then(() => {
    exited = true;
  });
  const terminate = async (signal: NodeJS.Signals) => {
    if (!exited) subprocess.kill(signal);
    await exit;
  };
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (!(await answersPing(port))) {
    if (exited || Date.now() > deadline) {
      await terminate('SIGKILL');
      throw new Error(`redis-server ${args.join(' ')} did not answer PING on port ${port}:\n${output}`);
    }
    await sleep(50);
  }
  return { port, terminate };
}

async function answersPing(port: number): Promise<boolean> {
  const client = new Redis({
    host: HOST,
    port,
    lazyConnect: true,
    connectTimeout: 1_000,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  });
  client.on('error', () => {});
  try {
    await client.connect();
    // While an append-only file loads, PING fails with LOADING; that is "not ready yet".
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

function onPath(command: string): boolean {
  return (process.env.PATH ?? '').split(delimiter).some((dir) => {
    try {
      accessSync(join(dir, command), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}
