import { mkdir, mkdtemp, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  indent,
  ROOT,
  SIM_ADAPTERS,
  SIM_BIN,
  sim,
  startCluster,
  type TestCluster,
} from '../helpers/flotilla.js';

/** A new user's first hour with the built CLI: typos, workspaces, help, the stand-in, what the output says. */

const BIN = join(ROOT, 'bin', 'flotilla.js');

function task(
  id: string,
  extra: string[] = [],
  steps = `- write: {path: ${id}.txt, content: ${id}}`,
): string[] {
  return [
    `  - id: ${id}`,
    `    title: ${id}`,
    '    critic: false',
    '    exit_criteria: ["true"]',
    ...extra.map((line) => `    ${line}`),
    '    description: |',
    indent(sim(steps)),
  ];
}

describe('a new user’s first hour', () => {
  let dir: string;
  let cluster: TestCluster;
  let env: Record<string, string>;
  let shared: Record<string, string>;
  let missions = 0;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'flotilla-first-hour-'));
    cluster = await startCluster({ hosts: 1 });
    env = {
      PATH: `${SIM_BIN}${delimiter}${process.env.PATH ?? ''}`,
      HOME: process.env.HOME ?? dir,
      FLOTILLA_HOME: join(dir, 'home'),
    };
    shared = { ...env, REDIS_URL: cluster.redis.url, FLOTILLA_PREFIX: cluster.config.prefix };
  });
  afterAll(async () => {
    await cluster?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  async function write(lines: string[], workspace = './ws'): Promise<{ folder: string; file: string }> {
    const folder = join(dir, `m${++missions}`);
    await mkdir(folder, { recursive: true });
    const file = join(folder, 'mission.yaml');
    await writeFile(
      file,
      [`goal: first hour ${missions}`, `workspace: ${workspace}`, 'tasks:', ...lines].join('\n'),
    );
    return { folder, file };
  }

  function flotilla(args: string[], withEnv: Record<string, string> = shared) {
    return execa('node', [BIN, ...args], { env: withEnv, extendEnv: false, reject: false });
  }

  it('a misspelt capability: validate warns with a guess, run refuses it at once', async () => {
    const { file } = await write(task('one', ['capability: code_implementaton']));
    const validated = await flotilla(['validate', file, '--adapters', SIM_ADAPTERS]);
    expect(validated.exitCode).toBe(0);
    expect(validated.stderr).toContain(
      `warning: ${file}:8: tasks[0].capability: unknown capability 'code_implementaton' — did you mean 'code_implementation'?`,
    );

    const ran = await flotilla(['run', file, '--adapters', SIM_ADAPTERS], env);
    expect(ran.exitCode).toBe(2);
    expect(ran.stderr).toContain(`${file}:8: tasks[0].capability: unknown capability 'code_implementaton'`);
    expect(ran.stderr).toContain(
      "task 'one' (capability code_implementaton): no live host serves code_implementaton and none serves dispatch.internal",
    );
    expect(ran.stdout).not.toContain('submitted');
  });

  it('submit --wait says why a task waits when no live host can serve it', async () => {
    const { file } = await write(task('one', ['capability: gpu_kernels']));
    const child = execa('node', [BIN, 'submit', file, '--wait'], {
      env: shared,
      extendEnv: false,
      reject: false,
    });
    let out = '';
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
    });
    const deadline = Date.now() + 60_000;
    while (!/waiting +no live host serves gpu_kernels/.test(out) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
    }
    child.kill('SIGTERM');
    await child;
    expect(out).toMatch(
      /one a1 +waiting +no live host serves gpu_kernels and none serves dispatch\.internal/,
    );
  });

  it('a workspace that is a file is a mission error with file and line, not an internal error', async () => {
    const { folder, file } = await write(task('a'), './notes.txt');
    await writeFile(join(folder, 'notes.txt'), 'hello');
    const ran = await flotilla(['run', file, '--adapters', SIM_ADAPTERS], env);
    expect(ran.exitCode).toBe(2);
    expect(ran.stderr.trim()).toBe(
      `${file}:2: workspace: expected a folder (a git repository, or a folder to make one), got a file at ${join(folder, 'notes.txt')}`,
    );
  });

  it('a mistyped workspace path with a missing parent is refused and nothing is created', async () => {
    const { folder, file } = await write(task('a'), './porjects/calc');
    const submitted = await flotilla(['submit', file]);
    expect(submitted.exitCode).toBe(2);
    expect(submitted.stderr).toContain(
      `${file}:2: workspace: no folder at ${join(folder, 'porjects', 'calc')}`,
    );
    await expect(stat(join(folder, 'porjects'))).rejects.toThrow();
  });

  it('says what it did to a workspace: created, committed (which files), uncommitted changes left out', async () => {
    const created = await write(task('a'), './fresh');
    expect((await flotilla(['submit', created.file])).stderr).toContain(
      `workspace ${join(created.folder, 'fresh')} did not exist: created it as a new git repository`,
    );

    const plain = await write(task('a'), './plain');
    await mkdir(join(plain.folder, 'plain'));
    await writeFile(join(plain.folder, 'plain', '.env'), 'SECRET=1\n');
    await writeFile(join(plain.folder, 'plain', 'notes.txt'), 'x\n');
    expect((await flotilla(['submit', plain.file])).stderr).toContain(
      `workspace ${join(plain.folder, 'plain')} was not a git repository: made it one and committed its 2 files (.env, notes.txt) as 'flotilla: initial commit'`,
    );

    await writeFile(join(plain.folder, 'plain', 'notes.txt'), 'changed\n');
    const again = await flotilla(['submit', plain.file]);
    expect(again.stderr).toContain(
      `workspace ${join(plain.folder, 'plain')} has uncommitted changes (1 path: notes.txt): they are not part of the mission`,
    );
    expect(again.stdout.trim().split('\n').at(-1)).toMatch(/^first-hour-\d+-[0-9a-f]{6}$/);
  });

  it('every command has --help and -h with its options and an example; --version and -v print the version', async () => {
    const { version } = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    for (const args of [
      ['run', '--help'],
      ['submit', '-h'],
      ['status', '--help'],
      ['help', 'worker'],
    ]) {
      const result = await flotilla(args);
      expect(result.exitCode, args.join(' ')).toBe(0);
      expect(result.stdout).toMatch(new RegExp(`^Usage: flotilla ${args[0] === 'help' ? args[1] : args[0]}`));
      expect(result.stdout).toMatch(/\nOptions:\n[\s\S]*-h, --help[\s\S]*\nExamples?:\n/);
    }
    expect((await flotilla(['run', '--help'])).stdout).toContain('--workers N');
    for (const flag of ['--version', '-v']) {
      const result = await flotilla([flag]);
      expect(result.exitCode).toBe(0);
      expect(result.stdout.trim()).toBe(`flotilla ${version}`);
    }
  });

  it('no agent CLI: the real cause and absolute paths, exit 3, and no --adapters hint once it was given', async () => {
    const { file } = await write(task('a'));
    // startCluster put the stand-in on this process's PATH; the user here has not.
    const path = (process.env.PATH ?? '').split(delimiter).filter((entry) => entry !== SIM_BIN);
    const withoutSim = { ...env, PATH: path.join(delimiter) };
    const ran = await flotilla(['run', file, '--adapters', SIM_ADAPTERS], withoutSim);
    expect(ran.exitCode).toBe(3);
    expect(ran.stderr).toContain('flotilla-sim: flotilla-sim: command not found');
    expect(ran.stderr).toContain(`PATH="${SIM_BIN}:$PATH"`);
    expect(ran.stderr).not.toContain('pass --adapters');
  });

  it('the README’s own mission runs as shown; human output has no raw JSON and the summary’s words hold', async () => {
    const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('## Your own mission'));
    const yaml = /````yaml\n([\s\S]*?)````/.exec(section)?.[1] ?? '';
    const folder = join(dir, 'hello');
    await mkdir(folder);
    await writeFile(join(folder, 'mission.yaml'), yaml);
    const ran = await flotilla(['run', join(folder, 'mission.yaml'), '--adapters', SIM_ADAPTERS]);
    expect(ran.exitCode, ran.stderr).toBe(0);
    expect(ran.stdout).toContain('✅ Mission complete: Say hello');
    expect(ran.stdout).toMatch(/\nAgent CLI runs: 1 on 1 host\n?/);
    // With REDIS_URL and no FLOTILLA_SECRET the hosts warn; the warning is a sentence, not pino JSON.
    expect(ran.stderr).toContain('warning [local-1]: FLOTILLA_SECRET is not set');
    expect(`${ran.stdout}\n${ran.stderr}`).not.toMatch(/^\{"level"/m);
    const id = /mission (\S+) submitted/.exec(ran.stdout)?.[1] ?? '';
    const made = await execa('git', ['-C', join(folder, 'repo'), 'show', `flotilla/${id}:hello.txt`]);
    expect(made.stdout).toBe('hello');
    const duration = /\nDuration: (\S+)/.exec(ran.stdout)?.[1];
    const shown = await flotilla(['status', id]);
    expect(shown.stdout.split('\n')[0]).toBe(`${id} — done — ${duration}`);
    const json = JSON.parse((await flotilla(['status', id, '--json'])).stdout) as { workspace?: string };
    expect(json.workspace).toBe(join(folder, 'repo'));

    const cancelled = await flotilla(['cancel', id]);
    expect(cancelled.exitCode).toBe(1);
    expect(cancelled.stderr.trim()).toBe(`flotilla: mission ${id} is already done; nothing to cancel`);
  });

  it('submit --wait: the mission id is the last line of stdout', async () => {
    const { file } = await write(task('a'));
    const result = await flotilla(['submit', file, '--wait']);
    expect(result.exitCode, result.stderr).toBe(0);
    const lines = result.stdout.trim().split('\n');
    expect(lines.at(-1)).toMatch(/^first-hour-\d+-[0-9a-f]{6}$/);
    expect(result.stdout).toContain('✅ Mission complete');
  });

  it('git missing: exit 3, and the workspace folder it would have created is not left behind', async () => {
    const { folder, file } = await write(task('a'), './fresh');
    const bin = join(dir, 'only-node');
    await mkdir(bin, { recursive: true });
    await symlink(process.execPath, join(bin, 'node'));
    const result = await flotilla(['submit', file], { ...shared, PATH: bin });
    expect(result.exitCode, result.stderr).toBe(3);
    expect(result.stderr.trim()).toBe('flotilla: git is not installed or not on PATH');
    await expect(stat(join(folder, 'fresh'))).rejects.toThrow();
  });

  it('prune deletes finished missions past the age from Redis, never a running one', async () => {
    const before = JSON.parse((await flotilla(['status', '--json'])).stdout) as {
      id: string;
      status: string;
    }[];
    const finished = before.filter((m) => m.status !== 'running').map((m) => m.id);
    const running = before.filter((m) => m.status === 'running').map((m) => m.id);
    expect(finished.length).toBeGreaterThan(0);
    expect(running.length, 'the mission waiting for gpu_kernels').toBeGreaterThan(0);

    const dry = await flotilla(['prune', '--older-than', '0s', '--dry-run']);
    expect(dry.exitCode, dry.stderr).toBe(0);
    for (const id of finished) expect(dry.stdout).toContain(`would prune ${id}`);
    for (const id of running) expect(dry.stdout).not.toContain(id);
    expect(JSON.parse((await flotilla(['status', '--json'])).stdout)).toHaveLength(before.length);

    const pruned = await flotilla(['prune', '--older-than', '0s']);
    expect(pruned.stdout).toContain(`pruned ${finished.length} mission(s)`);
    const after = JSON.parse((await flotilla(['status', '--json'])).stdout) as { id: string }[];
    expect(after.map((m) => m.id).sort()).toEqual([...running].sort());
    expect((await flotilla(['status', finished[0] ?? ''])).exitCode).toBe(2);
  });
});
