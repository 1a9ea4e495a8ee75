import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Adapter, DispatchConfigInput } from '../../../../src/shared/adapter.js';
import type { ControlMode } from '../../../../src/shared/capabilities.js';
import type { CriterionResult } from '../../../../src/shared/contracts.js';
import type { TaskSpec } from '../../../../src/shared/mission.js';
import { buildInvocation, promptTooLarge, resolveModel } from '../../../../src/workers/agent/invocation.js';
import {
  buildReviewPrompt,
  MAX_REVIEW_DIFF_CHARS,
} from '../../../../src/workers/stages/critic/review-prompt.js';
import { assemblePrompt, NO_HANDOFF, type PromptInput } from '../../../../src/workers/stages/run/prompt.js';
import { adapter as makeAdapter, taskSpec } from '../../../helpers/factories.js';
import { GOLDEN } from '../../../helpers/paths.js';

const GOLDEN_DIR = GOLDEN;

/** Compares with test/golden/<name>; `UPDATE_GOLDEN=1` rewrites the file instead. */
function expectGolden(name: string, actual: string): void {
  const file = join(GOLDEN_DIR, name);
  if (process.env.UPDATE_GOLDEN === '1') {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, actual);
    return;
  }
  if (!existsSync(file)) throw new Error(`missing golden file ${file}; run with UPDATE_GOLDEN=1 to write it`);
  expect(actual).toBe(readFileSync(file, 'utf8'));
}

const PERSONALITY = `---
name: engineering-senior-developer
model_tier: execution
allowed_paths: [src/, test/]
---

# Senior Developer

You write small, well-tested changes and explain your decisions.
`;

function task(overrides: Partial<TaskSpec> = {}): TaskSpec {
  return taskSpec({
    id: 'median',
    title: 'Add median()',
    description:
      'Implement median(xs) in src/stats.ts and export it. Cover odd and even lengths in test/stats.test.ts.',
    division: 'Engineering',
    languages: ['typescript'],
    frameworks: ['vitest'],
    agent: 'engineering-senior-developer',
    dependsOn: [],
    exitCriteria: ['npm test -- stats', 'grep -q "export function median" src/stats.ts'],
    allowedPaths: ['src/', 'test/'],
    files: ['src/stats.ts', 'test/stats.test.ts'],
    ...overrides,
  });
}

function input(overrides: Partial<PromptInput> = {}): PromptInput {
  return {
    personality: PERSONALITY,
    missionGoal: 'Add a stats module to the calculator',
    task: task(),
    handoff: [],
    controlMode: 'guarded',
    resultPath: '.planning/dispatch/median-a1-RESULT.md',
    ...overrides,
  };
}

describe('assemblePrompt golden files', () => {
  it.each(['autonomous', 'guarded', 'surgical', 'advisory'] as const)(
    'control mode %s',
    (mode: ControlMode) => {
      expectGolden(
        `prompt-${mode}.md`,
        assemblePrompt(input({ controlMode: mode, task: task({ controlMode: mode }) })),
      );
    },
  );

  it('retry', () => {
    const feedback = [
      '1 of 2 exit criteria failed (1 passed):',
      '1. `npm test -- stats`: exit code 1\n\n```\nFAIL test/stats.test.ts > median > even length\nexpected 2.5, received 2\n```',
    ].join('\n\n');
    expectGolden(
      'prompt-retry.md',
      assemblePrompt(
        input({
          retry: { attempt: 1, maxAttempts: 3, feedback },
          resultPath: '.planning/dispatch/median-a2-RESULT.md',
        }),
      ),
    );
  });

  it('handoff', () => {
    expectGolden(
      'prompt-handoff.md',
      assemblePrompt(
        input({
          personality: '',
          task: task({ dependsOn: ['mean', 'setup'], agent: undefined }),
          handoff: [
            {
              taskId: 'mean',
              title: 'Add mean()',
              summary: 'Added mean(xs) to src/stats.ts; it throws RangeError on an empty list.',
              outputs: 'src/stats.ts, test/stats.test.ts',
              findings: 'Numbers are validated with Number.isFinite; keep that convention.',
            },
            { taskId: 'setup', title: 'Set up vitest', summary: '', outputs: '', findings: '' },
          ],
        }),
      ),
    );
  });

  it('continuation', () => {
    expectGolden(
      'prompt-continuation.md',
      assemblePrompt(
        input({
          continuation: {
            questions:
              '[{"id":"Q1","text":"Should median of an empty list throw or return NaN?","options":["throw","NaN"]}]',
            answers: 'Q1: throw a RangeError, like mean().',
          },
        }),
      ),
    );
  });

  it('review', () => {
    const criteria: CriterionResult[] = [
      {
        command: 'npm test -- stats',
        exitCode: 0,
        timedOut: false,
        tail: 'Test Files  1 passed (1)\n     Tests  4 passed (4)',
      },
      { command: 'grep -q "export function median" src/stats.ts', exitCode: 0, timedOut: false, tail: '' },
    ];
    const diff = [
      'diff --git a/src/stats.ts b/src/stats.ts',
      '--- a/src/stats.ts',
      '+++ b/src/stats.ts',
      '@@ -5,0 +6,6 @@',
      '+export function median(xs: number[]): number {',
      '+  const s = [...xs].sort((a, b) => a - b);',
      '+  const m = Math.floor(s.length / 2);',
      '+  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;',
      '+}',
    ].join('\n');
    expectGolden(
      'review.md',
      buildReviewPrompt({
        task: task(),
        diff,
        criteria,
        resultPath: '.planning/dispatch/median-a1-review-RESULT.md',
        minScore: 7,
        attempt: 1,
      }),
    );
  });
});

