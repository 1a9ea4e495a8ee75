import { describe, expect, it } from 'vitest';
import { extractMissionYaml, setWorkspace } from '../../src/producer/plan-answer.js';
import { buildPlanPrompt, MAX_PREVIOUS_CHARS, type PlanPromptInput } from '../../src/producer/plan-prompt.js';
import { checkPlanRules } from '../../src/producer/plan-rules.js';
import { defaultsSchema, missionSchema, taskSchema } from '../../src/shared/mission.js';

const base: PlanPromptInput = {
  goal: 'Add a stats module to the calculator',
  workspace: { kind: 'existing', path: '/srv/calc' },
  workspaceValue: '../calc',
  resultPath: '.planning/dispatch/plan-RESULT.md',
};

describe('buildPlanPrompt', () => {
  const prompt = buildPlanPrompt(base);

  it('states the goal, the workspace and where to write the result', () => {
    expect(prompt).toContain('## Goal\n\nAdd a stats module to the calculator');
    expect(prompt).toContain('/srv/calc');
    expect(prompt).toContain('Set `workspace: ../calc` in the mission file.');
    expect(prompt).toMatch(
      /^When you complete this task, write your result to: \.planning\/dispatch\/plan-RESULT\.md$/m,
    );
  });

  it('states the decomposition rules', () => {
    expect(prompt).toContain('Between 2 and 8 tasks');
    for (const example of ['test -f', 'grep -q', 'npx tsc --noEmit']) expect(prompt).toContain(example);
    expect(prompt).toMatch(/No vague criteria/);
    expect(prompt).toMatch(/final verification task of `kind: review` that depends on every coding task/);
    expect(prompt).toContain('[a-z0-9][a-z0-9_-]*');
  });

  it('lists every field of the mission schema, and marks the required ones', () => {
    for (const shape of [missionSchema.shape, defaultsSchema.shape, taskSchema.shape]) {
      for (const name of Object.keys(shape)) expect(prompt).toMatch(new RegExp(`^- \`${name}\``, 'm'));
    }
    for (const name of ['goal', 'tasks', 'id', 'title', 'exit_criteria'])
      expect(prompt).toMatch(new RegExp(`^- \`${name}\` \\(required\\):`, 'm'));
    expect(prompt).toMatch(/^- `description`: /m);
    expect(prompt).toContain('coding, research, review, planning');
  });

  it('shows the exact YAML shape with a verification task', () => {
    const shape = /```yaml\n([\s\S]*?)\n```/.exec(prompt)?.[1] ?? '';
    expect(shape).toMatch(/^goal: /m);
    expect(shape).toMatch(/^workspace: \.\.\/calc$/m);
    expect(shape).toMatch(/^ {2}- id: verify$/m);
    expect(shape).toMatch(/^ {4}exit_criteria:$/m);
  });

  it('without a workspace asks for a new folder name, and says the repository starts empty', () => {
    const text = buildPlanPrompt({ ...base, workspace: { kind: 'none' }, workspaceValue: undefined });
    expect(text).toMatch(/No workspace was given/);
    expect(text).toMatch(/short new folder name/);
  });

  it('has no retry section on the first round', () => {
    expect(prompt).not.toContain('PREVIOUS ATTEMPT FAILED');
  });

  it('on a retry carries the problems verbatim and the previous file, before the result instructions', () => {
    const problems = [
      '/tmp/m.draft.yaml:5: tasks[0].depends_on: dependency cycle: greet → verify → greet (each task depends on the next)',
      '/tmp/m.draft.yaml:8: tasks[1].exit_criteria: expected at least one shell command',
    ];
    const text = buildPlanPrompt({
      ...base,
      retry: { round: 1, maxRounds: 3, problems, previous: 'goal: x\ntasks: []\n' },
    });
    expect(text).toContain('## ⚠️ PREVIOUS ATTEMPT FAILED (attempt 1/3)');
    expect(text).toContain(`\`\`\`text\n${problems.join('\n')}\n\`\`\``);
    expect(text).toContain('```yaml\ngoal: x\ntasks: []\n```');
    expect(text).toMatch(/corrected, complete mission file/);
    expect(text.indexOf('PREVIOUS ATTEMPT FAILED')).toBeLessThan(text.indexOf('## Result Instructions'));
  });

  it('fences a previous file that holds a fence of its own with a longer fence', () => {
    const text = buildPlanPrompt({
      ...base,
      retry: {
        round: 2,
        maxRounds: 3,
        problems: ['x'],
        previous: 'description: |\n  ```ts\n  code\n  ```\n',
      },
    });
    expect(text).toContain('````yaml\ndescription: |');
  });

  it('does not repeat a huge previous answer', () => {
    const previous = 'x'.repeat(MAX_PREVIOUS_CHARS + 1);
    const text = buildPlanPrompt({ ...base, retry: { round: 1, maxRounds: 3, problems: ['p'], previous } });
    expect(text).not.toContain(previous);
    expect(text).toContain(`Your previous file had ${previous.length} characters`);
  });
});

