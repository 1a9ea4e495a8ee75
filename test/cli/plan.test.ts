import { access, cp, mkdir, mkdtemp, readdir, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { plan } from '../../src/cli/commands/plan.js';
import type { Io } from '../../src/cli/io.js';
import { loadMission } from '../../src/producer/load.js';
import { loadConfig } from '../../src/shared/config.js';
import { FIXTURES } from '../helpers/paths.js';

/**
 * `flotilla plan` end to end with a fake planning CLI on PATH (test/fixtures/bin/fake-planner),
 * found through real adapter files and real detection; the `[fake:MODE]` tag in the goal picks
 * what it answers.
 */

const BIN = `${FIXTURES}/bin/`;
const ADAPTERS = `${FIXTURES}/adapters-plan/`;

interface PlannerRun {
  role: string;
  argv: string[];
  cwd: string;
  prompt: string;
}

let dir: string;
let log: string;
let out: string[];
let err: string[];
const io: Io = { out: (line) => out.push(line), err: (line) => err.push(line), isTTY: false };

beforeEach(async () => {
  dir = await realpath(await mkdtemp(path.join(tmpdir(), 'flotilla-plan-test-')));
  log = path.join(dir, 'planner.log');
  out = [];
  err = [];
  vi.stubEnv('PATH', `${BIN}${path.delimiter}${process.env.PATH ?? ''}`);
  vi.stubEnv('FAKE_PLANNER_LOG', log);
});

afterEach(async () => {
  vi.unstubAllEnvs();
  await rm(dir, { recursive: true, force: true });
});

function config(adaptersDir = ADAPTERS) {
  return loadConfig({ FLOTILLA_ADAPTERS: adaptersDir, FLOTILLA_HOME: path.join(dir, 'home') });
}

async function plannerRuns(): Promise<PlannerRun[]> {
  const text = await readFile(log, 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as PlannerRun);
}

async function exists(file: string): Promise<boolean> {
  return access(file).then(
    () => true,
    () => false,
  );
}

describe('flotilla plan', () => {
  it('feeds the validation errors back and writes the corrected mission', async () => {
    const workspace = path.join(dir, 'calc');
    await mkdir(workspace);
    await writeFile(path.join(workspace, 'README.md'), '# calc\n');
    const file = path.join(dir, 'missions', 'greet.yaml');

    const code = await plan(
      { goal: 'Add a greeting module [fake:fix-on-retry]', out: file, workspace, run: false },
      config(),
      io,
    );

    expect(code, err.join('\n')).toBe(0);
    const { mission, problems } = await loadMission(file);
    expect(problems).toEqual([]);
    expect(mission?.tasks.map((task) => task.id)).toEqual(['greet', 'verify']);
    // The planner wrote another workspace; the one given on the command line wins.
    expect(mission?.workspace).toBe(workspace);
    expect(await readFile(file, 'utf8')).toMatch(/^workspace: \.\.\/calc$/m);
    expect(out).toEqual([
      `${file}: valid — 2 tasks (greet, verify), 1 root, longest chain 2; planned by Fake Planner in 2 rounds`,
    ]);

    // Round 1's problems reached the user, file:line: path: message, and the planner, verbatim.
    const draft = path.join(dir, 'missions', 'greet.draft.yaml');
    const problemLines = err.filter((line) => line.startsWith(`${draft}:`));
    expect(problemLines).toHaveLength(2);
    expect(problemLines[0]).toMatch(/:5: tasks\[0\]\.depends_on: dependency cycle: greet → verify → greet/);
    expect(problemLines[1]).toMatch(/:7: tasks\[1\]\.exit_criteria: /);
    expect(err[0]).toBe('planning with Fake Planner (fake-large)…');
    expect(err).toContain('round 1/3: the mission has 2 problems:');

    const runs = await plannerRuns();
    expect(runs).toHaveLength(2);
    for (const run of runs) {
      // The planning CLI beats a coding-only one listed first, and gets the planning model.
      expect(run.role).toBe('planner');
      expect(run.argv).toEqual([
        '--model',
        'fake-large',
        '--prompt-file',
        '.planning/dispatch/plan-PROMPT.md',
      ]);
      expect(run.cwd).toBe(workspace);
      expect(run.prompt).toContain('Add a greeting module [fake:fix-on-retry]');
    }
    expect(runs[0]?.prompt).not.toContain('PREVIOUS ATTEMPT FAILED');
    expect(runs[1]?.prompt).toContain('## ⚠️ PREVIOUS ATTEMPT FAILED (attempt 1/3)');
    for (const line of problemLines) expect(runs[1]?.prompt).toContain(line);

    // Nothing of the planning is left behind: no draft, no prompt or result in the workspace.
    expect(await exists(draft)).toBe(false);
    expect(await readdir(workspace)).toEqual(['README.md']);
  });

  it('gives up after three invalid rounds with exit 2, the problems on stderr and the draft kept', async () => {
    const file = path.join(dir, 'mission.yaml');
    const draft = path.join(dir, 'mission.draft.yaml');

    const code = await plan(
      { goal: 'Add a greeting module [fake:never-valid]', out: file, run: false },
      config(),
      io,
    );

    expect(code).toBe(2);
    expect(await exists(file)).toBe(false);
    expect(out).toEqual([]);
    expect(err).toContain('round 1/3: the mission has 2 problems:');
    // Round 2 was a valid mission file that breaks the planning rules.
    expect(err).toContain(`${draft}:2: tasks: expected 2 to 8 tasks, got 1`);
    expect(err).toContain('round 3/3: the mission has 1 problem:');
    expect(err.some((line) => line.startsWith(`${draft}:1: expected a mapping with goal and tasks`))).toBe(
      true,
    );
    expect(err.at(-1)).toBe(
      `flotilla plan: no valid mission after 3 rounds; the last draft is kept at ${draft}`,
    );
    expect(await readFile(draft, 'utf8')).toBe('I could not plan this, sorry.\n');

    const runs = await plannerRuns();
    expect(runs.map((run) => /attempt (\d)\/3/.exec(run.prompt)?.[1])).toEqual([undefined, '1', '2']);
    expect(runs[2]?.prompt).toContain(`${draft}:2: tasks: expected 2 to 8 tasks, got 1`);
  });

  it('reads a fenced answer, keeps the planned workspace when none was given, and cleans its scratch folder', async () => {
    const file = path.join(dir, 'mission.yaml');

    const code = await plan(
      { goal: 'Add a greeting module [fake:fenced]', out: file, run: false },
      config(),
      io,
    );

    expect(code, err.join('\n')).toBe(0);
    const { mission } = await loadMission(file);
    expect(mission?.workspace).toBe(path.join(dir, 'somewhere-else'));
    const [run] = await plannerRuns();
    expect(run?.prompt).toContain('No workspace was given');
    expect(run?.cwd.startsWith(path.join(await realpath(tmpdir()), 'flotilla-plan-'))).toBe(true);
    expect(await exists(run?.cwd ?? '')).toBe(false);
  });

  it('takes the answer from stdout when the CLI writes no result file', async () => {
    const file = path.join(dir, 'mission.yaml');
    const code = await plan(
      { goal: 'Add a greeting module [fake:stdout]', out: file, run: false },
      config(),
      io,
    );
    expect(code, err.join('\n')).toBe(0);
    expect((await loadMission(file)).mission?.tasks).toHaveLength(2);
  });

  it('refuses to overwrite an existing file, before running any CLI', async () => {
    const file = path.join(dir, 'mission.yaml');
    await writeFile(file, 'mine\n');

    const code = await plan({ goal: 'Add a greeting module', out: file, run: false }, config(), io);

    expect(code).toBe(2);
    expect(err).toEqual([
      `flotilla plan: ${file} already exists; not overwriting it (remove it or choose another file with -o)`,
    ]);
    expect(await readFile(file, 'utf8')).toBe('mine\n');
    expect(await plannerRuns()).toEqual([]);
  });

  it('exits 1 naming the adapters folder when no CLI is detected', async () => {
    const adapters = path.join(dir, 'adapters');
    await mkdir(adapters);
    await cp(path.join(ADAPTERS, 'not-installed.md'), path.join(adapters, 'not-installed.md'));

    const code = await plan(
      {
        goal: 'Add a greeting module',
        out: path.join(dir, 'mission.yaml'),
        adaptersDir: adapters,
        run: false,
      },
      config(),
      io,
    );

    expect(code).toBe(1);
    expect(err.join('\n')).toContain(
      `flotilla plan: no planning CLI detected from the adapters in ${adapters}: not-installed (flotilla-test-no-such-cli: command not found); install one of these CLIs, or pass --adapters DIR`,
    );
  });

  it('exits 1 with the CLI message when the planning CLI fails', async () => {
    const file = path.join(dir, 'mission.yaml');
    const code = await plan(
      { goal: 'Add a greeting module [fake:crash]', out: file, run: false },
      config(),
      io,
    );
    expect(code).toBe(1);
    expect(err.at(-1)).toBe('flotilla plan: Fake Planner failed (exit code 3): fake-planner: model exploded');
    expect(await exists(file)).toBe(false);
  });

  it('with --run runs the planned mission on local hosts', async () => {
    const workspace = path.join(dir, 'calc');
    await mkdir(workspace);
    await writeFile(path.join(workspace, 'README.md'), '# calc\n');
    const file = path.join(dir, 'mission.yaml');
    // The local hosts log at info level when stdout is not a terminal; the summary is what counts here.
    vi.stubEnv('LOG_LEVEL', 'error');

    const code = await plan(
      { goal: 'Check the workspace [fake:runnable]', out: file, workspace, run: true },
      config(),
      io,
    );

    expect(code, err.join('\n')).toBe(0);
    expect(out[0]).toMatch(/mission\.yaml: valid — 2 tasks \(greet, verify\)/);
    expect(out.join('\n')).toContain('✅ Mission complete: Check the greeting workspace');
    expect((await plannerRuns()).map((run) => run.role)).toEqual(['planner', 'coder', 'coder']);
  });
});