describe('assemblePrompt rules', () => {
  it('starts with the personality, then the separator and the heading', () => {
    expect(assemblePrompt(input())).toMatch(
      /^---\nname: engineering-senior-developer[\s\S]*explain your decisions\.\n\n---\n\n# Dispatch Task\n\nYou are executing a task as part of flotilla, dispatched to an external CLI\.\n/,
    );
  });

  it('leaves out the separator without a personality', () => {
    expect(assemblePrompt(input({ personality: '  \n' }))).toMatch(/^# Dispatch Task\n/);
  });

  it('has no handoff section for a task without dependencies', () => {
    expect(assemblePrompt(input())).not.toContain('Handoff Context');
  });

  it('says so when no dependency left anything', () => {
    const prompt = assemblePrompt(
      input({
        task: task({ dependsOn: ['mean'] }),
        handoff: [{ taskId: 'mean', title: 'Add mean()', summary: ' ', outputs: '', findings: '' }],
      }),
    );
    expect(prompt).toContain(`## Handoff Context from Prior Wave\n\n${NO_HANDOFF}\n`);
  });

  it('orders the sections as the seed does', () => {
    const prompt = assemblePrompt(
      input({
        task: task({ dependsOn: ['mean'] }),
        handoff: [{ taskId: 'mean', title: 'Add mean()', summary: 'done', outputs: '', findings: '' }],
        retry: { attempt: 1, maxAttempts: 3, feedback: 'x' },
        continuation: { questions: 'q', answers: 'a' },
        interrupted: true,
      }),
    );
    const order = [
      '# Dispatch Task',
      '## Handoff Context from Prior Wave',
      '### From Add mean() (mean)',
      '## File Scope Guidance',
      '## Task',
      '### Exit Criteria',
      '## ⚠️ PREVIOUS ATTEMPT FAILED (attempt 1/3)',
      'Fix these issues.',
      '## Continuation',
      '## Resumed After an Interruption',
      '## Result Instructions',
    ].map((heading) => prompt.indexOf(heading));
    expect(order.every((at) => at >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
  });

  it.each<[string, Partial<PromptInput>, boolean]>([
    ['a first run', {}, false],
    ['a run resumed from a checkpoint', { interrupted: true }, true],
    ['a retry that was not interrupted', { retry: { attempt: 1, maxAttempts: 3, feedback: 'x' } }, false],
    ['an explicit false', { interrupted: false }, false],
  ])('%s: the interrupted line %s', (_name, overrides, expected) => {
    const prompt = assemblePrompt(input(overrides));
    const line = 'The previous run of this task was interrupted before it finished.';
    expect(prompt.includes(line)).toBe(expected);
    expect(prompt.includes('is already in your working directory as uncommitted changes')).toBe(expected);
  });

  it.each([
    [
      'autonomous',
      [],
      ['## File Scope Guidance', '## Read-Only Constraint', '## Advisory Mode', '## Write Scope'],
    ],
    [
      'guarded',
      ['## File Scope Guidance', '- `src/stats.ts`'],
      ['## Read-Only Constraint', '## Advisory Mode'],
    ],
    ['surgical', ['## Read-Only Constraint', 'Do not create, modify or delete'], ['## File Scope Guidance']],
    ['advisory', ['## Advisory Mode', 'Do not create, modify or delete'], ['## File Scope Guidance']],
  ] as const)('control mode %s', (mode, present, absent) => {
    const prompt = assemblePrompt(input({ controlMode: mode, task: task({ allowedPaths: undefined }) }));
    for (const text of present) expect(prompt).toContain(text);
    for (const text of absent) expect(prompt).not.toContain(text);
  });

  it('tells an autonomous agent about a hard write scope', () => {
    expect(assemblePrompt(input({ controlMode: 'autonomous' }))).toContain(
      '## Write Scope\n\nWrites outside these paths are reverted',
    );
  });

  it('guarded mode without any file list', () => {
    const prompt = assemblePrompt(input({ task: task({ files: [], allowedPaths: undefined }) }));
    expect(prompt).toContain('## File Scope Guidance\n\nNo file list was given for this task.');
  });

  it('carries the result contract exactly', () => {
    expect(assemblePrompt(input())).toContain(`## Result Instructions

When you complete this task, write your result to: .planning/dispatch/median-a1-RESULT.md

Your result file MUST contain these sections:
- **Status**: Complete | Complete with Warnings | Failed
- **Summary**: What you did (2-4 sentences)
- **Outputs**: List of files created or modified (or "None")
- **Findings**: Key findings, decisions, or recommendations
- **Issues**: Any problems encountered (or "None")
- **Errors**: Error details if failed (or "None")

Do not write anything to stdout — write the full result to the file above.`);
  });

  it('never puts an agent-result tag at the start of a line, so an echoed prompt is not a result', () => {
    expect(assemblePrompt(input())).not.toMatch(/^[ \t]*<agent-result>/m);
  });

  it('quotes a criterion that holds backticks', () => {
    const prompt = assemblePrompt(input({ task: task({ exitCriteria: ['test "$(echo `ls`)"'] }) }));
    expect(prompt).toContain('- `` test "$(echo `ls`)" ``');
  });
});

describe('buildReviewPrompt', () => {
  const base = { task: task(), criteria: [], resultPath: 'r.md', minScore: 8 };

  it('asks for the JSON verdict with the minimum score', () => {
    const prompt = buildReviewPrompt({ ...base, diff: '+x' });
    expect(prompt).toContain('{"score": N, "verdict": "approve"|"reject", "issues": [...]}');
    expect(prompt).toContain('Score it from 1 to 10: 8 or more approves');
    expect(prompt).toContain('When you complete this task, write your result to: r.md');
  });

  it('truncates a large diff with a note, at a line boundary', () => {
    const line = `+${'x'.repeat(99)}\n`;
    const diff = line.repeat(Math.ceil((MAX_REVIEW_DIFF_CHARS * 2) / line.length));
    const prompt = buildReviewPrompt({ ...base, diff });
    expect(prompt.length).toBeLessThan(MAX_REVIEW_DIFF_CHARS + 5_000);
    expect(prompt).toMatch(/Note: the diff is truncated; the first \d+ of its \d+ characters are shown/);
    expect(prompt).toContain(`${'x'.repeat(99)}\n\`\`\``);
  });

  it('fences a diff that contains a fence', () => {
    const prompt = buildReviewPrompt({ ...base, diff: '+```ts\n+code\n+```' });
    expect(prompt).toContain('````diff\n+```ts\n+code\n+```\n````');
  });

  it('reports failing criteria and an empty diff', () => {
    const prompt = buildReviewPrompt({
      ...base,
      diff: '',
      criteria: [
        { command: 'a', exitCode: 0, timedOut: false, tail: '' },
        { command: 'b', exitCode: 2, timedOut: false, tail: 'boom' },
        { command: 'c', exitCode: null, timedOut: true, tail: '' },
      ],
    });
    expect(prompt).toContain('2 of 3 exit criteria failed.');
    expect(prompt).toContain('- `b`: failed (exit code 2)\n\n```\nboom\n```');
    expect(prompt).toContain('- `c`: timed out');
    expect(prompt).toContain('The attempt changed no files.');
  });
});

function adapter(
  config: Partial<DispatchConfigInput>,
  models: Adapter['models'] = {},
  maxPromptSize?: number,
): Adapter {
  return makeAdapter({
    models,
    ...(maxPromptSize ? { maxPromptSize } : {}),
    config: { result_path: '{task-id}-RESULT.md', ...config },
  });
}

describe('resolveModel', () => {
  const withModels = adapter({ model_check: 'block-check' }, { planning: 'opus', execution: 'sonnet' });
  it.each([
    ['planning', 'opus'],
    ['execution', 'sonnet'],
    ['check', 'block-check'],
    ['heavy', 'opus'],
    ['standard', 'sonnet'],
    ['light', 'block-check'],
    [' Heavy ', 'opus'],
    [undefined, 'sonnet'],
    ['unknown-tier', 'sonnet'],
  ])('%j → %s', (tier, model) => {
    expect(resolveModel(withModels, tier)).toBe(model);
  });

  it('is undefined when the adapter names no model', () => {
    expect(resolveModel(adapter({}), 'planning')).toBeUndefined();
  });
});

describe('buildInvocation', () => {
  const prompt = { promptPath: '.planning/dispatch/t-PROMPT.md', promptText: 'Do the task.' };

  it.each([
    [
      'file_path',
      { prompt_delivery: 'file_path', prompt_flag: '-f', invoke_flags: '--model {model} --yes' },
      { model: 'pro' },
      {
        command: 'x',
        args: ['--model', 'pro', '--yes', '-f', '.planning/dispatch/t-PROMPT.md'],
        delivery: 'file_path',
      },
    ],
    [
      'stdin_pipe',
      { prompt_delivery: 'stdin_pipe', invoke_flags: ['--sandbox'] },
      {},
      { command: 'x', args: ['--sandbox'], stdin: 'Do the task.', delivery: 'stdin_pipe' },
    ],
    [
      'content_flag',
      { prompt_delivery: 'content_flag', prompt_flag: '-p', invoke_flags: ['--approval-mode', 'full-auto'] },
      {},
      {
        command: 'x',
        args: ['--approval-mode', 'full-auto', '-p', 'Do the task.'],
        delivery: 'content_flag',
      },
    ],
    [
      'a {model} pair dropped when no model is known',
      { prompt_delivery: 'stdin_pipe', invoke_flags: ['-m', '{model}', '--model={model}', '--json'] },
      {},
      { command: 'x', args: ['--json'], stdin: 'Do the task.', delivery: 'stdin_pipe' },
    ],
    [
      '{model} inside a flag',
      { prompt_delivery: 'stdin_pipe', invoke_flags: ['--model={model}'] },
      { model: 'gpt-5' },
      { command: 'x', args: ['--model=gpt-5'], stdin: 'Do the task.', delivery: 'stdin_pipe' },
    ],
    [
      'a command with a subcommand',
      {
        prompt_delivery: 'content_flag',
        prompt_flag: '--prompt=',
        invoke_command: 'codex exec',
        invoke_flags: '--json',
      },
      {},
      { command: 'codex', args: ['exec', '--json', '--prompt=Do the task.'], delivery: 'content_flag' },
    ],
  ] as const)('%s', (_name, config, extra, expected) => {
    expect(buildInvocation(adapter(config as Partial<DispatchConfigInput>), { ...prompt, ...extra })).toEqual(
      expected,
    );
  });

  it('sends a prompt too large for one argument on stdin, whole, with a note', () => {
    const promptText = 'é'.repeat(70_000); // 140,000 bytes in UTF-8, 70,000 characters
    const invocation = buildInvocation(adapter({ prompt_delivery: 'content_flag', prompt_flag: '-p' }), {
      ...prompt,
      promptText,
    });
    expect(invocation).toMatchObject({ command: 'x', args: [], stdin: promptText, delivery: 'stdin_pipe' });
    expect(invocation.note).toMatch(/140000 bytes.*131072.*stdin instead of -p/);
  });

  it('honours a smaller maxArgBytes', () => {
    const invocation = buildInvocation(adapter({ prompt_delivery: 'content_flag', prompt_flag: '-p' }), {
      ...prompt,
      maxArgBytes: 5,
    });
    expect(invocation.delivery).toBe('stdin_pipe');
    expect(invocation.stdin).toBe('Do the task.');
  });
});

describe('promptTooLarge', () => {
  it.each([
    [adapter({ max_prompt_size: 10 }), 40, false],
    [adapter({ max_prompt_size: 10 }), 41, true],
    [adapter({}, {}, 10), 44, true],
    [adapter({}), 10_000_000, false],
  ])('case %#', (subject, length, expected) => {
    expect(promptTooLarge(subject, 'x'.repeat(length))).toBe(expected);
  });
});
