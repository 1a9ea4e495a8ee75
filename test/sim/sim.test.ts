import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { dispatchConfigSchema } from '../../src/shared/adapter.js';
import { missionSchema } from '../../src/shared/mission.js';
import { parseArgs } from '../../src/sim/args.js';
import {
  executeSteps,
  type Outcome,
  type Report,
  type RunContext,
  type SimIo,
} from '../../src/sim/execute.js';
import { resolveInside } from '../../src/sim/io.js';
import { findAttempt, findSimBlock, readPromptFacts } from '../../src/sim/prompt.js';
import { formatClaudeJson, formatResult } from '../../src/sim/result-file.js';
import { parseSimBlock, type Step } from '../../src/sim/steps.js';
import { ROOT } from '../helpers/paths.js';

/** A dispatch prompt shaped like flotilla's (seeds/cli-dispatch.txt), around a task description. */
function prompt(description: string, options: { id?: string; failed?: number; extra?: string } = {}): string {
  const id = options.id ?? 't1-a1';
  return [
    '# Dispatch Task',
    'You are executing a task as part of flotilla, dispatched to an external CLI.',
    'No handoff context available from prior waves. Proceed with task instructions.',
    '## Task',
    '### Do it (t1)',
    description,
    '### Exit Criteria',
    '- `true`',
    options.failed
      ? `## ⚠️ PREVIOUS ATTEMPT FAILED (attempt ${options.failed}/3)\n\nit broke\n\nFix these issues.`
      : '',
    options.extra ?? '',
    '## Result Instructions',
    `When you complete this task, write your result to: .planning/dispatch/${id}-RESULT.md`,
    'Do not write anything to stdout — write the full result to the file above.',
  ]
    .filter(Boolean)
    .join('\n\n');
}

function sim(block: string): string {
  return `Build the thing.\n\n\`\`\`sim\n${block}\n\`\`\`\n`;
}

function steps(block: string): readonly Step[] {
  const parsed = parseSimBlock(block);
  if (!parsed.ok) throw new Error(parsed.problems.join('\n'));
  return parsed.steps;
}

function fakeIo(fail: readonly string[] = [], uptime = 0) {
  const files = new Map<string, string>();
  const runs: string[][] = [];
  const sleeps: number[] = [];
  const printed: Array<{ stream: string; data: string }> = [];
  let limited = 0;
  const io: SimIo = {
    async print(stream, data) {
      printed.push({ stream, data: Buffer.from(data).toString() });
    },
    async writeFile(path, content, append) {
      files.set(path, append ? `${files.get(path) ?? ''}${content}` : content);
      return path;
    },
    async run(argv) {
      runs.push([...argv]);
      return fail.includes(argv[0] ?? '')
        ? { exitCode: 3, output: 'it failed\n' }
        : { exitCode: 0, output: 'ok\n' };
    },
    async sleep(ms) {
      sleeps.push(ms);
    },
    uptimeMs: () => uptime,
    async takeRateLimit(times) {
      if (times === undefined) return true;
      if (limited >= times) return false;
      limited++;
      return true;
    },
  };
  return { io, files, runs, sleeps, printed };
}

const builder = (attempt = 1, extra: Partial<RunContext> = {}): RunContext => ({
  role: 'builder',
  attempt,
  dispatchTaskId: `t1-a${attempt}`,
  ...extra,
});
const reviewer = (attempt = 1): RunContext => ({ role: 'reviewer', attempt });

function report(outcome: Outcome): Report {
  if (outcome.kind !== 'report') throw new Error(`expected a report, got ${outcome.kind}`);
  return outcome.report;
}

describe('parseArgs', () => {
  it.each([
    [['--prompt-file', 'p.md'], { kind: 'file', path: 'p.md' }],
    [['--prompt-file=p.md'], { kind: 'file', path: 'p.md' }],
    [['--prompt', 'do it'], { kind: 'text', text: 'do it' }],
    [['-p', 'do it'], { kind: 'text', text: 'do it' }],
    [['do', 'it'], { kind: 'text', text: 'do it' }],
    [[], { kind: 'stdin' }],
  ])('%j takes the prompt as %j', (argv, source) => {
    const parsed = parseArgs(argv);
    expect(parsed.ok && parsed.args.prompt).toEqual(source);
  });

  it('reads role, model, output format and version', () => {
    const parsed = parseArgs([
      '--role',
      'reviewer',
      '--model',
      'sim-small',
      '--output-format',
      'json',
      '--version',
    ]);
    expect(parsed).toMatchObject({
      ok: true,
      args: { role: 'reviewer', model: 'sim-small', outputFormat: 'json', version: true },
    });
  });

  it.each([
    [['--role', 'boss'], /--role/],
    [['--bogus'], /unknown option '--bogus'/],
    [['--prompt'], /expected a value/],
    [['--prompt', 'a', '--prompt-file', 'b'], /one way/],
    [['--output-format', 'xml'], /--output-format/],
  ])('rejects %j', (argv, message) => {
    const parsed = parseArgs(argv);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.message).toMatch(message);
  });
});

