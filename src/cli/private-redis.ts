import { rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa, type Result, type ResultPromise } from 'execa';
import { Redis } from 'ioredis';
import { FlotillaError } from '../shared/errors.js';

export interface PrivateRedis {
  readonly url: string;
  /**
   * Settles with a sentence when the server exits without `stop()` having asked it to (killed,
   * crashed): the run cannot go on, and says so in one line.
   */
  readonly lost: Promise<string>;
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

const NOT_INSTALLED =
  'REDIS_URL is not set and redis-server is not installed; install redis-server (apt-get install redis-server, brew install redis) or set REDIS_URL';

/** How long a fresh redis-server may take to answer PING on a slow, busy machine. */
const READY_TIMEOUT_MS = 10_000;

/**
 * `flotilla run` without REDIS_URL: a redis-server of its own on a free loopback port in a temp
 * dir, stopped when the run ends. Nothing is kept, nothing else is touched.
 *
 * The server runs in a session and process group of its own (`detached`): a Ctrl-C in a terminal
 * goes to the terminal's whole foreground group, and Redis must outlive that signal so that
 * flotilla can cancel the mission, print the summary and then stop Redis itself. Because a detached
 * child is not killed with its parent, every way out of this process stops it: `stop()`, and an
 * `exit` hook for `process.exit` (a second Ctrl-C) and crashes.
 */
export async function startPrivateRedis(): Promise<PrivateRedis> {
  const dir = await mkdtemp(join(tmpdir(), 'flotilla-redis-'));
  const port = await freePort();
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];
  args.push('--dir', dir, '--maxmemory-policy', 'noeviction');
  const child: ResultPromise = execa('redis-server', args, {
    reject: false,
    stdio: 'ignore',
    detached: true,
    cleanup: false,
  });
  let stopping = false;
  const onExit = () => {
    if (child.exitCode === null) child.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  };
  process.on('exit', onExit);
  const ended: Promise<Result> = child.then((result) => result);

  const url = `redis://127.0.0.1:${port}`;
  const started = await waitUntilReady(url, ended);
  if (started !== 'ready') {
    process.off('exit', onExit);
    if (child.exitCode === null) child.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
    if (started === 'not-installed') throw new FlotillaError('redis/unreachable', NOT_INSTALLED);
    throw new FlotillaError('redis/unreachable', `the private redis-server on port ${port} ${started}`);
  }
  const lost = ended.then((result) => (stopping ? '' : `the private redis-server ${describeEnd(result)}`));
  // Only `run` races against this; nobody else must see an unhandled settlement.
  lost.catch(() => undefined);
  return {
    url,
    lost,
    stop: async () => {
      stopping = true;
      if (child.exitCode === null) child.kill('SIGTERM');
      await ended;
      process.off('exit', onExit);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** 'ready', 'not-installed', or what went wrong, as the end of a sentence. */
async function waitUntilReady(url: string, ended: Promise<Result>): Promise<string> {
  let exited: Result | undefined;
  void ended.then((result) => {
    exited = result;
  });
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (!exited) {
    const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on('error', () => {});
    try {
      await probe.connect();
      await probe.ping();
      return 'ready';
    } catch {
      if (Date.now() > deadline) return `did not answer within ${READY_TIMEOUT_MS / 1000} s`;
      await new Promise((r) => setTimeout(r, 50));
    } finally {
      probe.disconnect();
    }
  }
  return (exited as { code?: string }).code === 'ENOENT' ? 'not-installed' : describeEnd(exited);
}

function describeEnd(result: Result): string {
  if (result.signal) return `was stopped by ${result.signal}`;
  if (result.exitCode !== undefined) return `exited with code ${result.exitCode}`;
  return 'exited';
}
