import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { validate } from '../../src/cli/commands/validate.js';
import { loadMission } from '../../src/producer/load.js';
import { capabilityWarnings, collectRuleTasks } from '../../src/producer/rules.js';
import { CAPABILITIES } from '../../src/shared/capabilities.js';
import { formatProblem } from '../../src/shared/errors.js';

/** What a new user writes first: mission-wide defaults, a misspelt capability or field, a wrong workspace path. */

let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'flotilla-first-hour-'));
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function write(name: string, lines: string[]): Promise<string> {
  const file = path.join(dir, name);
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, `${lines.join('\n')}\n`);
  return file;
}

describe('defaults', () => {
  it('takes every per-task setting with a mission-wide meaning; a task’s own value wins', async () => {
    const file = await write('m.yaml', [
      'goal: g',
      'defaults:',
      '  critic: false',
      '  kind: research',
      '  cli: flotilla-sim',
      '  allowed_paths: [docs/]',
      '  max_attempts: 4',
      '  timeout: 2m',
      '  min_score: 8',
      '  control_mode: autonomous',
      '  backoff: 1s',
      '  budget_usd: 3',
      'tasks:',
      '  - { id: a, title: A, exit_criteria: [x] }',
      '  - { id: b, title: B, exit_criteria: [x], critic: true, kind: coding, cli: other, allowed_paths: [src/] }',
    ]);
    const { mission, problems } = await loadMission(file);
    expect(problems).toEqual([]);
    const [a, b] = mission?.tasks ?? [];
    expect(a).toMatchObject({
      critic: false,
      kind: 'research',
      capability: 'large_analysis',
      cli: 'flotilla-sim',
      allowedPaths: ['docs/'],
      maxAttempts: 4,
      timeoutMs: 120_000,
      minScore: 8,
      controlMode: 'autonomous',
      backoffMs: 1_000,
    });
    expect(b).toMatchObject({
      critic: true,
      kind: 'coding',
      capability: 'code_implementation',
      cli: 'other',
      allowedPaths: ['src/'],
    });
    expect(mission?.budgetUsd).toBe(3);
  });

  it('without them, a task’s kind decides its critic as before', async () => {
    const file = await write('m.yaml', [
      'goal: g',
      'tasks:',
      '  - { id: a, title: A, exit_criteria: [x] }',
      '  - { id: b, title: B, exit_criteria: [x], kind: research }',
    ]);
    const { mission } = await loadMission(file);
    expect(mission?.tasks.map((t) => [t.kind, t.critic, t.cli, t.allowedPaths])).toEqual([
      ['coding', true, undefined, undefined],
      ['research', false, undefined, undefined],
    ]);
  });

  it('an unknown default is still an error, with a did-you-mean', async () => {
    const file = await write('m.yaml', [
      'goal: g',
      'defaults: { critc: false }',
      'tasks:',
      '  - { id: a, title: A, exit_criteria: [x] }',
    ]);
    const { problems } = await loadMission(file);
    expect(problems.map(formatProblem)).toEqual([
      expect.stringMatching(/m\.yaml:2: defaults\.critc: unknown field 'critc' — did you mean 'critic'\?/),
    ]);
  });
});

describe('requires', () => {
  it('is parsed onto the task, the defaults taking the place of a task that gives none', async () => {
    const file = await write('m.yaml', [
      'goal: g',
      "defaults: { requires: { os: [linux], tools: ['node>=20', docker] } }",
      'tasks:',
      '  - { id: a, title: A, exit_criteria: [x] }',
      '  - { id: b, title: B, exit_criteria: [x], requires: { labels: { region: eu } } }',
    ]);
    const { mission, problems } = await loadMission(file);
    expect(problems).toEqual([]);
    expect(mission?.tasks.map((t) => t.requires)).toEqual([
      { os: ['linux'], tools: [{ name: 'docker' }, { name: 'node', op: '>=', version: '20' }] },
      { labels: { region: 'eu' } },
    ]);
  });

  it('names an unknown key, an unknown platform and a tool it cannot read, each with its line', async () => {
    const file = await write('m.yaml', [
      'goal: g',
      'tasks:',
      "  - { id: a, title: A, exit_criteria: [x], requires: { tool: ['node>=20'] } }",
      '  - { id: b, title: B, exit_criteria: [x], requires: { os: [macos] } }',
      "  - { id: c, title: C, exit_criteria: [x], requires: { tools: ['node>>20'] } }",
    ]);
    const { problems } = await loadMission(file);
    const lines = problems.map(formatProblem);
    expect(lines).toContainEqual(
      expect.stringMatching(
        /m\.yaml:3: tasks\[0\]\.requires\.tool: unknown field 'tool' — did you mean 'tools'\?/,
      ),
    );
    expect(lines).toContainEqual(
      expect.stringMatching(/m\.yaml:4: tasks\[1\]\.requires\.os\[0\]: .*linux.*darwin/),
    );
    expect(lines).toContainEqual(
      expect.stringMatching(
        /m\.yaml:5: tasks\[2\]\.requires\.tools\[0\]: expected a tool name with an optional version, like docker or 'node>=20', got 'node>>20'/,
      ),
    );
  });
});