describe('readPromptFacts', () => {
  it('finds the result path, the dispatch task id and the sim block of the task', () => {
    const facts = readPromptFacts(prompt(sim('- sleep: 1s'), { id: 'calc-a1' }), 'builder');
    expect(facts).toMatchObject({
      resultPath: '.planning/dispatch/calc-a1-RESULT.md',
      dispatchTaskId: 'calc-a1',
      simSource: '- sleep: 1s',
      attempt: 1,
    });
  });

  it('counts the attempt from the retry heading: the failed attempt plus one', () => {
    const facts = readPromptFacts(prompt(sim('- sleep: 1s'), { id: 't1', failed: 2 }), 'builder');
    expect(facts).toMatchObject({ attempt: 3, attemptSource: 'retry-heading' });
  });

  it('reads the reviewed attempt from an Attempt line, then the dispatch task id, then 1', () => {
    expect(findAttempt('# Review Task\n\nAttempt: 2\n', 'reviewer')).toEqual({
      attempt: 2,
      attemptSource: 'attempt-line',
    });
    expect(findAttempt('**Attempt**: 4\n', 'reviewer').attempt).toBe(4);
    expect(findAttempt('# Review Task\n', 'reviewer', 'power-a3-critic')).toEqual({
      attempt: 3,
      attemptSource: 'task-id',
    });
    expect(findAttempt('# Review Task\n', 'reviewer')).toEqual({ attempt: 1, attemptSource: 'default' });
  });

  it('finds the sim block of a critic prompt under "## Task Under Review"', () => {
    const text = [
      '# Review Task',
      '## Task Under Review',
      sim('- review: {score: 3}'),
      '## Diff',
      '```diff\n+```sim\n+- not_logged_in: true\n```',
      'Attempt: 1',
      '## Result Instructions',
      'When you complete this task, write your result to: .planning/dispatch/t1-a1-critic-RESULT.md',
    ].join('\n\n');
    expect(readPromptFacts(text, 'reviewer')).toMatchObject({
      simSource: '- review: {score: 3}',
      dispatchTaskId: 't1-a1-critic',
      attempt: 1,
    });
  });

  it('ignores sim blocks outside the task section (handoff, failure output)', () => {
    const text = prompt('No block here.', { failed: 1, extra: '```sim\n- not_logged_in: true\n```' });
    expect(readPromptFacts(text, 'builder').simSource).toBeUndefined();
  });

  it('reads fences longer than three backticks and indented fences', () => {
    expect(findSimBlock('````sim\n- write: {path: a, content: "```"}\n```\n- sleep: 1s\n````')).toBe(
      '- write: {path: a, content: "```"}\n```\n- sleep: 1s',
    );
    expect(findSimBlock('  ```sim\n  - sleep: 1s\n  ```')).toBe('- sleep: 1s');
    expect(findSimBlock('```yaml\n- sleep: 1s\n```')).toBeUndefined();
  });

  it('sees the answers of a continuation, and not a task that talks about one', () => {
    const answered = prompt(sim('- sleep: 1s'), {
      extra: '## Continuation\n\n### Answers\n\nUse metric units.',
    });
    expect(readPromptFacts(answered, 'builder').answers).toContain('Use metric units.');
    expect(readPromptFacts(prompt('## Continuation\n\nof the plan'), 'builder').answers).toBeUndefined();
  });
});

