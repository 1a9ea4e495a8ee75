import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { validate } from '../../src/cli/commands/validate.js';
import { loadMission, loadMissionOrThrow, resolveWorkspace } from '../../src/producer/load.js';
import { FlotillaError, formatProblem } from '../../src/shared/errors.js';
import { INVALID_MISSIONS, yaml } from '../fixtures/missions/invalid.js';
import { FIXTURES } from '../helpers/paths.js';

const MISSIONS = path.join(FIXTURES, 'missions');

let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'flotilla-mission-'));
});

afterEach(async () => {
  vi.unstubAllEnvs();
  await rm(dir, { recursive: true, force: true });
});

async function write(name: string, text: string): Promise<string> {
  const file = path.join(dir, name);
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, text);
  return file;
}

async function problemsOf(text: string): Promise<Array<[number | undefined, string, string]>> {
  const file = await write('mission.yaml', text);
  const { problems, mission } = await loadMission(file, { agentsDir: path.join(dir, 'agents') });
  if (problems.length > 0) expect(mission).toBeUndefined();
  for (const problem of problems) expect(problem.file).toBe(file);
  return problems.map((problem) => [problem.line, problem.path, problem.message]);
}

describe('loadMission on a valid file', () => {
  it('normalises the fixture: workspace, defaults, agents', async () => {
    const file = path.join(MISSIONS, 'valid.yaml');
    const { mission, problems } = await loadMission(file);
    expect(problems).toEqual([]);
    expect(mission?.goal).toBe('Add a stats module to the calculator');
    expect(mission?.workspace).toBe(path.resolve(MISSIONS, '../calc'));
    expect(mission?.agentsDir).toBe(path.join(MISSIONS, 'agents'));
    expect(mission?.agents['engineering-senior-developer']).toMatch(/^# Senior developer\n/);
    expect(mission?.tasks.map((task) => task.id)).toEqual(['mean', 'median', 'mode', 'docs', 'lint']);
    const [mean, , , docs, lint] = mission?.tasks ?? [];
    expect(mean).toMatchObject({
      capability: 'code_implementation',
      critic: true,
      maxAttempts: 2,
      timeoutMs: 300_000,
      minScore: 7,
      controlMode: 'guarded',
      agent: 'engineering-senior-developer',
    });
    expect(docs).toMatchObject({
      kind: 'planning',
      capability: 'documentation',
      critic: false,
      dependsOn: ['median', 'mode'],
    });
    expect(lint?.capability).toBe('refactoring');
  });

  it.each<[string, number]>([
    ['', 120_000],
    ['defaults: { checkpoint_interval: 30s }', 30_000],
    ['defaults: { checkpoint_interval: 1m30s }', 90_000],
    ['defaults: { checkpoint_interval: off }', 0],
    ['defaults: { checkpoint_interval: 0 }', 0],
  ])('reads the checkpoint interval from %j', async (line, expected) => {
    const file = await write(
      'mission.yaml',
      yaml(
        'goal: g',
        ...(line ? [line] : []),
        'tasks:',
        '  - id: a',
        '    title: A',
        '    exit_criteria: [x]',
      ),
    );
    const { mission, problems } = await loadMission(file);
    expect(problems).toEqual([]);
    expect(mission?.checkpointMs).toBe(expected);
  });

  it('does not check cli pins (hosts decide) and accepts task_type equal to capability', async () => {
    const problems = await problemsOf(
      yaml(
        'goal: g',
        'tasks:',
        '  - id: a',
        '    title: A',
        '    cli: no-such-cli-anywhere',
        '    capability: testing',
        '    task_type: testing',
        '    exit_criteria: [x]',
      ),
    );
    expect(problems).toEqual([]);
  });
});

describe('problems, one mistake at a time', () => {
  it.each(INVALID_MISSIONS)('$name', async ({ text, expected }) => {
    const problems = await problemsOf(text);
    const agents = path.join(dir, 'agents');
    expect(problems.map(([line, at, message]) => [line, at, message.replace(agents, 'AGENTS')])).toEqual(
      expected,
    );
  });
});

describe('every problem at once', () => {
  it('reports the five mistakes of the fixture with their lines', async () => {
    const file = path.join(MISSIONS, 'five-mistakes.yaml');
    const { mission, problems } = await loadMission(file);
    expect(mission).toBeUndefined();
    expect(problems.map((problem) => [problem.line, problem.path])).toEqual([
      [3, 'defaults.control_mode'],
      [10, 'tasks[1].dependson'],
      [12, 'tasks[2].id'],
      [17, 'tasks[3].depends_on'],
      [18, 'tasks[3].timeout'],
    ]);
    expect(formatProblem(problems[3]!)).toBe(
      `${file}:17: tasks[3].depends_on: unknown task 'buld' (known: build, test)`,
    );
  });

  it('runs the rules, the agent check and the schema together, sorted by line', async () => {
    await write('agents/known.md', 'hello');
    const problems = await problemsOf(
      yaml(
        'goal: g',
        'tasks:',
        '  - id: a',
        '    title: A',
        '    exit_criteria: [x]',
        '    depends_on: [b]',
        '    agent: missing',
        '  - id: b',
        '    title: 7',
        '    exit_criteria: [x]',
        '    depends_on: [a]',
        '    agent: known',
        '  - id: c',
        '    kind: poem',
        '    exit_criteria: [x]',
        '    depends_on: [nope]',
      ),
    );
    expect(problems.map(([line, at]) => [line, at])).toEqual([
      [6, 'tasks[0].depends_on'],
      [7, 'tasks[0].agent'],
      [9, 'tasks[1].title'],
      [13, 'tasks[2].title'],
      [14, 'tasks[2].kind'],
      [16, 'tasks[2].depends_on'],
    ]);
    expect(problems[0]?.[2]).toBe('dependency cycle: a → b → a (each task depends on the next)');
  });
});

describe('workspace', () => {
  it.each([
    ['../calc', (folder: string) => path.resolve(folder, '../calc')],
    ['.', (folder: string) => folder],
    ['repo', (folder: string) => path.join(folder, 'repo')],
    ['/srv/calc', () => '/srv/calc'],
    ['https://github.com/acme/calc.git', () => 'https://github.com/acme/calc.git'],
    ['ssh://git@github.com/acme/calc.git', () => 'ssh://git@github.com/acme/calc.git'],
    ['git@github.com:acme/calc.git', () => 'git@github.com:acme/calc.git'],
    ['file:///srv/git/calc.git', () => 'file:///srv/git/calc.git'],
  ])('%s', (workspace, expected) => {
    expect(resolveWorkspace(workspace, '/missions/x')).toBe(expected('/missions/x'));
  });

  it('resolves against the mission file folder, not the working directory', async () => {
    const file = await write(
      'missions/x.yaml',
      yaml('goal: g', 'workspace: ../calc', 'tasks:', '  - { id: a, title: A, exit_criteria: [x] }'),
    );
    const { mission } = await loadMission(file);
    expect(mission?.workspace).toBe(path.join(dir, 'calc'));
  });

  it('defaults to the mission file folder', async () => {
    const file = await write(
      'm/x.yaml',
      yaml('goal: g', 'tasks:', '  - { id: a, title: A, exit_criteria: [x] }'),
    );
    expect((await loadMission(file)).mission?.workspace).toBe(path.join(dir, 'm'));
  });
});

describe('setup', () => {
  it('gives every task the mission’s setup; a task’s own setup and inputs replace it', async () => {
    const file = await write(
      'm.yaml',
      yaml(
        'goal: g',
        'setup: ["npm ci"]',
        'setup_inputs: [package-lock.json]',
        'tasks:',
        '  - { id: a, title: A, exit_criteria: [x] }',
        '  - { id: b, title: B, exit_criteria: [x], setup: ["make deps"] }',
        '  - { id: c, title: C, exit_criteria: [x], setup_inputs: [sub/package-lock.json] }',
      ),
    );
    const tasks = (await loadMission(file)).mission?.tasks ?? [];
    expect(tasks.map((t) => t.setup)).toEqual([
      { commands: ['npm ci'], inputs: ['package-lock.json'] },
      { commands: ['make deps'], inputs: ['package-lock.json'] },
      { commands: ['npm ci'], inputs: ['sub/package-lock.json'] },
    ]);
  });

  it('takes setup from defaults too; the top-level setup wins over it', async () => {
    const file = await write(
      'd.yaml',
      yaml(
        'goal: g',
        'defaults: { setup: ["make deps"], setup_inputs: [Makefile.lock] }',
        'tasks:',
        '  - { id: a, title: A, exit_criteria: [x] }',
      ),
    );
    expect((await loadMission(file)).mission?.tasks[0]?.setup).toEqual({
      commands: ['make deps'],
      inputs: ['Makefile.lock'],
    });
    const both = await write(
      'e.yaml',
      yaml(
        'goal: g',
        'setup: ["npm ci"]',
        'defaults: { setup: ["make deps"] }',
        'tasks:',
        '  - { id: a, title: A, exit_criteria: [x] }',
      ),
    );
    expect((await loadMission(both)).mission?.tasks[0]?.setup?.commands).toEqual(['npm ci']);
  });

  it('means no setup when none is given', async () => {
    const file = await write(
      'm.yaml',
      yaml('goal: g', 'tasks:', '  - { id: a, title: A, exit_criteria: [x] }'),
    );
    expect((await loadMission(file)).mission?.tasks[0]?.setup).toBeUndefined();
  });

  it('expects a list of commands, with the line', async () => {
    expect(
      await problemsOf(
        yaml('goal: g', 'setup: npm ci', 'tasks:', '  - { id: a, title: A, exit_criteria: [x] }'),
      ),
    ).toEqual([[2, 'setup', "expected a list, got 'npm ci'"]]);
  });
});

describe('deliver', () => {
  it('is normalised with its defaults: when [done], no draft, no labels', async () => {
    const file = await write(
      'deliver.yaml',
      yaml(
        'goal: g',
        'deliver: { push: origin, api_url: "https://git.example.com/api/v1/", forge: gitea, pull_request: { base: main } }',
        'tasks:',
        '  - { id: a, title: A, exit_criteria: [x] }',
      ),
    );
    expect((await loadMission(file)).mission?.deliver).toEqual({
      push: 'origin',
      when: ['done'],
      forge: 'gitea',
      apiUrl: 'https://git.example.com/api/v1',
      pullRequest: { base: 'main', draft: false, labels: [] },
    });
  });

  it('names a misspelt field, an unknown forge and a status it cannot follow, with their lines', async () => {
    const problems = await problemsOf(
      yaml(
        'goal: g',
        'deliver:',
        '  when: [done, failed]',
        '  forge: bitbucket',
        '  pull_request: { draft: true, label: [x] }',
        'tasks:',
        '  - { id: a, title: A, exit_criteria: [x] }',
      ),
    );
    expect(problems.map(([line, where]) => [line, where])).toEqual([
      [3, 'deliver.when[1]'],
      [4, 'deliver.forge'],
      [5, 'deliver.pull_request.label'],
    ]);
    expect(problems[1]?.[2]).toContain('github');
  });
});

describe('agents', () => {
  const text = yaml(
    'goal: g',
    'tasks:',
    '  - { id: a, title: A, exit_criteria: [x], agent: reviewer }',
    '  - { id: b, title: B, exit_criteria: [x], agent: reviewer }',
    '  - { id: c, title: C, exit_criteria: [x] }',
  );
  const personality = '---\nname: reviewer\n---\n# Reviewer\n\nBe exact.\n';

  it('reads agents/ beside the mission file by default, whole', async () => {
    const file = await write('m/mission.yaml', text);
    await write('m/agents/reviewer.md', personality);
    const { mission, problems } = await loadMission(file);
    expect(problems).toEqual([]);
    expect(mission?.agents).toEqual({ reviewer: personality });
    expect(mission?.agentsDir).toBe(path.join(dir, 'm', 'agents'));
  });

  it('prefers options.agentsDir over FLOTILLA_AGENTS over the default', async () => {
    const file = await write('m/mission.yaml', text);
    await write('from-env/reviewer.md', 'env');
    await write('from-option/reviewer.md', 'option');
    vi.stubEnv('FLOTILLA_AGENTS', path.join(dir, 'from-env'));
    expect((await loadMission(file)).mission?.agents).toEqual({ reviewer: 'env' });
    const chosen = await loadMission(file, { agentsDir: path.join(dir, 'from-option') });
    expect(chosen.mission?.agents).toEqual({ reviewer: 'option' });
  });

  it('reports a missing agent once per task that names it', async () => {
    const file = await write('m/mission.yaml', text);
    const { problems } = await loadMission(file);
    const looked = path.join(dir, 'm', 'agents', 'reviewer.md');
    expect(problems).toEqual([
      // Column 44 is where `agent` starts in `  - { id: a, title: A, exit_criteria: [x], agent: … }`.
      { file, line: 3, column: 44, path: 'tasks[0].agent', message: `no agent file at ${looked}` },
      { file, line: 4, column: 44, path: 'tasks[1].agent', message: `no agent file at ${looked}` },
    ]);
  });
});

describe('loadMissionOrThrow', () => {
  it('throws mission/not-found for a missing file', async () => {
    const error = await loadMissionOrThrow(path.join(dir, 'nope.yaml')).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(FlotillaError);
    expect(error).toMatchObject({ code: 'mission/not-found' });
  });

  it('throws mission/invalid with every problem', async () => {
    const error = await loadMissionOrThrow(path.join(MISSIONS, 'five-mistakes.yaml')).catch(
      (caught: unknown) => caught,
    );
    expect(error).toMatchObject({
      code: 'mission/invalid',
      message: expect.stringMatching(/invalid mission \(5 problems\)$/),
    });
    expect(error instanceof FlotillaError && error.problems).toHaveLength(5);
  });

  it('returns the mission when valid', async () => {
    const mission = await loadMissionOrThrow(path.join(MISSIONS, 'valid.yaml'));
    expect(mission.tasks).toHaveLength(5);
  });
});

describe('flotilla validate', () => {
  function capture() {
    const out: string[] = [];
    const err: string[] = [];
    return { out, err, io: { out: (line: string) => out.push(line), err: (line: string) => err.push(line) } };
  }

  it('prints a one-line summary and exits 0 for a valid mission', async () => {
    const { out, err, io } = capture();
    const file = path.join(MISSIONS, 'valid.yaml');
    expect(await validate({ file, json: false }, io)).toBe(0);
    expect(out).toEqual([`${file}: valid — 5 tasks, 2 roots, longest chain 3`]);
    expect(err).toEqual([]);
  });

  it('prints one line per problem on stderr and exits 2', async () => {
    const { out, err, io } = capture();
    const file = path.join(MISSIONS, 'five-mistakes.yaml');
    expect(await validate({ file, json: false }, io)).toBe(2);
    expect(out).toEqual([]);
    expect(err).toHaveLength(5);
    expect(err[0]).toBe(
      `${file}:3: defaults.control_mode: expected one of autonomous|guarded|surgical|advisory, got 'yolo'`,
    );
  });

  it('with --json prints { valid, problems } on stdout', async () => {
    const { out, io } = capture();
    expect(await validate({ file: path.join(MISSIONS, 'five-mistakes.yaml'), json: true }, io)).toBe(2);
    const parsed: unknown = JSON.parse(out.join('\n'));
    expect(parsed).toMatchObject({
      valid: false,
      problems: expect.arrayContaining([expect.objectContaining({ line: 17 })]),
    });

    const ok = capture();
    expect(await validate({ file: path.join(MISSIONS, 'valid.yaml'), json: true }, ok.io)).toBe(0);
    expect(JSON.parse(ok.out.join('\n'))).toEqual({
      valid: true,
      problems: [],
      warnings: [],
      tasks: 5,
      roots: 2,
      longestChain: 3,
    });
  });

  it('a missing file is a one-line message and exit 2, never a stack trace', async () => {
    const { err, io } = capture();
    expect(await validate({ file: path.join(dir, 'nope.yaml'), json: false }, io)).toBe(2);
    expect(err).toEqual([`${path.join(dir, 'nope.yaml')}: no such file`]);
  });
});
