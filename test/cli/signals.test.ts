import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, readlink, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { indent, ROOT, SIM_ADAPTERS, SIM_BIN, sim } from '../helpers/flotilla.js';
import { type RedisHandle, startRedis, uniquePrefix } from '../helpers/redis-server.js';

/**
 * What a terminal and a shell do to `flotilla run`: Ctrl-C goes to the whole foreground process
 * group, Redis can die under it, and `| head` closes stdout early. Each runs the built CLI.
 */

const BIN = join(ROOT, 'bin', 'flotilla.js');
/** A shell pipeline that reports the exit code of its first command, flotilla's, on stderr. */
const PIPE_STATUS = 'CMD; echo "rc=$' + '{PIPESTATUS[0]}" >&2';

function mission(tasks: Array<{ id: string; steps: string }>): string {
  return [
    'goal: signal mission',
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

interface Running {
  readonly child: ChildProcess;
  stdout: string;
  stderr: string;
  readonly exit: Promise<number | null>;
}

/** `flotilla run` as a terminal starts it: its own process group (a job of the shell). */
function startRun(file: string, env: NodeJS.ProcessEnv): Running {
  const child = spawn('node', [BIN, 'run', file, '--adapters', SIM_ADAPTERS], {
    detached: true,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
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

async function _until(check: () => boolean, what: string, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function untilAsync(check: () => Promise<boolean>, what: string, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The home's redis-server works in `<home>/redis` (its --dir); /proc tells which process that is. */
async function privateRedisPid(home: string): Promise<number | undefined> {
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const cwd = await readlink(`/proc/${entry}/cwd`).catch(() => '');
    if (cwd === join(home, 'redis')) return Number(entry);
  }
  return undefined;
}

/** The stand-in agent's processes working in a checkout under `home` (FLOTILLA_HOME). */
async function cliProcesses(home: string): Promise<number[]> {
  const found: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const args = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    const cwd = await readlink(`/proc/${entry}/cwd`).catch(() => '');
    if (args.includes('flotilla-sim') && cwd.startsWith(home)) found.push(Number(entry));
  }
  return found;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('flotilla run under a terminal and a shell', () => {
  let dir: string;
  let redis: RedisHandle;
  let missions = 0;
  const started: Running[] = [];
  const homes: string[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'flotilla-signals-'));
    redis = await startRedis();
  });
  afterAll(async () => {
    for (const run of started)
      if (run.child.exitCode === null && run.child.signalCode === null)
        process.kill(-(run.child.pid ?? 0), 'SIGKILL');
    // A run that exits at once leaves its home's Redis up (no lease holds it); none outlives the tests.
    for (const home of homes) {
      const pid = await privateRedisPid(home);
      if (pid) process.kill(pid, 'SIGKILL');
    }
    await redis?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  async function setup(yaml: string) {
    const folder = join(dir, `m${++missions}`);
    const tmp = join(folder, 'tmp');
    await mkdir(join(folder, 'ws'), { recursive: true });
    await mkdir(tmp);
    await writeFile(join(folder, 'mission.yaml'), yaml);
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PATH: `${SIM_BIN}${delimiter}${process.env.PATH ?? ''}`,
      FLOTILLA_HOME: join(folder, 'home'),
      TMPDIR: tmp,
      LOG_LEVEL: 'warn',
    };
    delete env.REDIS_URL;
    homes.push(join(folder, 'home'));
    return { folder, tmp, home: join(folder, 'home'), file: join(folder, 'mission.yaml'), env };
  }

  it("Ctrl-C to the whole process group cancels, prints the summary, and, leaving it last, stops its home's Redis", async () => {
    const { home, file, env } = await setup(mission([{ id: 'slow', steps: '- sleep: 60s' }]));
    const run = startRun(file, env);
    started.push(run);
    // The task is marked running just before its CLI starts; wait for the CLI itself.
    await untilAsync(async () => (await cliProcesses(home)).length === 1, 'the agent CLI to start');
    const redisPid = await privateRedisPid(home);
    expect(redisPid, 'the private redis-server').toBeDefined();

    process.kill(-(run.child.pid ?? 0), 'SIGINT'); // what a terminal's Ctrl-C does
    const code = await run.exit;

    expect(code, run.stderr).toBe(1);
    expect(run.stdout).toContain('🛑 Mission cancelled: signal mission');
    // The CLI the cancel stopped did run, and the summary counts it as what it is.
    expect(run.stdout).toContain('Agent CLI runs: 1 on 1 host');
    expect(run.stderr).toContain('cancelling the mission');
    expect(run.stderr).not.toMatch(/ECONNREFUSED|\n\s+at /);
    expect(alive(redisPid ?? 0), 'redis-server still running').toBe(false);
    expect(await cliProcesses(home), 'agent CLIs left running').toEqual([]);
    expect(await privateRedisPid(home), 'a redis-server of its home').toBeUndefined();
  });

  it('losing its Redis mid-run is one line and exit 3, with nothing left behind', async () => {
    const { home, file, env } = await setup(mission([{ id: 'slow', steps: '- sleep: 60s' }]));
    const run = startRun(file, env);
    started.push(run);
    await untilAsync(async () => (await cliProcesses(home)).length === 1, 'the agent CLI to start');
    const redisPid = await privateRedisPid(home);
    process.kill(redisPid ?? 0, 'SIGKILL');
    const code = await run.exit;

    expect(code).toBe(3);
    expect(run.stderr.trim()).toBe(
      'flotilla: the private redis-server was stopped by SIGKILL; the mission cannot go on',
    );
    expect(await cliProcesses(home), 'agent CLIs left running').toEqual([]);
    expect(await privateRedisPid(home), 'a redis-server of its home').toBeUndefined();
  });

  /** A quick task, then a slow one: the monitor's cookie folder exists once the quick one is listed. */
  const WATCHED = [
    'goal: watched mission',
    'workspace: ./ws',
    'defaults: { max_attempts: 1 }',
    'tasks:',
    '  - id: quick',
    '    title: quick',
    '    critic: false',
    '    exit_criteria: ["true"]',
    '    description: |',
    indent(sim('- write: {path: quick.txt, content: quick}')),
    '  - id: slow',
    '    title: slow',
    '    depends_on: [quick]',
    '    critic: false',
    '    exit_criteria: ["true"]',
    '    description: |',
    indent(sim('- sleep: 60s')),
  ].join('\n');
  const cookieFolders = async (tmp: string) =>
    (await readdir(tmp)).filter((name) => name.startsWith('flotilla-monitor-'));

  /** The quick task listed (so the monitor made its cookie folder) and the slow one's CLI running. */
  async function untilSlowRuns(tmp: string, home: string): Promise<void> {
    await untilAsync(
      async () => (await cookieFolders(tmp)).length === 1,
      'the monitor to make its cookie folder',
    );
    await untilAsync(async () => (await cliProcesses(home)).length === 1, 'the slow CLI to start');
  }

  it.each([
    ['one Ctrl-C (the mission cancelled)', 1],
    ['two Ctrl-C (process.exit at once)', 2],
  ])('leaves no monitor cookie folder in the temp directory after %s', async (_, interrupts) => {
    const { tmp, home, file, env } = await setup(WATCHED);
    const run = startRun(file, { ...env, FLOTILLA_MONITOR: 'inotify' });
    started.push(run);
    await untilSlowRuns(tmp, home);
    process.kill(-(run.child.pid ?? 0), 'SIGINT');
    if (interrupts === 2) {
      // The second while the cancel is under way: process.exit(130) at once.
      await _until(() => run.stderr.includes('cancelling the mission'), 'the cancel to start');
      process.kill(-(run.child.pid ?? 0), 'SIGINT');
    }
    expect(await run.exit, run.stderr).toBe(interrupts === 1 ? 1 : 130);
    expect(await cookieFolders(tmp)).toEqual([]);
  });

  it('a run killed outright leaves its cookie folder, and the next run removes it', async () => {
    const { tmp, home, file, env } = await setup(WATCHED);
    const killed = startRun(file, { ...env, FLOTILLA_MONITOR: 'inotify' });
    started.push(killed);
    await untilSlowRuns(tmp, home);
    process.kill(-(killed.child.pid ?? 0), 'SIGKILL');
    await killed.exit;
    const left = await cookieFolders(tmp);
    expect(left).toHaveLength(1);
    // Its private Redis is out of the process group and outlives it: stopped by hand here.
    const redisPid = await privateRedisPid(home);
    if (redisPid) process.kill(redisPid, 'SIGKILL');
    const next = await setup(mission([{ id: 'again', steps: '- write: {path: again.txt, content: again}' }]));
    const result = await execa('node', [BIN, 'run', next.file, '--adapters', SIM_ADAPTERS], {
      env: { ...next.env, TMPDIR: tmp, FLOTILLA_MONITOR: 'inotify' },
      extendEnv: false,
      reject: false,
    });
    expect(result.exitCode, result.stderr).toBe(0);
    expect(await cookieFolders(tmp)).toEqual([]);
  });

  it('run | head -1: a closed stdout is a normal end for output; the mission still completes', async () => {
    const { folder, file, env } = await setup(
      mission([
        { id: 'one', steps: '- sleep: 300ms\n- write: {path: one.txt, content: one}' },
        { id: 'two', steps: '- sleep: 300ms\n- write: {path: two.txt, content: two}' },
      ]),
    );
    const result = await execa(
      'bash',
      [
        '-c',
        PIPE_STATUS.replace('CMD', 'node "$0" run "$1" --adapters "$2" | head -1'),
        BIN,
        file,
        SIM_ADAPTERS,
      ],
      { env, extendEnv: false, reject: false },
    );
    expect(result.stderr).not.toMatch(/EPIPE|\n\s+at /);
    expect(result.stderr).toContain('rc=0');
    const merged = await execa('git', [
      '-C',
      join(folder, 'ws'),
      'log',
      '--format=%s',
      '--branches=flotilla/*',
    ]);
    expect(merged.stdout).toContain('flotilla: merge one');
    expect(merged.stdout).toContain('flotilla: merge two');
  });

  it('status <id> | true: a reader that is gone before the first line is not a crash', async () => {
    const { file, env } = await setup(mission([{ id: 'a', steps: '- write: {path: a.txt, content: a}' }]));
    const shared = { ...env, REDIS_URL: redis.url, FLOTILLA_PREFIX: uniquePrefix() };
    const submitted = await execa('node', [BIN, 'submit', file], { env: shared, extendEnv: false });
    const id = submitted.stdout.trim().split('\n').at(-1) ?? '';
    for (const args of [['status', id], ['status'], ['--help']]) {
      const result = await execa(
        'bash',
        ['-c', PIPE_STATUS.replace('CMD', 'node "$0" "$@" | true'), BIN, ...args],
        { env: shared, extendEnv: false, reject: false },
      );
      expect(result.stderr, args.join(' ')).toBe('rc=0');
    }
  });
});