describe('parseSimBlock', () => {
  it('reads every step kind, with defaults and scope keys', () => {
    const block = [
      '- write: {path: a.txt, content: "attempt {attempt}"}',
      '- append: {path: a.txt, content: "more"}',
      '- run: [node, -e, "1"]',
      '- run: {argv: [node], allow_failure: true, timeout: 2s}',
      '- sleep: 500ms',
      '- fail_until_attempt: 2',
      '- break_until_attempt: 3',
      '- exceed_timeout: true',
      '- write_outside_scope: other/x.txt',
      '- rate_limit: "Error: 429"',
      '  rate_limit_times: 2',
      '- not_logged_in: true',
      '- needs_input: {questions: ["Which units?"]}',
      '- review: {score: 9, issues: []}',
      '- review_until_attempt: {attempt: 2}',
      '- result: Complete with Warnings',
      '- stdout_only: true',
      '- cost_usd: 0.01',
      '- print: {mb: 2, stream: stderr}',
      '- sleep: 1s',
      '  role: both',
      '  from_attempt: 2',
      '  before_attempt: 4',
    ].join('\n');
    const parsed = steps(block);
    expect(parsed.map((step) => step.kind)).toEqual([
      'write',
      'append',
      'run',
      'run',
      'sleep',
      'fail_until_attempt',
      'break_until_attempt',
      'exceed_timeout',
      'write_outside_scope',
      'rate_limit',
      'not_logged_in',
      'needs_input',
      'review',
      'review_until_attempt',
      'result',
      'stdout_only',
      'cost_usd',
      'print',
      'sleep',
    ]);
    expect(parsed[3]).toMatchObject({ value: { argv: ['node'], allowFailure: true, timeoutMs: 2000 } });
    expect(parsed[4]).toMatchObject({ value: 500 });
    expect(parsed[9]).toMatchObject({ value: { message: 'Error: 429', times: 2 } });
    expect(parsed[11]).toMatchObject({
      value: { questions: [{ id: 'Q1', text: 'Which units?', options: [] }] },
    });
    expect(parsed[12]).toMatchObject({ role: 'reviewer' });
    expect(parsed[13]).toMatchObject({ role: 'reviewer', value: { attempt: 2, score_before: 4 } });
    expect(parsed[17]).toMatchObject({ value: { stream: 'stderr', bytes: 2 * 1024 * 1024 } });
    expect(parsed[18]).toMatchObject({ role: 'both', fromAttempt: 2, beforeAttempt: 4, value: 1000 });
  });

  it('treats an empty block as no steps', () => {
    expect(parseSimBlock('')).toEqual({ ok: true, steps: [] });
  });

  it.each([
    ['- wirte: {path: a}', /step 1: unknown key 'wirte'/],
    ['- write: {path: a}\n  sleep: 1s', /one step per list item/],
    ['- run: ls', /step 1 \(run\): expected an argument list/],
    ['- sleep: soon', /expected a duration/],
    ['- print: {mb: 1, times: 2}', /mb or times, not both/],
    ['- review: {score: 11}', /score/],
    ['- write: {content: x}', /path/],
    ['- sleep: 1s\n  rate_limit_times: 2', /rate_limit_times belongs to a rate_limit step/],
    ['write: {path: a}', /expected a YAML list/],
    ['- [a', /not valid YAML/],
  ])('reports %j', (block, message) => {
    const parsed = parseSimBlock(block);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.problems.join('\n')).toMatch(message);
  });
});

