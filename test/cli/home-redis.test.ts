import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, readlink, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { Job, Queue } from 'bullmq';
import { execa } from 'execa';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attemptJobId, DEFAULT_PREFIX, dispatchQueue, JOBS } from '../../src/shared/contracts.js';
import { signPayload } from '../../src/shared/signing.js';
import { indent, ROOT, SIM_ADAPTERS, SIM_BIN, sim } from '../helpers/flotilla.js';
import { getFreePort } from '../helpers/free-port.js';

/**
 * The one-machine default as a new user meets it: no REDIS_URL, no FLOTILLA_SECRET, a fresh
 * FLOTILLA_HOME. `flotilla run` keeps its Redis under the home (a unix socket in a 0700 directory,
 * no TCP port, an append-only file), every later command finds what it did, its jobs are signed
 * with the home's secret so a forged one is refused, and runs at once share one server. Each
 * command is the built CLI in a subprocess; the server is a real redis-server.
 */

const BIN = join(ROOT, 'bin', 'flotilla.js');
const UNSIGNED_WARNING = 'FLOTILLA_SECRET is not set';
const REFUSED = 'payload signature missing or wrong; refused';

function mission(goal: string, tasks: Array<{ id: string; steps: string }>): string {
  return [
    `goal: ${goal}`,
    'workspace: ./ws',
    'defaults: { max_attempts: 1 }',
    'tasks:',
    ...tasks.flatMap((t) => [
      `  - id: ${t.id}`,
      `    title: ${t.id}`,
      '    critic: false',
      '    exit_criteria: ["true"]',
      '    description: |',
      indent(sim(t.steps)),
    ]),
  ].join('\n');
}

/** A task that waits for `file` to appear, so a test decides when it ends. */
function waitsFor(file: string): string {
  return `- run: {argv: [bash, -c, "while [ ! -e ${file} ]; do sleep 0.1; done"], timeout: 5m}`;
}

interface Running {
  readonly child: ChildProcess;
  stdout: string;
  stderr: string;
  readonly exit: Promise<number | null>;
}