describe('a misspelt field or capability', () => {
  it('`titel` gets a did-you-mean (a swap of two letters is one slip)', async () => {
    const file = await write('m.yaml', ['goal: g', 'tasks:', '  - { id: a, titel: A, exit_criteria: [x] }']);
    const { problems } = await loadMission(file);
    expect(problems.map((p) => p.message)).toContainEqual(
      expect.stringContaining("unknown field 'titel' — did you mean 'title'?"),
    );
  });

  it('a capability outside the vocabulary and the adapters is a warning with file, line and a guess', async () => {
    const file = await write('m.yaml', [
      'goal: g',
      'tasks:',
      '  - id: a',
      '    title: A',
      '    capability: code_implementaton',
      '    exit_criteria: [x]',
      '  - { id: b, title: B, task_type: "testing, speling", exit_criteria: [x] }',
      '  - { id: c, title: C, capability: gpu_kernels, exit_criteria: [x] }',
    ]);
    const plain = await loadMission(file);
    expect(plain.problems).toEqual([]);
    expect(plain.mission).toBeDefined();
    expect(plain.warnings.map(formatProblem)).toEqual([
      `${file}:5: tasks[0].capability: unknown capability 'code_implementaton' — did you mean 'code_implementation'? (in neither the vocabulary nor a loaded adapter, so no host may ever serve it)`,
      `${file}:7: tasks[1].task_type: unknown capability 'speling' (in neither the vocabulary nor a loaded adapter, so no host may ever serve it)`,
      `${file}:8: tasks[2].capability: unknown capability 'gpu_kernels' (in neither the vocabulary nor a loaded adapter, so no host may ever serve it)`,
    ]);
    // An adapter's own term is known: no warning for it.
    const withAdapter = await loadMission(file, { adapterCapabilities: ['gpu_kernels'] });
    expect(withAdapter.warnings.map((w) => w.line)).toEqual([5, 7]);
  });

  it.each([
    ['code_implementation', []],
    ['code-implementation', ['code_implementation']],
    ['Code_Implementation', ['code_implementation']],
    ['testng', ['testing']],
    ['quantum', [undefined]],
  ])('capabilityWarnings(%s)', (capability, guesses) => {
    const warnings = capabilityWarnings(collectRuleTasks({ tasks: [{ capability }] }), CAPABILITIES);
    expect(warnings.map((w) => /did you mean '([^']+)'/.exec(w.message)?.[1])).toEqual(guesses);
  });

  it('validate prints the warning and still exits 0', async () => {
    const file = await write('m.yaml', [
      'goal: g',
      'tasks:',
      '  - { id: a, title: A, capability: documentaion, exit_criteria: [x] }',
    ]);
    const out: string[] = [];
    const err: string[] = [];
    const code = await validate({ file, json: false }, { out: (l) => out.push(l), err: (l) => err.push(l) });
    expect(code).toBe(0);
    expect(err).toEqual([
      expect.stringMatching(
        /^warning: .*m\.yaml:3: tasks\[0\]\.capability: .*did you mean 'documentation'\?/,
      ),
    ]);
    expect(out).toEqual([`${file}: valid — 1 task, 1 root, longest chain 1, 1 warning`]);
  });
});

describe('workspace paths', () => {
  it('a regular file is a mission error at the workspace line', async () => {
    await writeFile(path.join(dir, 'notes.txt'), 'hi');
    const file = await write('m.yaml', [
      'goal: g',
      'workspace: ./notes.txt',
      'tasks:',
      '  - { id: a, title: A, exit_criteria: [x] }',
    ]);
    const { problems, mission } = await loadMission(file);
    expect(mission).toBeUndefined();
    expect(problems.map(formatProblem)).toEqual([
      `${file}:2: workspace: expected a folder (a git repository, or a folder to make one), got a file at ${path.join(dir, 'notes.txt')}`,
    ]);
  });

  it('a missing folder whose parent is missing too is refused; one inside an existing folder is fine', async () => {
    const typo = await write('m.yaml', [
      'goal: g',
      'workspace: ./porjects/calc',
      'tasks:',
      '  - { id: a, title: A, exit_criteria: [x] }',
    ]);
    const refused = await loadMission(typo);
    expect(refused.problems.map(formatProblem)).toEqual([
      expect.stringContaining(
        `${typo}:2: workspace: no folder at ${path.join(dir, 'porjects/calc')}, and its parent ${path.join(dir, 'porjects')} does not exist either`,
      ),
    ]);
    const fresh = await write('n.yaml', [
      'goal: g',
      'workspace: ./calc',
      'tasks:',
      '  - { id: a, title: A, exit_criteria: [x] }',
    ]);
    expect((await loadMission(fresh)).problems).toEqual([]);
  });
});