describe('executeSteps', () => {
  it('writes and appends files, filling {attempt} and {task-id}', async () => {
    const fake = fakeIo();
    const outcome = await executeSteps(
      steps(
        '- write: {path: a.txt, content: "v{attempt} of {task-id}\\n"}\n- append: {path: a.txt, content: "more\\n"}',
      ),
      builder(2),
      fake.io,
    );
    expect(fake.files.get('a.txt')).toBe('v2 of t1-a2\nmore\n');
    expect(report(outcome)).toMatchObject({ status: 'Complete', outputs: ['a.txt'] });
  });

  it('says it made no change when there are no steps', async () => {
    const outcome = await executeSteps([], builder(), fakeIo().io);
    expect(report(outcome).summary).toMatch(/made no change/);
    expect(outcome).toMatchObject({ exitCode: 0, stdoutOnly: false });
  });

  it('runs programs as argument arrays and stops with Failed when one fails', async () => {
    const fake = fakeIo(['false']);
    const outcome = await executeSteps(
      steps('- run: [echo, hi]\n- run: [false]\n- write: {path: never.txt, content: x}'),
      builder(),
      fake.io,
    );
    expect(fake.runs).toEqual([['echo', 'hi'], ['false']]);
    expect(fake.files.has('never.txt')).toBe(false);
    expect(report(outcome)).toMatchObject({
      status: 'Failed',
      errors: [expect.stringMatching(/`false` exited with 3/)],
    });
  });

  it('goes on after a failing run with allow_failure', async () => {
    const outcome = await executeSteps(
      steps('- run: {argv: [false], allow_failure: true}'),
      builder(),
      fakeIo(['false']).io,
    );
    expect(report(outcome).status).toBe('Complete');
  });

  it('sleeps', async () => {
    const fake = fakeIo();
    await executeSteps(steps('- sleep: 2s'), builder(), fake.io);
    expect(fake.sleeps).toEqual([2000]);
  });

  it('prints a text a number of times, with a pause between, or up to a size in megabyte chunks', async () => {
    const slow = fakeIo();
    await executeSteps(steps('- print: {text: "tick\\n", times: 3, every: 100ms}'), builder(), slow.io);
    expect(slow.printed).toEqual([1, 2, 3].map(() => ({ stream: 'stdout', data: 'tick\n' })));
    expect(slow.sleeps).toEqual([100, 100]);
    const loud = fakeIo();
    await executeSteps(steps('- print: {text: "0123456789", mb: 2.5, stream: stderr}'), builder(), loud.io);
    const bytes = loud.printed.reduce((sum, write) => sum + write.data.length, 0);
    expect(bytes).toBe(Math.ceil((2.5 * 1024 * 1024) / 10) * 10);
    expect(loud.printed.length).toBe(3);
    expect(loud.printed.every((write) => write.data.startsWith('0123456789'))).toBe(true);
    expect(new Set(loud.printed.map((write) => write.stream))).toEqual(new Set(['stderr']));
  });

  it('sleeps until a time after its own start, counting the start-up already spent', async () => {
    const started = fakeIo([], 300);
    await executeSteps(steps('- sleep_until: 2s'), builder(), started.io);
    expect(started.sleeps).toEqual([1700]);
    const late = fakeIo([], 2500);
    await executeSteps(steps('- sleep_until: 2s'), builder(), late.io);
    expect(late.sleeps).toEqual([0]);
  });

  it('fails until the given attempt, keeping the work done before', async () => {
    const block = steps(
      '- write: {path: a, content: x}\n- fail_until_attempt: 3\n- write: {path: b, content: y}',
    );
    const first = report(await executeSteps(block, builder(2), fakeIo().io));
    expect(first).toMatchObject({
      status: 'Failed',
      outputs: ['a'],
      errors: [expect.stringMatching(/attempt 2/)],
    });
    const third = report(await executeSteps(block, builder(3), fakeIo().io));
    expect(third).toMatchObject({ status: 'Complete', outputs: ['a', 'b'] });
  });

  it('can fail with a non-zero exit code', async () => {
    const outcome = await executeSteps(
      steps('- fail_until_attempt: {attempt: 2, exit_code: 1}'),
      builder(),
      fakeIo().io,
    );
    expect(outcome).toMatchObject({ kind: 'report', exitCode: 1 });
  });

  it('writes broken content while it claims Complete, until the given attempt', async () => {
    const block = steps(
      '- write: {path: ok.js, content: good}\n- break_until_attempt: 2\n- write: {path: a.js, content: good, broken: bad}\n- write: {path: b.js, content: good}',
    );
    const fake1 = fakeIo();
    expect(report(await executeSteps(block, builder(1), fake1.io)).status).toBe('Complete');
    expect(fake1.files.get('ok.js')).toBe('good');
    expect(fake1.files.get('a.js')).toBe('bad');
    expect(fake1.files.get('b.js')).toMatch(/broke this file on purpose on attempt 1/);
    const fake2 = fakeIo();
    await executeSteps(block, builder(2), fake2.io);
    expect([fake2.files.get('a.js'), fake2.files.get('b.js')]).toEqual(['good', 'good']);
  });

  it('hangs on exceed_timeout, with a partial result when asked', async () => {
    expect(await executeSteps(steps('- exceed_timeout: true'), builder(), fakeIo().io)).toEqual({
      kind: 'hang',
      report: undefined,
    });
    const partial = await executeSteps(
      steps('- write: {path: a, content: x}\n- exceed_timeout: {partial_result: true}'),
      builder(),
      fakeIo().io,
    );
    expect(partial).toMatchObject({
      kind: 'hang',
      report: { status: 'Complete with Warnings', outputs: ['a'] },
    });
  });

  it('writes outside its scope when told to', async () => {
    const fake = fakeIo();
    const outcome = await executeSteps(steps('- write_outside_scope: docs/x.md'), builder(), fake.io);
    expect(fake.files.get('docs/x.md')).toMatch(/outside its scope/);
    expect(report(outcome).outputs).toEqual(['docs/x.md']);
  });

  it('answers with a rate limit, every time or a given number of times', async () => {
    const always = await executeSteps(steps('- rate_limit: true'), builder(), fakeIo().io);
    expect(always).toEqual({
      kind: 'abort',
      reason: 'rate_limit',
      message: 'Error: 429 rate_limit_error: rate limit exceeded',
    });
    const fake = fakeIo();
    const block = steps('- rate_limit: {message: slow down, times: 2}');
    const kinds = [];
    for (let i = 0; i < 3; i++) kinds.push((await executeSteps(block, builder(), fake.io)).kind);
    expect(kinds).toEqual(['abort', 'abort', 'report']);
  });

  it('is not logged in', async () => {
    expect(await executeSteps(steps('- not_logged_in: true'), builder(), fakeIo().io)).toEqual({
      kind: 'abort',
      reason: 'not_logged_in',
      message: 'Invalid API key · Please run /login',
    });
  });

  it('pauses with questions, and goes on once answered', async () => {
    const block = steps(
      '- needs_input: {questions: ["Metric or imperial?"]}\n- write: {path: a, content: x}',
    );
    const paused = report(await executeSteps(block, builder(), fakeIo().io));
    expect(paused).toMatchObject({
      status: 'Needs Input',
      outputs: [],
      needsInput: { questions: [{ id: 'Q1', text: 'Metric or imperial?' }] },
    });
    const resumed = report(await executeSteps(block, builder(1, { answers: 'Metric.' }), fakeIo().io));
    expect(resumed).toMatchObject({ status: 'Complete', outputs: ['a'] });
    expect(resumed.findings.join('\n')).toMatch(/Answers received: Metric\./);
  });

  it('overrides the status, summary and exit code, and declares stdout_only and cost', async () => {
    const outcome = await executeSteps(
      steps(
        '- result: {status: Complete with Warnings, summary: Half done., exit_code: 4}\n- stdout_only: true\n- cost_usd: 0.25',
      ),
      builder(),
      fakeIo().io,
    );
    expect(outcome).toMatchObject({
      kind: 'report',
      exitCode: 4,
      stdoutOnly: true,
      costUsd: 0.25,
      report: { status: 'Complete with Warnings', summary: 'Half done.' },
    });
  });

  it('keeps each step to its role and attempts', async () => {
    const block = steps(
      '- write: {path: b, content: x}\n- write: {path: r, content: x}\n  role: reviewer\n- write: {path: late, content: x}\n  from_attempt: 2\n- write: {path: early, content: x}\n  before_attempt: 2',
    );
    expect(report(await executeSteps(block, builder(1), fakeIo().io)).outputs).toEqual(['b', 'early']);
    expect(report(await executeSteps(block, builder(2), fakeIo().io)).outputs).toEqual(['b', 'late']);
    expect(report(await executeSteps(block, reviewer(1), fakeIo().io)).outputs).toEqual(['r']);
  });

  describe('as a reviewer', () => {
    it('approves with score 8 by default, and ignores the builder steps', async () => {
      const fake = fakeIo();
      const outcome = report(
        await executeSteps(steps('- write: {path: a, content: x}'), reviewer(), fake.io),
      );
      expect(fake.files.size).toBe(0);
      expect(outcome).toMatchObject({
        status: 'Complete',
        verdict: { score: 8, verdict: 'approve', issues: [] },
      });
    });

    it('gives the review of the block, rejecting below 7', async () => {
      const outcome = report(
        await executeSteps(steps('- review: {score: 5, issues: [too slow]}'), reviewer(), fakeIo().io),
      );
      expect(outcome.verdict).toEqual({ score: 5, verdict: 'reject', issues: ['too slow'] });
      expect(outcome.issues).toEqual(['too slow']);
    });

    it('rejects attempts before review_until_attempt, then gives the review', async () => {
      const block = steps(
        '- review_until_attempt: {attempt: 2, score_before: 4, issues_before: [fix negatives]}\n- review: {score: 9}',
      );
      expect(report(await executeSteps(block, reviewer(1), fakeIo().io)).verdict).toEqual({
        score: 4,
        verdict: 'reject',
        issues: ['fix negatives'],
      });
      expect(report(await executeSteps(block, reviewer(2), fakeIo().io)).verdict).toEqual({
        score: 9,
        verdict: 'approve',
        issues: [],
      });
    });
  });
});