/** In `cwd`: a host watches the directory it starts in, so never the repository the tests run in. */
function start(args: string[], env: NodeJS.ProcessEnv, cwd: string): Running {
  const child = spawn('node', [BIN, ...args], { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  const running: Running = {
    child,
    stdout: '',
    stderr: '',
    exit: new Promise((resolve) => child.on('exit', (code) => resolve(code))),
  };
  child.stdout?.on('data', (d: Buffer) => {
    running.stdout += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    running.stderr += d.toString();
  });
  return running;
}

async function until<T>(what: string, check: () => Promise<T | undefined> | T | undefined): Promise<T> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The redis-server processes working in `<home>/redis` (what redis-server's --dir makes its cwd). */
async function homeServers(home: string): Promise<number[]> {
  const found: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const cwd = await readlink(`/proc/${entry}/cwd`).catch(() => '');
    const args = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    if (cwd === join(home, 'redis') && args.startsWith('redis-server')) found.push(Number(entry));
  }
  return found;
}

/** TCP sockets `pid` listens on: its socket inodes that /proc/net/tcp{,6} lists in state LISTEN. */
async function tcpListeners(pid: number): Promise<string[]> {
  const inodes = new Set<string>();
  for (const fd of await readdir(`/proc/${pid}/fd`)) {
    const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '');
    const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
    if (inode) inodes.add(inode);
  }
  const listening: string[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    const rows = (await readFile(table, 'utf8').catch(() => '')).split('\n').slice(1);
    for (const row of rows) {
      const cols = row.trim().split(/\s+/);
      if (cols[3] === '0A' && inodes.has(cols[9] ?? '')) listening.push(`${table} ${cols[1]}`);
    }
  }
  return listening;
}

describe('flotilla without REDIS_URL: the home keeps a private Redis that remembers', () => {
  let dir: string;
  let count = 0;
  const homes: string[] = [];
  const children: Running[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'flotilla-home-redis-'));
  });
  afterAll(async () => {
    for (const running of children) if (running.child.exitCode === null) running.child.kill('SIGKILL');
    // A run killed outright leaves its server up (with no lease); none may outlive the tests.
    for (const home of homes) for (const pid of await homeServers(home)) process.kill(pid, 'SIGKILL');
    await rm(dir, { recursive: true, force: true });
  });

  /** A fresh machine: its own FLOTILLA_HOME, no REDIS_URL or FLOTILLA_SECRET in the environment. */
  async function machine() {
    const folder = join(dir, `machine-${++count}`);
    const home = join(folder, 'home');
    homes.push(home);
    await mkdir(folder, { recursive: true });
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PATH: `${SIM_BIN}${delimiter}${process.env.PATH ?? ''}`,
      FLOTILLA_HOME: home,
      FLOTILLA_ADAPTERS: SIM_ADAPTERS,
      LOG_LEVEL: 'warn',
    };
    delete env.REDIS_URL;
    delete env.FLOTILLA_SECRET;
    delete env.FLOTILLA_PREFIX;
    let missions = 0;
    const write = async (yaml: string) => {
      const at = join(folder, `m${++missions}`);
      await mkdir(join(at, 'ws'), { recursive: true });
      await writeFile(join(at, 'mission.yaml'), yaml);
      return join(at, 'mission.yaml');
    };
    const flotilla = (...args: string[]) =>
      execa('node', [BIN, ...args], { env, extendEnv: false, reject: false, cwd: folder });
    const startRun = (file: string) => {
      const running = start(['run', file, '--adapters', SIM_ADAPTERS], env, folder);
      children.push(running);
      return running;
    };
    return { folder, home, env, write, flotilla, startRun };
  }

  it('run, then status, report, receipt and the board find the mission; nothing is left running', async () => {
    const m = await machine();
    const file = await m.write(
      mission('remembered mission', [{ id: 'hello', steps: '- write: {path: hello.txt, content: hi}' }]),
    );
    const ran = await m.flotilla('run', file, '--json');
    expect(ran.exitCode, ran.stderr).toBe(0);
    const id = (JSON.parse(ran.stdout.trim().split('\n').at(-1) ?? '') as { id: string }).id;
    expect(ran.stderr).not.toContain(UNSIGNED_WARNING);
    // The last process to leave stopped the server; its data is on disk under the home.
    expect(await homeServers(m.home)).toEqual([]);
    expect(await readdir(join(m.home, 'redis', 'appendonlydir'))).not.toEqual([]);

    const status = await m.flotilla('status');
    expect(status.exitCode, status.stderr).toBe(0);
    expect(status.stdout).toMatch(new RegExp(`${id}\\s+done\\s+1/1 tasks`));
    const one = await m.flotilla('status', id, '--json');
    expect(JSON.parse(one.stdout)).toMatchObject({
      id,
      status: 'done',
      tasks: [{ id: 'hello', status: 'completed' }],
    });

    const report = await m.flotilla('report', id);
    expect(report.exitCode, report.stderr).toBe(0);
    const reportFile = report.stdout.trim().split('\n').at(-1) ?? '';
    expect(await readFile(reportFile, 'utf8')).toContain('remembered mission');

    const receipt = await m.flotilla('receipt', id);
    expect(receipt.exitCode, receipt.stderr).toBe(0);
    expect(JSON.parse(receipt.stdout)).toMatchObject({ mission: { id, status: 'done' } });

    const port = await getFreePort();
    const board = start(['board', '--port', String(port)], m.env, m.folder);
    children.push(board);
    await until('the board to listen', () => board.stdout.includes('flotilla board:'));
    const page = await (await fetch(`http://127.0.0.1:${port}/`)).text();
    expect(page).toContain(id);
    board.child.kill('SIGTERM');
    expect(await board.exit, board.stderr).toBe(0);
    expect(await homeServers(m.home)).toEqual([]);
  });

  it('listens on a socket only its user can reach, never on TCP, and refuses a forged job', async () => {
    const m = await machine();
    const gate = join(m.folder, 'go');
    const file = await m.write(mission('guarded mission', [{ id: 'slow', steps: waitsFor(gate) }]));
    const run = m.startRun(file);
    const id = await until(
      'the mission to be submitted',
      () => /mission (\S+) submitted/.exec(run.stdout)?.[1],
    );
    const [pid] = await until('the server', async () => {
      const pids = await homeServers(m.home);
      return pids.length > 0 ? pids : undefined;
    });

    const redisDir = join(m.home, 'redis');
    expect((await stat(redisDir)).mode & 0o777).toBe(0o700);
    expect((await stat(join(redisDir, 'redis.sock'))).mode & 0o777).toBe(0o700);
    expect((await stat(join(redisDir, 'secret'))).mode & 0o777).toBe(0o600);
    expect(await tcpListeners(pid ?? 0)).toEqual([]);

    // What another process of this user could do: write jobs straight into the queue.
    const connection = new Redis({ path: join(redisDir, 'redis.sock'), maxRetriesPerRequest: null });
    const dispatch = new Queue(dispatchQueue('code_implementation'), { connection, prefix: DEFAULT_PREFIX });
    try {
      const data = { missionId: id, taskId: 'slow', attempt: 2, capability: 'code_implementation' };
      const unsigned = await dispatch.add(JOBS.run, data, {
        jobId: attemptJobId(id, 'slow', 2, 'run'),
      });
      const wronglySigned = await dispatch.add(
        JOBS.run,
        { ...data, attempt: 3, sig: signPayload({ ...data, attempt: 3 }, 'a guessed secret') },
        { jobId: attemptJobId(id, 'slow', 3, 'run') },
      );
      for (const job of [unsigned, wronglySigned]) {
        const reason = await until(`job ${job.id} to be refused`, async () => {
          const reloaded = await Job.fromId(dispatch, job.id ?? '');
          return (await reloaded?.getState()) === 'failed' ? reloaded?.failedReason : undefined;
        });
        expect(reason).toContain(REFUSED);
      }
    } finally {
      await dispatch.close();
      connection.disconnect();
    }
    await writeFile(gate, '');
    expect(await run.exit, run.stderr).toBe(0);
    expect(run.stderr).toContain('refusing job');
    expect(run.stderr).not.toContain(UNSIGNED_WARNING);
    // Neither forged attempt ran: the task finished on its first.
    const after = await m.flotilla('status', id, '--json');
    expect(JSON.parse(after.stdout)).toMatchObject({ status: 'done', tasks: [{ id: 'slow', attempts: 1 }] });
    expect(await homeServers(m.home)).toEqual([]);
  });

  it('two runs at once share one server, and the first to finish does not stop it under the other', async () => {
    const m = await machine();
    const gate = join(m.folder, 'go');
    const slowFile = await m.write(mission('slow mission', [{ id: 'slow', steps: waitsFor(gate) }]));
    const quickFile = await m.write(
      mission('quick mission', [{ id: 'quick', steps: '- write: {path: q.txt, content: q}' }]),
    );
    // Commands that all find the server down start it once between them (the lock) and stop it.
    const first = await Promise.all([m.flotilla('status'), m.flotilla('status'), m.flotilla('hosts')]);
    for (const result of first) expect(result.exitCode, result.stderr).toBe(0);
    expect(await homeServers(m.home)).toEqual([]);

    const slow = m.startRun(slowFile);
    await until('the slow task to run', () => / slow a1 +running /.test(slow.stdout));
    const [server] = await homeServers(m.home);
    const quick = m.startRun(quickFile);
    expect(await quick.exit, quick.stderr).toBe(0);
    expect(quick.stdout).toContain('host local-2:');
    expect(slow.child.exitCode, slow.stderr).toBeNull();
    expect(await homeServers(m.home)).toEqual([server]);

    await writeFile(gate, '');
    expect(await slow.exit, slow.stderr).toBe(0);
    expect(await homeServers(m.home)).toEqual([]);
    const status = await m.flotilla('status');
    expect(status.stdout).toMatch(/slow-mission-\S+\s+done/);
    expect(status.stdout).toMatch(/quick-mission-\S+\s+done/);
  });

  it('a worker and submit with no REDIS_URL meet on the home Redis, signed', async () => {
    const m = await machine();
    const worker = start(['worker', '--adapters', SIM_ADAPTERS, '--host-id', 'here'], m.env, m.folder);
    children.push(worker);
    await until('the worker to serve', async () => (await m.flotilla('hosts')).stdout.includes('here'));
    const file = await m.write(
      mission('submitted mission', [{ id: 'one', steps: '- write: {path: one.txt, content: one}' }]),
    );
    const submitted = await m.flotilla('submit', file, '--wait', '--json');
    expect(submitted.exitCode, submitted.stderr).toBe(0);
    expect(JSON.parse(submitted.stdout.trim().split('\n').at(-1) ?? '')).toMatchObject({
      status: 'done',
      tasks: [{ id: 'one', status: 'completed' }],
    });
    const { id } = JSON.parse(submitted.stdout.trim().split('\n').at(-1) ?? '') as { id: string };
    worker.child.kill('SIGTERM');
    expect(await worker.exit, worker.stderr).toBe(0);
    expect(`${worker.stdout}${worker.stderr}`).not.toContain(UNSIGNED_WARNING);
    // The mission is in the home's append-only file, not in some other Redis.
    const aof = join(m.home, 'redis', 'appendonlydir');
    const written = await Promise.all(
      (await readdir(aof)).map((name) => readFile(join(aof, name), 'latin1')),
    );
    expect(written.join('')).toContain(id);
    expect(await homeServers(m.home)).toEqual([]);
  });

  it('a server killed outright under a run: run exits 3, and the next command starts it again with the mission', async () => {
    const m = await machine();
    const file = await m.write(mission('crashed mission', [{ id: 'slow', steps: '- sleep: 60s' }]));
    const run = m.startRun(file);
    const id = await until('the slow task to run', () =>
      / slow a1 +running /.test(run.stdout) ? /mission (\S+) submitted/.exec(run.stdout)?.[1] : undefined,
    );
    // Past the append-only file's once-a-second fsync, so the submit is on disk.
    await new Promise((r) => setTimeout(r, 1_500));
    const [pid] = await homeServers(m.home);
    expect(pid, 'the home redis-server').toBeDefined();
    process.kill(pid ?? -1, 'SIGKILL');
    expect(await run.exit).toBe(3);
    expect(run.stderr).toContain('the private redis-server was stopped by SIGKILL; the mission cannot go on');
    // Its socket and pid file are left behind; the next command starts a server over them.
    const status = await m.flotilla('status', id, '--json');
    expect(status.exitCode, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ id, goal: 'crashed mission' });
    expect(await homeServers(m.home)).toEqual([]);
  });

  it('keeps its log bounded, and refuses a home too deep for a socket path with the reason', async () => {
    const m = await machine();
    await mkdir(join(m.home, 'redis'), { recursive: true });
    await writeFile(join(m.home, 'redis', 'redis.log'), 'x'.repeat(1_100_000));
    const status = await m.flotilla('status');
    expect(status.exitCode, status.stderr).toBe(0);
    expect((await stat(join(m.home, 'redis', 'redis.log.1'))).size).toBe(1_100_000);
    expect((await stat(join(m.home, 'redis', 'redis.log'))).size).toBeLessThan(100_000);

    const deep = join(m.folder, 'd'.repeat(120));
    const refused = await execa('node', [BIN, 'status'], {
      env: { ...m.env, FLOTILLA_HOME: deep },
      extendEnv: false,
      reject: false,
    });
    expect(refused.exitCode).toBe(3);
    expect(refused.stderr).toContain('is longer than a unix socket path may be');
    expect(refused.stderr).toContain('set a shorter FLOTILLA_HOME or set REDIS_URL');
  });

  it('prune takes old missions out of the home Redis and its append-only file', async () => {
    const m = await machine();
    const big = `- write: {path: big.txt, content: ${'x'.repeat(200_000)}}`;
    const file = await m.write(mission('bulky mission', [{ id: 'big', steps: big }]));
    const ran = await m.flotilla('run', file);
    expect(ran.exitCode, ran.stderr).toBe(0);
    const aofBytes = async () => {
      const aof = join(m.home, 'redis', 'appendonlydir');
      let total = 0;
      for (const name of await readdir(aof)) total += (await stat(join(aof, name))).size;
      return total;
    };
    const before = await aofBytes();
    await new Promise((r) => setTimeout(r, 20));
    const pruned = await m.flotilla('prune', '--older-than', '1ms');
    expect(pruned.exitCode, pruned.stderr).toBe(0);
    expect(pruned.stdout).toMatch(/pruned 1 mission\(s\)/);
    expect((await m.flotilla('status')).stdout).not.toContain('bulky-mission');
    expect(await aofBytes()).toBeLessThan(before / 2);
  });
});
