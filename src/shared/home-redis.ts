import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { chmod, link, mkdir, open, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import type { Config } from './config.js';
import { FlotillaError } from './errors.js';

/**
 * The one-machine Redis: without REDIS_URL every flotilla process of a machine (`run`, `status`,
 * `worker`, a script's client) uses one redis-server under flotilla's home, `<home>/redis/`. It
 * listens only on a unix socket in that directory (mode 0700, no TCP port), keeps its data in an
 * append-only file there, and its jobs are signed with a secret made once for the home
 * (`<home>/redis/secret`, 0600), so another local user can neither reach it nor forge work for it,
 * and what one run did is there for the next command to read.
 *
 * Whoever needs it and finds it down starts it; whoever leaves it last stops it. Each process
 * holds one connection named `flotilla-lease` while it uses the server; leaving, it looks for
 * other leases and sends SHUTDOWN (which writes the append-only file out) when there are none.
 * Starting and stopping happen under a lock file, so a process that arrives while another leaves
 * either counts as a lease or finds the server down and starts it again. A process that dies
 * without leaving loses its lease with its socket; the server then stays up, unused, until the
 * next process that uses it leaves.
 */

export interface HomeRedisPaths {
  readonly dir: string;
  readonly socket: string;
  readonly secretFile: string;
  readonly lockFile: string;
  readonly pidFile: string;
  readonly logFile: string;
}

export function homeRedisPaths(home: string): HomeRedisPaths {
  const dir = join(home, 'redis');
  return {
    dir,
    socket: join(dir, 'redis.sock'),
    secretFile: join(dir, 'secret'),
    lockFile: join(dir, 'lock'),
    pidFile: join(dir, 'redis.pid'),
    logFile: join(dir, 'redis.log'),
  };
}

/** The URL a process of this home reaches its Redis by (shared/redis.ts reads `unix://`). */
export function homeRedisUrl(home: string): string {
  return `unix://${homeRedisPaths(home).socket}`;
}

export interface HomeRedis {
  readonly url: string;
  /** The home's job secret: signs and checks jobs and specs when FLOTILLA_SECRET is unset. */
  readonly secret: string;
  readonly dir: string;
  /**
   * Settles with a sentence when the server goes away while this process still uses it (killed,
   * crashed): a run cannot go on, and says so in one line. Never settles otherwise.
   */
  readonly lost: Promise<string>;
  /** Gives up this process's lease; the last one out stops the server. Idempotent. */
  release(): Promise<void>;
}

/** The name of the one connection each process holds while it uses the home's server. */
export const LEASE_NAME = 'flotilla-lease';

const NOT_INSTALLED =
  'REDIS_URL is not set and redis-server is not installed; install redis-server (apt-get install redis-server, brew install redis) or set REDIS_URL';

/** How long a fresh redis-server may take to answer PING on a slow, busy machine (it replays its file first). */
const READY_TIMEOUT_MS = 10_000;
/** How long a SHUTDOWN may take to write the append-only file out and exit. */
const EXIT_TIMEOUT_MS = 10_000;
/** Longer than a start plus a stop: a lock this old is left by a process that is gone or stuck. */
const LOCK_STALE_MS = READY_TIMEOUT_MS + EXIT_TIMEOUT_MS + 10_000;
/** macOS's sun_path is 104 bytes (Linux's 108): a longer socket path cannot be bound. */
const MAX_SOCKET_PATH = 103;

/**
 * The Redis a command uses: REDIS_URL as given, or the home's server (started when down), whose
 * secret signs jobs unless FLOTILLA_SECRET is set. `home` is undefined with REDIS_URL.
 */
export async function chooseRedis(config: Config): Promise<{ config: Config; home?: HomeRedis }> {
  if (config.redisUrl) return { config };
  const home = await openHomeRedis(config.home);
  return {
    config: Object.freeze({ ...config, redisUrl: home.url, secret: config.secret ?? home.secret }),
    home,
  };
}

/** True when `config` names its home's own server (a command may then compact it, as prune does). */
export function isHomeRedis(config: Config): boolean {
  return config.redisUrl === homeRedisUrl(config.home);
}

/** Takes a lease on the home's server, starting it when it is down. */
export async function openHomeRedis(home: string): Promise<HomeRedis> {
  const paths = homeRedisPaths(home);
  if (Buffer.byteLength(paths.socket) > MAX_SOCKET_PATH) {
    throw new FlotillaError(
      'redis/unreachable',
      `REDIS_URL is not set and the private Redis socket ${paths.socket} is longer than a unix socket path may be (${MAX_SOCKET_PATH} bytes); set a shorter FLOTILLA_HOME or set REDIS_URL`,
    );
  }
  await privateDir(paths.dir);
  const { secret, server, lease } = await withLock(paths, async () => {
    const secret = await homeSecret(paths.secretFile);
    const server = (await answers(paths.socket)) ? undefined : await startServer(paths);
    return { secret, server, lease: await openLease(paths.socket) };
  });

  let releasing: Promise<void> | undefined;
  const lost = new Promise<string>((resolve) => {
    lease.once('end', () => {
      if (releasing) return;
      // The socket closes a moment before the exit of a server this process started is reported.
      if (!server) return resolve(`the private redis-server under ${paths.dir} went away`);
      void Promise.race([server.exited, sleep(1_000).then(() => undefined)]).then((end) =>
        resolve(`the private redis-server ${end ? describeEnd(end) : 'went away'}`),
      );
    });
  });
  return {
    url: homeRedisUrl(home),
    secret,
    dir: paths.dir,
    lost,
    release: () => {
      releasing ??= withLock(paths, () => leave(lease)).finally(() => server?.child.unref());
      return releasing;
    },
  };
}

/** Under the lock: the lease goes, and the server too when no other lease is left. */
async function leave(lease: Redis): Promise<void> {
  try {
    // Renamed first, so this connection is not counted as someone else's lease.
    await lease.client('SETNAME', 'flotilla-leaving');
    const clients = String(await lease.client('LIST'));
    const others = clients.split('\n').filter((line) => line.includes(` name=${LEASE_NAME} `));
    if (others.length > 0) {
      await lease.quit();
      return;
    }
    // The server closes its connections as it exits, after writing the append-only file out and
    // removing its socket. Its pid is no sign: an orphaned server whose parent is gone stays a
    // zombie where nothing reaps it (a container's init), and kill(pid, 0) succeeds on a zombie.
    const closed = new Promise<void>((resolve) => lease.once('end', () => resolve()));
    await lease.call('SHUTDOWN').catch(() => undefined);
    await Promise.race([closed, sleep(EXIT_TIMEOUT_MS)]);
    lease.disconnect();
  } catch {
    // The server went away under us: nothing to stop.
    lease.disconnect();
  }
}

/** The directory only this user can enter; refused when another user owns it. */
async function privateDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const info = await stat(dir);
  const uid = process.getuid?.();
  if (uid !== undefined && info.uid !== uid) {
    throw new FlotillaError(
      'redis/unreachable',
      `${dir} belongs to another user (uid ${info.uid}); the private Redis must live in a directory only you can enter — set FLOTILLA_HOME or REDIS_URL`,
    );
  }
  if ((info.mode & 0o777) !== 0o700) await chmod(dir, 0o700);
}