describe('formatResult', () => {
  const base: Report = {
    status: 'Complete',
    summary: 'Did it.',
    outputs: ['src/a.js'],
    findings: ['Role: builder; attempt 1.'],
    issues: [],
    errors: [],
  };

  it('writes the six sections in order', () => {
    const text = formatResult(base, 't1-a1');
    const order = [
      '**Status**: Complete',
      '**Summary**: Did it.',
      '**Outputs**:\n- src/a.js',
      '**Findings**:',
      '**Issues**: None',
      '**Errors**: None',
    ];
    const positions = order.map((part) => text.indexOf(part));
    expect(positions.every((p) => p >= 0)).toBe(true);
    expect([...positions].sort((a, b) => a - b)).toEqual(positions);
  });

  it("puts a reviewer's verdict in a fenced json block", () => {
    const text = formatResult({ ...base, verdict: { score: 4, verdict: 'reject', issues: ['x'] } });
    const json = /```json\n(.*)\n```/.exec(text)?.[1];
    expect(JSON.parse(json ?? 'null')).toEqual({ score: 4, verdict: 'reject', issues: ['x'] });
  });

  it('ends a pause with an agent-result block of status needs_input', () => {
    const text = formatResult({
      ...base,
      status: 'Needs Input',
      needsInput: {
        questions: [{ id: 'Q1', text: 'Which?', options: ['a', 'b'] }],
        completedSteps: ['read'],
      },
    });
    expect(text).toMatch(/<agent-result>\n<status>needs_input<\/status>/);
    expect(text).toContain('<questions>[{"id":"Q1","text":"Which?","options":["a","b"]}]</questions>');
    expect(text).toMatch(/<\/agent-result>\n$/);
  });

  it('prints a Claude-style JSON result line', () => {
    const line = JSON.parse(
      formatClaudeJson({
        result: 'done',
        isError: false,
        durationMs: 5,
        promptChars: 40,
        costUsd: 0.01,
        sessionId: 's',
      }),
    );
    expect(line).toMatchObject({
      type: 'result',
      is_error: false,
      total_cost_usd: 0.01,
      usage: { input_tokens: 10 },
    });
  });
});

