import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { execa } from 'execa';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { indent, ROOT, SIM_ADAPTERS, SIM_BIN, sim } from '../helpers/flotilla.js';
import { type RedisHandle, startRedis, uniquePrefix } from '../helpers/redis-server.js';

/** The CLI as scripts use it: exit codes, the status JSON as the last line, nothing enqueued on bad input. */

const BIN = join(ROOT, 'bin', 'flotilla.js');

function mission(tasks: Array<{ id: string; deps?: string[]; steps: string; criteria: string }>): string {
  return [
    'goal: cli mission',
    'workspace: ./ws',
    'defaults: { max_attempts: 2, backoff: 100ms }',
    'tasks:',
    ...tasks.flatMap((t) => [
      `  - id: ${t.id}`,
      `    title: ${t.id}`,
      '    critic: false',
      `    depends_on: [${(t.deps ?? []).join(', ')}]`,
      `    exit_criteria: [${JSON.stringify(t.criteria)}]`,
      '    description: |',
      indent(sim(t.steps)),
    ]),
  ].join('\n');
}

describe('the flotilla command', () => {
  let dir: string;
  let redis: RedisHandle;
  let env: Record<string, string>;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'flotilla-cli-'));
    redis = await startRedis();
    env = {
      PATH: `${SIM_BIN}${delimiter}${process.env.PATH ?? ''}`,
      FLOTILLA_HOME: join(dir, 'home'),
      FLOTILLA_ADAPTERS: SIM_ADAPTERS,
      LOG_LEVEL: 'silent',
    };
  });
  afterAll(async () => {
    await redis?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  async function write(name: string, yaml: string): Promise<string> {
    const folder = join(dir, name);
    await mkdir(join(folder, 'ws'), { recursive: true });
    await writeFile(join(folder, 'mission.yaml'), yaml);
    return join(folder, 'mission.yaml');
  }

  it('run --json on its own private Redis: exit 0, the status object as the last line', async () => {
    const file = await write(
      'ok',
      mission([{ id: 'one', steps: '- write: {path: a.txt, content: a}', criteria: 'test -f a.txt' }]),
    );
    const result = await execa('node', [BIN, 'run', file, '--json', '--adapters', SIM_ADAPTERS], {
      env: { ...env, REDIS_URL: undefined },
      extendEnv: true,
      reject: false,
    });
    expect(result.exitCode, result.stderr).toBe(0);
    const last = JSON.parse(result.stdout.trim().split('\n').at(-1) ?? '');
    expect(last).toMatchObject({
      status: 'done',
      goal: 'cli mission',
      tasks: [{ id: 'one', status: 'completed', attempts: 1 }],
    });
    expect(result.stderr).toContain('✅ Mission complete: cli mission');
  });

  it('run exits 1 on a partial mission and says why', async () => {
    const file = await write(
      'partial',
      mission([
        { id: 'bad', steps: '- write: {path: b.txt, content: no}', criteria: 'grep -q yes b.txt' },
        {
          id: 'after',
          deps: ['bad'],
          steps: '- write: {path: c.txt, content: c}',
          criteria: 'test -f c.txt',
        },
        { id: 'fine', steps: '- write: {path: d.txt, content: d}', criteria: 'test -f d.txt' },
      ]),
    );
    const result = await execa('node', [BIN, 'run', file, '--adapters', SIM_ADAPTERS], {
      env: { ...env, REDIS_URL: redis.url, FLOTILLA_PREFIX: uniquePrefix() },
      reject: false,
    });
    expect(result.exitCode).toBe(1);
    expect(result.stdout).toContain('⚠️ Mission partial: cli mission');
    expect(result.stdout).toMatch(
      /❌ bad \(2 attempts; out of attempts \(2\/2\): exit criteria failed: 1 of 1 \(grep -q yes b.txt exited 1\)\)/,
    );
    expect(result.stdout).toMatch(/⏭️ after \(dependency bad failed\)/);
    expect(result.stdout).toContain('✅ fine');
  });

  it('an invalid mission is refused with exit 2, every problem, and nothing in Redis', async () => {
    const prefix = uniquePrefix();
    const file = await write(
      'invalid',
      [
        'goal: broken',
        'workspace: ./ws',
        'tasks:',
        '  - id: a',
        '    title: a',
        '    depends_on: [nope]',
        '    exit_criteria: []',
      ].join('\n'),
    );
    const client = new Redis(redis.url);
    // Keys without an expiry: the previous test's hosts leave expiring ones (BullMQ's stalled-check
    // key, PX 2.5 s) that may vanish meanwhile; anything this test wrote would have none.
    const persistent = async () => {
      const keys = await client.keys('*');
      const ttls = await Promise.all(keys.map((key) => client.pttl(key)));
      return keys.filter((_, i) => ttls[i] === -1).sort();
    };
    const before = await persistent();
    for (const command of [
      ['submit', file],
      ['submit', file, '--wait'],
      ['run', file],
    ]) {
      const result = await execa('node', [BIN, ...command], {
        env: { ...env, REDIS_URL: redis.url, FLOTILLA_PREFIX: prefix },
        reject: false,
      });
      expect(result.exitCode).toBe(2);
      expect(result.stderr).toContain(`${file}:6: tasks[0].depends_on: unknown task 'nope'`);
      expect(result.stderr).toContain(`${file}:7: tasks[0].exit_criteria`);
      expect(result.stderr).not.toMatch(/\n\s+at /);
    }
    expect(await client.keys(`${prefix}*`)).toEqual([]);
    expect(await persistent()).toEqual(before);
    await client.quit();
  });

  it('usage mistakes exit 2 with a message, never a stack trace', async () => {
    for (const args of [['frobnicate'], ['run'], ['worker', '--slots', 'many'], ['status', '--nope']]) {
      const result = await execa('node', [BIN, ...args], {
        env: { ...env, REDIS_URL: redis.url },
        reject: false,
      });
      expect(result.exitCode, args.join(' ')).toBe(2);
      expect(result.stderr).toMatch(/^flotilla: /);
      expect(result.stderr).not.toMatch(/\n\s+at /);
    }
  });
});