/** Made once (32 random bytes, hex) and kept 0600; written whole before anyone can read it. */
async function homeSecret(file: string): Promise<string> {
  const existing = await readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  });
  if (existing?.trim()) return existing.trim();
  const draft = `${file}.${process.pid}`;
  await writeFile(draft, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600 });
  await link(draft, file).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'EEXIST') throw error;
  });
  await unlink(draft);
  return (await readFile(file, 'utf8')).trim();
}

interface Started {
  readonly child: ChildProcess;
  readonly exited: Promise<End>;
}

type End = { code: number | null; signal: NodeJS.Signals | null } | 'not-installed';

/**
 * A redis-server in a session and process group of its own (`detached`): a Ctrl-C in a terminal
 * goes to the terminal's whole foreground group, and Redis must outlive that signal so that
 * `flotilla run` can cancel the mission, print the summary and then leave. It outlives the process
 * that started it when others still hold leases.
 */
async function startServer(paths: HomeRedisPaths): Promise<Started> {
  await rotateLog(paths.logFile);
  const args = ['--port', '0', '--unixsocket', paths.socket, '--unixsocketperm', '700'];
  args.push('--dir', paths.dir, '--appendonly', 'yes', '--save', '');
  // Warnings only: a server started and stopped by every command would otherwise log ~1.5 KB a time.
  args.push('--pidfile', paths.pidFile, '--logfile', paths.logFile, '--loglevel', 'warning');
  args.push('--maxmemory-policy', 'noeviction');
  const child = spawn('redis-server', args, { detached: true, stdio: 'ignore' });
  const exited = new Promise<End>((resolve) => {
    child.once('error', (error: NodeJS.ErrnoException) =>
      resolve(error.code === 'ENOENT' ? 'not-installed' : { code: null, signal: null }),
    );
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  let end: End | undefined;
  void exited.then((e) => {
    end = e;
  });
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (!(await answers(paths.socket))) {
    if (end === 'not-installed') throw new FlotillaError('redis/unreachable', NOT_INSTALLED);
    if (end) {
      throw new FlotillaError(
        'redis/unreachable',
        `the private redis-server ${describeEnd(end)} at start (its log: ${paths.logFile})`,
      );
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new FlotillaError(
        'redis/unreachable',
        `the private redis-server did not answer within ${READY_TIMEOUT_MS / 1000} s (its log: ${paths.logFile})`,
      );
    }
    await sleep(25);
  }
  return { child, exited };
}

/** Past this the log becomes `redis.log.1` (the one before it goes), so two files bound it. */
const LOG_ROTATE_BYTES = 1_000_000;

/** Every start adds about a kilobyte of startup lines; under the lock, before a server starts. */
async function rotateLog(file: string): Promise<void> {
  const size = await stat(file).then(
    (info) => info.size,
    () => 0,
  );
  if (size > LOG_ROTATE_BYTES) await rename(file, `${file}.1`);
}

/** One PING over the socket. */
async function answers(socket: string): Promise<boolean> {
  const probe = new Redis({
    path: socket,
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  probe.on('error', () => {});
  try {
    await probe.connect();
    return (await probe.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    probe.disconnect();
  }
}

async function openLease(socket: string): Promise<Redis> {
  const lease = new Redis({
    path: socket,
    connectionName: LEASE_NAME,
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  lease.on('error', () => {});
  await lease.connect();
  return lease;
}

/**
 * An exclusive lock file holding its owner's pid. One whose owner is dead, or older than any start
 * and stop take, is taken over.
 */
async function withLock<T>(paths: HomeRedisPaths, fn: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + LOCK_STALE_MS;
  for (;;) {
    try {
      const handle = await open(paths.lockFile, 'wx', 0o600);
      await handle.writeFile(`${process.pid}\n`);
      await handle.close();
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      if (await staleLock(paths.lockFile)) {
        await unlink(paths.lockFile).catch(() => undefined);
        continue;
      }
      if (Date.now() > deadline) {
        throw new FlotillaError(
          'redis/unreachable',
          `the private Redis under ${paths.dir} stays locked (${paths.lockFile}); remove that file if no flotilla process is running`,
        );
      }
      await sleep(20);
    }
  }
  try {
    return await fn();
  } finally {
    await unlink(paths.lockFile).catch(() => undefined);
  }
}

async function staleLock(file: string): Promise<boolean> {
  try {
    const [text, info] = await Promise.all([readFile(file, 'utf8'), stat(file)]);
    if (Date.now() - info.mtimeMs > LOCK_STALE_MS) return true;
    const pid = Number(text.trim());
    // An empty file is one being written this instant.
    return Number.isInteger(pid) && pid > 0 && !alive(pid);
  } catch {
    return false;
  }
}

/** A process that exists and is not a zombie (one that has exited but was never reaped). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    // /proc/<pid>/stat: "pid (comm) state …"; where there is no /proc, kill() has the last word.
    return !/\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true;
  }
}

function describeEnd(end: End): string {
  if (end === 'not-installed') return 'is not installed';
  if (end.signal) return `was stopped by ${end.signal}`;
  if (end.code !== null) return `exited with code ${end.code}`;
  return 'exited';
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