describe('resolveInside', () => {
  it('keeps writes inside the working directory and out of .git', async () => {
    await expect(resolveInside('/w', 'src/a.js')).resolves.toEqual({
      absolute: '/w/src/a.js',
      relative: 'src/a.js',
    });
    await expect(resolveInside('/w', '../x')).rejects.toThrow(/outside the working directory/);
    await expect(resolveInside('/w', '/etc/passwd')).rejects.toThrow(/outside/);
    await expect(resolveInside('/w', '.git/hooks/pre-commit')).rejects.toThrow(/\.git/);
  });
});

describe('the shipped adapters and demo', () => {
  it.each(['sim.md', 'sim-reviewer.md'])('%s loads with the adapter schema', async (name) => {
    const text = await readFile(join(ROOT, 'examples/adapters', name), 'utf8');
    const front = parseYaml(/^---\n([\s\S]*?)\n---/.exec(text)?.[1] ?? '');
    const section = text.slice(text.indexOf('## Dispatch Configuration'));
    const parsed = dispatchConfigSchema.safeParse(
      parseYaml(/```yaml\n([\s\S]*?)```/.exec(section)?.[1] ?? ''),
    );
    expect(parsed.success, JSON.stringify(parsed.error?.issues)).toBe(true);
    expect(front.cli).toBe(name === 'sim.md' ? 'flotilla-sim' : 'flotilla-sim-reviewer');
    expect(parsed.data?.invoke_command).toBe('flotilla-sim');
    expect(parsed.data?.capabilities.includes('code_review')).toBe(name === 'sim-reviewer.md');
  });

  it('has a demo mission whose every sim block parses', async () => {
    const mission = missionSchema.parse(
      parseYaml(await readFile(join(ROOT, 'examples/demo/mission.yaml'), 'utf8')),
    );
    expect(mission.tasks).toHaveLength(5);
    for (const task of mission.tasks) {
      const block = findSimBlock(task.description);
      expect(block, task.id).toBeDefined();
      const parsed = parseSimBlock(block ?? '');
      expect(parsed.ok ? [] : parsed.problems, task.id).toEqual([]);
    }
  });
});

