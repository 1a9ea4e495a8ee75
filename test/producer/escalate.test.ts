import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadMission } from '../../src/producer/load.js';

/** `escalate:` in a mission file: in defaults, per task (the task's wins), and its mistakes. */

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'flotilla-escalate-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function load(...lines: string[]) {
  const file = path.join(dir, 'mission.yaml');
  await writeFile(file, `${lines.join('\n')}\n`);
  return loadMission(file);
}

const task = (id: string, extra = '') => [
  `  - id: ${id}`,
  `    title: ${id}`,
  '    exit_criteria: ["true"]',
  ...(extra ? [extra] : []),
];

describe('escalate in the mission file', () => {
  it('defaults apply to every task; a task may set its own or turn it off', async () => {
    const { mission, problems } = await load(
      'goal: g',
      'defaults: { escalate: [tier, cli] }',
      'tasks:',
      ...task('a'),
      ...task('b', '    escalate: [cli]'),
      ...task('c', '    escalate: []'),
    );
    expect(problems).toEqual([]);
    expect(mission?.tasks.map((t) => t.escalate)).toEqual([['tier', 'cli'], ['cli'], undefined]);
  });

  it('leaves escalation off when nothing asks for it', async () => {
    const { mission } = await load('goal: g', 'tasks:', ...task('a'));
    expect(mission?.tasks[0]?.escalate).toBeUndefined();
  });

  it.each([
    [
      'an unknown step',
      '    escalate: [model]',
      /tasks\[0\]\.escalate\[0\]: expected one of tier\|cli, got 'model'/,
    ],
    ['a step twice', '    escalate: [tier, tier]', /tier and cli at most once/],
    ['not a list', '    escalate: tier', /escalate: expected/],
  ])('reports %s with file and line', async (_name, line, message) => {
    const { problems } = await load('goal: g', 'tasks:', ...task('a', line));
    expect(problems.length).toBeGreaterThan(0);
    expect(problems.every((p) => p.line === 6)).toBe(true);
    expect(problems.map((p) => `${p.path}: ${p.message}`).join('\n')).toMatch(message);
  });
});