describe('extractMissionYaml', () => {
  const mission = 'goal: g\ntasks:\n  - id: a\n    title: A\n    exit_criteria: [true]\n';

  it('takes the whole text when there is no fence', () => {
    expect(extractMissionYaml(mission)).toEqual({ yaml: mission, from: 'whole' });
  });

  it('takes a fenced yaml block out of prose', () => {
    const answer = `Here is your mission:\n\n\`\`\`yaml\n${mission}\`\`\`\n\nLet me know.`;
    expect(extractMissionYaml(answer)).toEqual({ yaml: mission, from: 'fenced' });
  });

  it('accepts yml, tildes, indented fences, CRLF and an unlabelled fence', () => {
    expect(extractMissionYaml(`~~~yml\n${mission}~~~\n`)?.yaml).toBe(mission);
    expect(extractMissionYaml(`  \`\`\`YAML\n${mission}  \`\`\`\n`)?.yaml).toBe(mission);
    expect(extractMissionYaml(`\`\`\`yaml\r\n${mission.replace(/\n/g, '\r\n')}\`\`\`\r\n`)?.yaml).toBe(
      mission,
    );
    expect(extractMissionYaml(`Plan:\n\`\`\`\n${mission}\`\`\`\n`)).toEqual({
      yaml: mission,
      from: 'fenced',
    });
  });

  it('among several blocks prefers the mission over snippets, and the last mission', () => {
    const snippet = '```yaml\nexit_criteria: [npm test]\n```';
    const draft = mission.replace('goal: g', 'goal: draft');
    const answer = `${snippet}\n\n\`\`\`yaml\n${draft}\`\`\`\n\nFixed:\n\n\`\`\`yaml\n${mission}\`\`\`\n${snippet}\n`;
    expect(extractMissionYaml(answer)?.yaml).toBe(mission);
  });

  it('prefers a yaml block over an unlabelled one, and ignores blocks in other languages', () => {
    const other = mission.replace('goal: g', 'goal: other');
    const answer = `\`\`\`\n${other}\`\`\`\n\`\`\`yaml\n${mission}\`\`\`\n\`\`\`ts\ntasks: 1\n\`\`\`\n`;
    expect(extractMissionYaml(answer)?.yaml).toBe(mission);
  });

  it('falls back to the only yaml block when none holds tasks', () => {
    expect(extractMissionYaml('Sorry:\n```yaml\ngoal: g\n```\n')).toEqual({
      yaml: 'goal: g\n',
      from: 'fenced',
    });
  });

  it('reads an unclosed fence (a cut-off answer) to the end', () => {
    expect(extractMissionYaml(`\`\`\`yaml\n${mission}`)?.yaml).toBe(mission);
  });

  it('keeps a fence inside a block scalar of a whole-file mission', () => {
    const text = `goal: g\ntasks:\n  - id: a\n    title: A\n    description: |\n      \`\`\`ts\n      x\n      \`\`\`\n    exit_criteria: [true]\n`;
    expect(extractMissionYaml(text)).toEqual({ yaml: text, from: 'whole' });
  });

  it('returns garbage whole, for validation to describe, and null for an empty answer', () => {
    expect(extractMissionYaml('I could not plan this.')).toEqual({
      yaml: 'I could not plan this.\n',
      from: 'whole',
    });
    expect(extractMissionYaml('```ts\nconst x = 1;\n```')?.from).toBe('whole');
    expect(extractMissionYaml('')).toBeNull();
    expect(extractMissionYaml(' \n\t\n')).toBeNull();
    expect(extractMissionYaml('```yaml\n```\n')?.from).toBe('whole');
  });
});

describe('setWorkspace', () => {
  it('replaces the workspace in place, keeping comments and the other lines', () => {
    const text = '# plan\ngoal: g # the goal\nworkspace: /abs/calc\ntasks: []\n';
    expect(setWorkspace(text, '../calc')).toBe('# plan\ngoal: g # the goal\nworkspace: ../calc\ntasks: []\n');
  });

  it('adds a missing workspace after the existing keys, so problem lines stay put', () => {
    const out = setWorkspace('goal: g\ntasks:\n  - id: a\n', './calc');
    expect(out.split('\n').slice(0, 3)).toEqual(['goal: g', 'tasks:', '  - id: a']);
    expect(out).toMatch(/^workspace: \.\/calc$/m);
  });

  it('leaves text that is not a YAML mapping alone', () => {
    for (const text of ['just words\n', '- a\n- b\n', 'goal: [unclosed\n', '']) {
      expect(setWorkspace(text, './calc')).toBe(text);
    }
  });
});

describe('checkPlanRules', () => {
  const task = (id: string, kind: 'coding' | 'review' | 'research', dependsOn: string[] = []) => ({
    id,
    kind,
    dependsOn,
  });

  it('accepts coding tasks followed by a review that depends on all of them, also through others', () => {
    expect(
      checkPlanRules([task('a', 'coding'), task('b', 'coding', ['a']), task('verify', 'review', ['b'])]),
    ).toEqual([]);
  });

  it('wants 2 to 8 tasks', () => {
    expect(checkPlanRules([task('r', 'research')])).toEqual([
      { path: 'tasks', message: 'expected 2 to 8 tasks, got 1' },
    ]);
    const nine = [
      ...Array.from({ length: 8 }, (_, i) => task(`t${i}`, 'coding')),
      task(
        'verify',
        'review',
        Array.from({ length: 8 }, (_, i) => `t${i}`),
      ),
    ];
    expect(checkPlanRules(nine)).toEqual([{ path: 'tasks', message: 'expected 2 to 8 tasks, got 9' }]);
  });

  it('names the coding tasks the closest verification task misses', () => {
    expect(
      checkPlanRules([
        task('a', 'coding'),
        task('b', 'coding'),
        task('c', 'coding'),
        task('v', 'review', ['a']),
      ]),
    ).toEqual([
      {
        path: 'tasks',
        message:
          "expected a final verification task (kind review) that depends on every coding task (a, b, c); the closest, 'v', does not depend on b, c",
      },
    ]);
  });

  it('does not count a coding task as the verification task', () => {
    const [problem] = checkPlanRules([task('a', 'coding'), task('verify', 'coding', ['a'])]);
    expect(problem?.message).toMatch(/every task is of kind coding$/);
  });

  it('needs no verification task when nothing is coded', () => {
    expect(checkPlanRules([task('a', 'research'), task('b', 'research')])).toEqual([]);
  });
});
