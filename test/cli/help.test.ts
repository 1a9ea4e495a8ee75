import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { formatCommandHelp, parseCommand } from '../../src/cli/command-spec.js';
import { COMMANDS, findCommand } from '../../src/cli/command-table.js';
import { decidePrune } from '../../src/cli/commands/prune.js';
import { formatLogLine } from '../../src/cli/human-log.js';
import { ENVIRONMENT, formatHelp } from '../../src/cli/main.js';
import { isFlotillaError } from '../../src/shared/errors.js';
import { describeLostRedis, isRedisConnectionError } from '../../src/shared/redis-lost.js';
import { ROOT } from '../helpers/flotilla.js';

/** The command table is the one description of the CLI: help, parsing and the README all follow it. */

function must<T>(value: T | undefined): T {
  if (value === undefined) throw new Error('missing');
  return value;
}

describe('help', () => {
  it.each(COMMANDS.map((c) => [c.name, c] as const))(
    '%s --help lists every option and an example',
    (_name, spec) => {
      const help = formatCommandHelp(spec);
      expect(help).toMatch(new RegExp(`^Usage: flotilla ${spec.name}`));
      for (const option of Object.keys(spec.options)) expect(help).toContain(`--${option}`);
      expect(help).toContain('-h, --help');
      expect(help).toMatch(/\nExamples?:\n {2}(\S+=\S+ )*flotilla /);
    },
  );

  it('the overview names every command and every environment variable', () => {
    const help = formatHelp();
    for (const command of COMMANDS) expect(help).toContain(`flotilla ${command.name}`);
    for (const name of ENVIRONMENT) expect(help).toContain(name);
  });

  it('the README command table lists every command and option the help lists, and the environment', async () => {
    const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
    const table = readme.slice(readme.indexOf('## Commands'), readme.indexOf('## From a script'));
    for (const command of COMMANDS) {
      expect(table, command.name).toContain(`flotilla ${command.name}`);
      for (const [name, option] of Object.entries(command.options)) {
        const flag = option.short ? `-${option.short}` : `--${name}`;
        expect(table, `${command.name} --${name}`).toMatch(
          new RegExp(`flotilla ${command.name}[^|\\n]*(--${name}|${flag})\\b`),
        );
      }
    }
    for (const name of ENVIRONMENT) expect(table, name).toContain(name);
  });
});

describe('parsing', () => {
  const run = must(findCommand('run'));

  it('reads the options a command declares', () => {
    expect(parseCommand(run, ['m.yaml', '--workers', '2', '--json'])).toEqual({
      values: { workers: '2', json: true },
      positionals: ['m.yaml'],
    });
  });

  it.each([
    [
      ['--worker', '2'],
      "run: unknown option '--worker' — did you mean '--workers'? (see flotilla run --help)",
    ],
    [['--nope'], "run: unknown option '--nope' (see flotilla run --help)"],
    [['m.yaml', '--adapters'], 'run: --adapters needs a value (DIR) (see flotilla run --help)'],
    [
      ['a.yaml', 'b.yaml'],
      "run: unexpected argument 'b.yaml' (usage: flotilla run <mission.yaml> [options]; see flotilla run --help)",
    ],
  ])('%j is a usage error in flotilla’s words', (argv, message) => {
    try {
      parseCommand(run, argv);
      expect.unreachable();
    } catch (error) {
      expect(isFlotillaError(error, 'usage')).toBe(true);
      expect((error as Error).message).toBe(message);
    }
  });
});

describe('human log lines', () => {
  it.each([
    [
      { level: 40, time: 1, host: 'local-1', msg: 'grace period over' },
      'warning [local-1]: grace period over',
    ],
    [
      { level: 50, msg: 'job failed', jobId: 'm.a.a1.run', err: 'boom' },
      'error: job failed (jobId=m.a.a1.run, err=boom)',
    ],
    [{ level: 30, msg: 'x', n: 3 }, 'info: x (n=3)'],
  ])('%j → %s', (entry, line) => {
    expect(formatLogLine(`${JSON.stringify(entry)}\n`)).toBe(line);
  });

  it('a line that is not JSON passes through', () => {
    expect(formatLogLine('plain\n')).toBe('plain');
  });
});

describe('prune', () => {
  const cutoff = Date.parse('2026-01-10T00:00:00Z');
  it.each([
    [{ status: 'done', createdAt: '2026-01-01T00:00:00Z', finishedAt: '2026-01-02T00:00:00Z' }, true],
    [{ status: 'partial', createdAt: '2026-01-01T00:00:00Z', finishedAt: '2026-01-11T00:00:00Z' }, false],
    [{ status: 'running', createdAt: '2025-01-01T00:00:00Z', finishedAt: null }, false],
    [{ status: 'cancelled', createdAt: '2026-01-01T00:00:00Z', finishedAt: null }, true],
  ])('%j → prune %s', (mission, prune) => {
    expect(decidePrune([{ id: 'm', ...mission }], cutoff)[0]?.prune).toBe(prune);
  });
});

describe('a lost Redis, in flotilla’s words', () => {
  const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6379'), { code: 'ECONNREFUSED' });
  const retries = Object.assign(
    new Error(
      'Reached the max retries per request limit (which is 1). Refer to "maxRetriesPerRequest" option for details.',
    ),
    { name: 'MaxRetriesPerRequestError' },
  );
  it.each([
    [refused, true, 'lost the connection to Redis at redis://h:1 (connection refused)'],
    [retries, true, 'lost the connection to Redis at redis://h:1 (it stopped answering)'],
    [
      new Error('Connection is closed.'),
      true,
      'lost the connection to Redis at redis://h:1 (it stopped answering)',
    ],
    [new Error('boom'), false, undefined],
    ['not an error', false, undefined],
  ])('%s', (error, lost, sentence) => {
    expect(isRedisConnectionError(error)).toBe(lost);
    if (sentence) {
      expect(describeLostRedis(error, 'redis://h:1')).toBe(sentence);
      expect(describeLostRedis(error, 'redis://h:1')).not.toMatch(/max retries|which is 1/);
    }
  });
});