// Each test spawns processes in its own directories, so they may run side by side.
describe.concurrent('flotilla-sim as a process', () => {
  let build: string;
  let main: string;
  let state: string;

  beforeAll(async () => {
    // Compile src/sim alone, so these tests do not depend on the rest of the tree building.
    build = await mkdtemp(join(tmpdir(), 'flotilla-sim-build-'));
    const program = ts.createProgram([join(ROOT, 'src/sim/main.ts')], {
      outDir: build,
      rootDir: join(ROOT, 'src'),
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      target: ts.ScriptTarget.ES2022,
      skipLibCheck: true,
      types: ['node'],
      // Type checking is `npm run typecheck`'s job; here only the JavaScript is needed.
      noCheck: true,
    });
    const emitted = program.emit();
    expect(emitted.emitSkipped).toBe(false);
    await writeFile(join(build, 'package.json'), '{"type": "module"}\n');
    await symlink(join(ROOT, 'node_modules'), join(build, 'node_modules'), 'dir');
    main = join(build, 'sim/main.js');
    state = await mkdtemp(join(tmpdir(), 'flotilla-sim-state-'));
  }, 60_000);

  const worktrees: string[] = [];

  afterAll(async () => {
    for (const work of worktrees) await rm(work, { recursive: true, force: true });
    await rm(build, { recursive: true, force: true });
    await rm(state, { recursive: true, force: true });
  });

  async function freshWorktree(): Promise<string> {
    const work = await mkdtemp(join(tmpdir(), 'flotilla-sim-work-'));
    worktrees.push(work);
    await mkdir(join(work, '.git'));
    await mkdir(join(work, '.planning/dispatch'), { recursive: true });
    return work;
  }

  function runCli(
    args: string[],
    options: { cwd: string; stdin?: string; killWhen?: () => Promise<unknown> },
  ) {
    return new Promise<{ code: number | null; signal: string | null; stdout: string; stderr: string }>(
      (done) => {
        const child = spawn(process.execPath, [main, ...args], {
          cwd: options.cwd,
          env: { ...process.env, FLOTILLA_SIM_STATE_DIR: state },
        });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (chunk) => {
          stdout += chunk;
        });
        child.stderr.on('data', (chunk) => {
          stderr += chunk;
        });
        options.killWhen?.().then(() => child.kill('SIGTERM'));
        child.on('close', (code, signal) => done({ code, signal, stdout, stderr }));
        child.stdin.end(options.stdin ?? '');
      },
    );
  }

  const result = (cwd: string, id = 't1-a1') =>
    readFile(join(cwd, `.planning/dispatch/${id}-RESULT.md`), 'utf8');

  it('prints its version', async () => {
    const out = await runCli(['--version'], { cwd: tmpdir() });
    expect(out).toMatchObject({ code: 0, stdout: 'flotilla-sim 0.1.0\n' });
  });

  it('takes the prompt by file path', async () => {
    const cwd = await freshWorktree();
    await writeFile(
      join(cwd, '.planning/dispatch/t1-a1-PROMPT.md'),
      prompt(sim('- write: {path: src/a.js, content: "1"}')),
    );
    const out = await runCli(
      ['--prompt-file', '.planning/dispatch/t1-a1-PROMPT.md', '--model', 'sim-medium'],
      { cwd },
    );
    expect(out).toMatchObject({ code: 0, stdout: '' });
    expect(await readFile(join(cwd, 'src/a.js'), 'utf8')).toBe('1');
    const text = await result(cwd);
    expect(text).toMatch(/\*\*Status\*\*: Complete\n/);
    expect(text).toMatch(/model sim-medium/);
  });

  it('takes the prompt as one argument (content_flag)', async () => {
    const cwd = await freshWorktree();
    const out = await runCli(['--prompt', prompt(sim('- write: {path: b.txt, content: "arg"}'))], { cwd });
    expect(out.code).toBe(0);
    expect(await readFile(join(cwd, 'b.txt'), 'utf8')).toBe('arg');
  });

  it('takes the prompt on stdin', async () => {
    const cwd = await freshWorktree();
    const out = await runCli([], { cwd, stdin: prompt(sim('- write: {path: c.txt, content: "stdin"}')) });
    expect(out.code).toBe(0);
    expect(await readFile(join(cwd, 'c.txt'), 'utf8')).toBe('stdin');
  });

  it('reviews as a reviewer, by the Attempt line of the critic prompt', async () => {
    const cwd = await freshWorktree();
    const review = (attempt: number) =>
      [
        '# Review Task',
        '## Task Under Review',
        sim('- review_until_attempt: {attempt: 2, issues_before: [not yet]}\n- review: {score: 9}'),
        '## Diff',
        `Attempt: ${attempt}`,
        '## Result Instructions',
        `When you complete this task, write your result to: .planning/dispatch/t1-a${attempt}-critic-RESULT.md`,
      ].join('\n\n');
    expect((await runCli(['--role', 'reviewer', '--prompt', review(1)], { cwd })).code).toBe(0);
    expect(await result(cwd, 't1-a1-critic')).toContain(
      '{"score":4,"verdict":"reject","issues":["not yet"]}',
    );
    await runCli(['--role', 'reviewer', '--prompt', review(2)], { cwd });
    expect(await result(cwd, 't1-a2-critic')).toContain('{"score":9,"verdict":"approve","issues":[]}');
  });

  it('runs a real program without a shell', async () => {
    const cwd = await freshWorktree();
    const block = `- run: [${JSON.stringify(process.execPath)}, -e, "require('fs').writeFileSync('ran.txt', 'yes')"]`;
    const out = await runCli(['--prompt', prompt(sim(block))], { cwd });
    expect(out.code).toBe(0);
    expect(await readFile(join(cwd, 'ran.txt'), 'utf8')).toBe('yes');
    const missing = await runCli(['--prompt', prompt(sim('- run: [no-such-program-xyz]'))], { cwd });
    expect(missing.code).toBe(0);
    expect(await result(cwd)).toMatch(/\*\*Status\*\*: Failed[\s\S]*'no-such-program-xyz' was not found/);
  });

  it('runs a program that prints 10 MB to the end, judged by its exit code, quoting its last lines', async () => {
    const cwd = await freshWorktree();
    const script = "process.stdout.write('test output line\\n'.repeat(600000)); console.log('all 42 passed')";
    const block = `- run: [${JSON.stringify(process.execPath)}, -e, ${JSON.stringify(script)}]`;
    const out = await runCli(['--prompt', prompt(sim(block))], { cwd });
    expect(out.code).toBe(0);
    const text = await result(cwd);
    expect(text).toMatch(/\*\*Status\*\*: Complete\n/);
    expect(text).toMatch(/: exit 0[\s\S]*all 42 passed/);
    const timed = await runCli(
      [
        '--prompt',
        prompt(
          sim(
            `- run: {argv: [${JSON.stringify(process.execPath)}, -e, "setInterval(() => {}, 1000)"], timeout: 300ms}`,
          ),
        ),
      ],
      { cwd },
    );
    expect(timed.code).toBe(0);
    expect(await result(cwd)).toMatch(/\*\*Status\*\*: Failed[\s\S]*timed out after 300ms \(SIGTERM\)/);
  });

  it('prints the result and cost as a Claude-style JSON line with --output-format json', async () => {
    const cwd = await freshWorktree();
    const out = await runCli(
      ['--output-format', 'json', '--prompt', prompt(sim('- cost_usd: 0.03\n- stdout_only: true'))],
      {
        cwd,
      },
    );
    const line = JSON.parse(out.stdout);
    expect(line).toMatchObject({ type: 'result', total_cost_usd: 0.03, is_error: false });
    expect(line.result).toMatch(/\*\*Status\*\*: Complete/);
    expect(existsSync(join(cwd, '.planning/dispatch/t1-a1-RESULT.md'))).toBe(false);
  });

  it('prints megabytes of noise before its JSON result line', async () => {
    const cwd = await freshWorktree();
    const block = '- print: {text: "abcdefghi\\n", mb: 3}\n- print: {mb: 1, stream: stderr}';
    const out = await runCli(['--output-format', 'json', '--prompt', prompt(sim(block))], { cwd });
    expect(out.code).toBe(0);
    const lines = out.stdout.trimEnd().split('\n');
    expect(JSON.parse(lines.at(-1) ?? '')).toMatchObject({ type: 'result', is_error: false });
    expect(lines.length - 1).toBe(Math.ceil((3 * 1024 * 1024) / 10));
    expect(new Set(lines.slice(0, -1))).toEqual(new Set(['abcdefghi']));
    expect(out.stderr.length).toBeGreaterThanOrEqual(1024 * 1024);
  });

  it('prints the result on stdout with stdout_only', async () => {
    const cwd = await freshWorktree();
    const out = await runCli(['--prompt', prompt(sim('- stdout_only: true'))], { cwd });
    expect(out.stdout).toMatch(/^# flotilla-sim result: t1-a1\n\n\*\*Status\*\*: Complete/);
  });

  it('is rate limited the given number of times, then works (the attempt does not change)', async () => {
    const cwd = await freshWorktree();
    const text = prompt(
      sim('- rate_limit: true\n  rate_limit_times: 2\n- write: {path: d.txt, content: done}'),
    );
    const first = await runCli(['--prompt', text], { cwd });
    expect(first).toMatchObject({ code: 1, stderr: 'Error: 429 rate_limit_error: rate limit exceeded\n' });
    expect((await runCli(['--prompt', text], { cwd })).code).toBe(1);
    expect((await runCli(['--prompt', text], { cwd })).code).toBe(0);
    expect(await readFile(join(cwd, 'd.txt'), 'utf8')).toBe('done');
    // A new repository (a new mission) counts from zero again.
    expect((await runCli(['--prompt', text], { cwd: await freshWorktree() })).code).toBe(1);
  });

  it('is not logged in', async () => {
    const cwd = await freshWorktree();
    const out = await runCli(['--prompt', prompt(sim('- not_logged_in: true'))], { cwd });
    expect(out).toMatchObject({ code: 1, stderr: 'Invalid API key · Please run /login\n' });
    expect(existsSync(join(cwd, '.planning/dispatch/t1-a1-RESULT.md'))).toBe(false);
  });

  it('exceeds its timeout until it is killed', async () => {
    const cwd = await freshWorktree();
    const file = join(cwd, '.planning/dispatch/t1-a1-RESULT.md');
    const written = async () => {
      while (!existsSync(file)) await new Promise((wait) => setTimeout(wait, 50));
      // Still running a moment after the partial result is written: it waits to be killed.
      await new Promise((wait) => setTimeout(wait, 500));
    };
    const out = await runCli(['--prompt', prompt(sim('- exceed_timeout: {partial_result: true}'))], {
      cwd,
      killWhen: written,
    });
    expect(out.signal).toBe('SIGTERM');
    expect(await result(cwd)).toMatch(/\*\*Status\*\*: Complete with Warnings/);
  });

  it('refuses to write outside its working directory', async () => {
    const cwd = await freshWorktree();
    const out = await runCli(['--prompt', prompt(sim('- write: {path: ../escaped.txt, content: x}'))], {
      cwd,
    });
    expect(out.code).toBe(1);
    expect(existsSync(join(cwd, '../escaped.txt'))).toBe(false);
    expect(await result(cwd)).toMatch(/\*\*Status\*\*: Failed[\s\S]*outside the working directory/);
  });

  it('exits 2 with a Failed result for a sim block it cannot read', async () => {
    const cwd = await freshWorktree();
    const out = await runCli(['--prompt', prompt(sim('- wirte: {path: a}'))], { cwd });
    expect(out.code).toBe(2);
    expect(out.stderr).toMatch(/unknown key 'wirte'/);
    expect(await result(cwd)).toMatch(/\*\*Status\*\*: Failed/);
  });

  it('exits 2 without a prompt', async () => {
    const out = await runCli(['--prompt-file', 'missing.md'], { cwd: tmpdir() });
    expect(out.code).toBe(2);
    expect(out.stderr).toMatch(/cannot read the prompt file 'missing.md'/);
  });

  // `npm test` builds first, so the launcher's compiled program exists.
  it('runs through the examples/bin launcher', async () => {
    const out = await new Promise<string>((done) => {
      const child = spawn(join(ROOT, 'examples/bin/flotilla-sim'), ['--version']);
      let stdout = '';
      child.stdout.on('data', (chunk) => {
        stdout += chunk;
      });
      child.on('close', () => done(stdout));
    });
    expect(out).toBe('flotilla-sim 0.1.0\n');
  });
});
