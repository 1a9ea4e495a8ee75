import { existsSync } from 'node:fs';
import { mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { spawnProcess } from '../../src/agent/spawn.js';
import { indent, sim, startCluster, type TestCluster } from '../helpers/flotilla.js';

/**
 * Agents start where their work is. OpenCode 1.18 takes its working directory from `PWD`, and
 * flotilla used to pass its own `PWD` on: OpenCode wrote the task's files into the directory
 * flotilla was started from. These tests start flotilla (this test process) in a git repository
 * of their own, with `PWD`, `OLDPWD` and `INIT_CWD` naming it, as a shell and npm would.
 */

let origin: string;
const saved = {
  cwd: process.cwd(),
  PWD: process.env.PWD,
  OLDPWD: process.env.OLDPWD,
  INIT_CWD: process.env.INIT_CWD,
};

beforeAll(async () => {
  origin = await realpath(await mkdtemp(join(tmpdir(), 'flotilla-origin-')));
  await execa('git', ['init', '-q', origin]);
  await writeFile(join(origin, 'README.md'), '# the user’s own repository\n');
  await execa('git', ['-C', origin, 'add', '.']);
  await execa('git', ['-C', origin, 'commit', '-qm', 'seed']);
  process.chdir(origin);
  process.env.PWD = origin;
  process.env.OLDPWD = origin;
  process.env.INIT_CWD = origin;
  process.env.npm_config_local_prefix = origin;
});
afterAll(async () => {
  process.chdir(saved.cwd);
  for (const key of ['PWD', 'OLDPWD', 'INIT_CWD'] as const) {
    if (saved[key] === undefined) delete process.env[key];
    else process.env[key] = saved[key];
  }
  delete process.env.npm_config_local_prefix;
  await rm(origin, { recursive: true, force: true });
});

async function originStatus(): Promise<string> {
  return (await execa('git', ['-C', origin, 'status', '--porcelain'])).stdout;
}

describe('the environment a CLI starts with', () => {
  it('has PWD equal to its working directory and nothing naming flotilla’s own directory', async () => {
    const checkout = await realpath(await mkdtemp(join(tmpdir(), 'flotilla-checkout-')));
    try {
      // `env` prints what it was given; a shell would repair PWD itself and hide the fault.
      const outcome = await spawnProcess({ command: 'env', args: [], cwd: checkout, timeoutMs: 30_000 });
      const env = Object.fromEntries(
        outcome.stdout
          .split('\n')
          .filter((line) => line.includes('='))
          .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
      );
      expect(env.PWD).toBe(checkout);
      expect(env.OLDPWD).toBeUndefined();
      expect(env.INIT_CWD).toBeUndefined();
      expect(env.npm_config_local_prefix).toBeUndefined();
      expect(Object.entries(env).filter(([, value]) => value === origin)).toEqual([]);
      // Lists keep their entries; only single paths into the origin are dropped.
      expect(env.PATH).toBe(process.env.PATH);
    } finally {
      await rm(checkout, { recursive: true, force: true });
    }
  });
});

describe('a mission started from a git repository', () => {
  let cluster: TestCluster;
  beforeAll(async () => {
    cluster = await startCluster({ hosts: 1 });
  });
  afterAll(async () => {
    await cluster?.stop();
  });
  afterEach(async () => {
    // Whatever a test left in the origin is removed, so the next test starts clean.
    await execa('git', ['-C', origin, 'clean', '-fdq']);
  });

  it('keeps an agent that writes to $PWD inside its checkout', async () => {
    const status = await cluster.run(
      [
        'goal: Write where PWD says',
        'workspace: ./ws',
        'defaults: { max_attempts: 1, timeout: 60s }',
        'tasks:',
        '  - id: pwd',
        '    title: Write into PWD',
        '    critic: false',
        '    capability: code_implementation',
        '    exit_criteria: ["test -f pwd-was-here.txt"]',
        '    description: |',
        indent(
          sim(`- run: [node, -e, "require('fs').writeFileSync(process.env.PWD + '/pwd-was-here.txt', 'x')"]`),
        ),
      ].join('\n'),
    );
    expect(status.tasks[0]).toMatchObject({ status: 'completed' });
    expect(existsSync(join(origin, 'pwd-was-here.txt'))).toBe(false);
    expect(await originStatus()).toBe('');
  });

  it('fails the task loudly when an agent changes the directory flotilla runs in', async () => {
    const escaped = join(origin, 'escaped.txt');
    const status = await cluster.run(
      [
        'goal: Escape the checkout',
        'workspace: ./ws',
        'defaults: { max_attempts: 3, timeout: 60s }',
        'tasks:',
        '  - id: escape',
        '    title: Write outside',
        '    critic: false',
        '    capability: code_implementation',
        '    exit_criteria: ["true"]',
        '    description: |',
        indent(sim(`- run: [node, -e, "require('fs').writeFileSync('${escaped}', 'not yours')"]`)),
      ].join('\n'),
    );
    const [task] = status.tasks;
    // Fatal: a second attempt would let the same CLI write there again.
    expect(task).toMatchObject({ status: 'failed', attempts: 1 });
    expect(task?.error).toContain('wrote outside its checkout');
    expect(task?.error).toContain(`changed in ${origin}`);
    expect(task?.error).toContain('escaped.txt');
    // Left for the user to see, not silently removed.
    expect(existsSync(escaped)).toBe(true);
    const audit = await cluster.client.store.getAudit(status.id);
    expect(audit.find((e) => e.stage === 'run')?.message).toContain('wrote outside its checkout');
  });

  it('notices a second write to a file that was already changed before the run', async () => {
    await writeFile(join(origin, 'README.md'), '# edited by the user, not committed\n');
    try {
      const status = await cluster.run(
        [
          'goal: Touch a dirty file',
          'workspace: ./ws',
          'defaults: { max_attempts: 1, timeout: 60s }',
          'tasks:',
          '  - id: touch',
          '    title: Append to the user’s README',
          '    critic: false',
          '    capability: code_implementation',
          '    exit_criteria: ["true"]',
          '    description: |',
          indent(
            sim(
              `- run: [node, -e, "require('fs').appendFileSync('${join(origin, 'README.md')}', 'agent was here')"]`,
            ),
          ),
        ].join('\n'),
      );
      expect(status.tasks[0]?.status).toBe('failed');
      expect(status.tasks[0]?.error).toContain('wrote outside its checkout');
      expect(status.tasks[0]?.error).toContain(': README.md.');
    } finally {
      await execa('git', ['-C', origin, 'checkout', '-q', '--', 'README.md']);
    }
  });
});
