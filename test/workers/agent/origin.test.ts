import { existsSync } from 'node:fs';
import { mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { spawnProcess } from '../../../src/workers/agent/spawn.js';
import { indent, sim, startCluster, type TestCluster } from '../../helpers/flotilla.js';

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
      oneTask({
        goal: 'Write where PWD says',
        id: 'pwd',
        title: 'Write into PWD',
        criterion: 'test -f pwd-was-here.txt',
        step: `- run: [node, -e, "require('fs').writeFileSync(process.env.PWD + '/pwd-was-here.txt', 'x')"]`,
      }),
    );
    expect(status.tasks[0]).toMatchObject({ status: 'completed' });
    expect(existsSync(join(origin, 'pwd-was-here.txt'))).toBe(false);
    expect(await originStatus()).toBe('');
  });

  it('fails the task loudly when an agent writes its own files into the directory flotilla runs in', async () => {
    const escaped = join(origin, 'escaped.txt');
    // What OpenCode did: its result file, by a relative path, landed in flotilla's directory.
    const result = join(origin, '.planning', 'dispatch', 'escape-a1-RESULT.md');
    const status = await cluster.run(
      oneTask({
        goal: 'Escape the checkout',
        id: 'escape',
        title: 'Write outside',
        maxAttempts: 3,
        step: `- run: [node, -e, "const fs = require('fs'); fs.writeFileSync('${escaped}', 'not yours'); fs.mkdirSync('${join(origin, '.planning', 'dispatch')}', { recursive: true }); fs.writeFileSync('${result}', 'status: complete')"]`,
      }),
    );
    const [task] = status.tasks;
    // Fatal: a second attempt would let the same CLI write there again.
    expect(task).toMatchObject({ status: 'failed', attempts: 1 });
    expect(task?.error).toContain('wrote outside its checkout');
    expect(task?.error).toContain(`changed in ${origin}`);
    expect(task?.error).toContain('escaped.txt');
    expect(task?.error).toContain("(this attempt's own");
    // Left for the user to see, not silently removed.
    expect(existsSync(escaped)).toBe(true);
    const audit = await cluster.client.store.getAudit(status.id);
    const run = audit.find((e) => e.stage === 'run');
    expect(run?.message).toContain("this attempt's own .planning/dispatch/escape-a1-RESULT.md among them");
    // The suite's hosts have Watchman, which names each file (a `git status` would say `.planning/`).
    expect(run?.event).toMatchObject({
      kind: 'escaped-checkout',
      paths: ['.planning/dispatch/escape-a1-RESULT.md', 'escaped.txt'],
      own: ['.planning/dispatch/escape-a1-RESULT.md'],
    });
  });

  it('only warns when a file the attempt would not write changes: someone else may have', async () => {
    // Someone else: this test process, editing a tracked file of its repository while the CLI runs.
    const signals = await realpath(await mkdtemp(join(tmpdir(), 'flotilla-origin-signals-')));
    const started = join(signals, 'started');
    const go = join(signals, 'go');
    const waitFor = `while (!fs.existsSync('${go}')) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50)`;
    try {
      const running = cluster.run(
        oneTask({
          goal: 'Work while the user edits',
          id: 'edit',
          title: 'Wait for the user',
          timeout: '120s',
          step: `- run: {argv: [node, -e, "const fs = require('fs'); fs.writeFileSync('${started}', ''); ${waitFor}"], timeout: 110s}`,
        }),
      );
      await until(() => existsSync(started));
      await writeFile(join(origin, 'README.md'), '# edited by the user meanwhile\n');
      await writeFile(go, '');
      const status = await running;
      expect(status.tasks[0]).toMatchObject({ status: 'completed' });
      const audit = await cluster.client.store.getAudit(status.id);
      const warning = audit.find((e) => e.event?.kind === 'origin-changed');
      expect(warning?.event).toMatchObject({ kind: 'origin-changed', root: origin, paths: ['README.md'] });
      expect(warning?.message).toContain('someone else');
    } finally {
      await execa('git', ['-C', origin, 'checkout', '-q', '--', 'README.md']);
      await rm(signals, { recursive: true, force: true });
    }
  }, 240_000);

  it('notices a second write to a file that was already changed before the run', async () => {
    await writeFile(join(origin, 'README.md'), '# edited by the user, not committed\n');
    try {
      const status = await cluster.run(
        oneTask({
          goal: 'Touch a dirty file',
          id: 'touch',
          title: 'Append to the user’s README',
          step: `- run: [node, -e, "require('fs').appendFileSync('${join(origin, 'README.md')}', 'agent was here')"]`,
        }),
      );
      // The user's README is no file only this attempt would write: seen and reported, not fatal.
      expect(status.tasks[0]?.status).toBe('completed');
      const audit = await cluster.client.store.getAudit(status.id);
      expect(audit.find((e) => e.event?.kind === 'origin-changed')?.message).toContain(': README.md.');
    } finally {
      await execa('git', ['-C', origin, 'checkout', '-q', '--', 'README.md']);
    }
  });
});

/** The YAML of a mission of one task without a critic, whose stand-in performs one sim step. */
function oneTask(mission: {
  readonly goal: string;
  readonly id: string;
  readonly title: string;
  readonly maxAttempts?: number;
  readonly timeout?: string;
  readonly criterion?: string;
  readonly step: string;
}): string {
  return [
    `goal: ${mission.goal}`,
    'workspace: ./ws',
    `defaults: { max_attempts: ${mission.maxAttempts ?? 1}, timeout: ${mission.timeout ?? '60s'} }`,
    'tasks:',
    `  - id: ${mission.id}`,
    `    title: ${mission.title}`,
    '    critic: false',
    '    capability: code_implementation',
    `    exit_criteria: ["${mission.criterion ?? 'true'}"]`,
    '    description: |',
    indent(sim(mission.step)),
  ].join('\n');
}

/** Waits for a condition the test cannot be told about, however slow the machine. */
async function until(condition: () => boolean, timeoutMs = 100_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('waited too long');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
