import { describe, expect, it } from 'vitest';
import { type CollectInput, collectResult } from '../../../src/workers/agent/collect-result.js';
import {
  mapStatus,
  parseAgentResult,
  parseResultFile,
  splitOutputs,
} from '../../../src/workers/agent/result-file.js';

const BOLD = `# Result: Add median()

**Status**: Complete

**Summary**: Implemented median(xs) in src/stats.ts with tests for odd and even lengths.

**Outputs**:
- \`src/stats.ts\`
- \`test/stats.test.ts\`

**Findings**: Sorting a copy keeps the input untouched.

**Issues**: None

**Errors**: None
`;

const HEADINGS = `## Status
Complete with Warnings

## Summary
Added median(). One edge case is left open.

## Outputs
src/stats.ts, test/stats.test.ts

## Findings
### Design
Sorting a copy.
### Error handling
Empty input throws.

## Issues
NaN inputs are not rejected yet.

## Errors
None
`;

describe('parseResultFile', () => {
  it('reads the bold form', () => {
    const parsed = parseResultFile(BOLD);
    expect(parsed.status).toBe('success');
    expect(parsed.missing).toEqual([]);
    expect(parsed.sections.Summary).toBe(
      'Implemented median(xs) in src/stats.ts with tests for odd and even lengths.',
    );
    expect(parsed.sections.Outputs).toBe('- `src/stats.ts`\n- `test/stats.test.ts`');
    expect(parsed.sections.Issues).toBe('None');
  });

  it('reads the heading form, keeping subheadings inside their section', () => {
    const parsed = parseResultFile(HEADINGS);
    expect(parsed.status).toBe('success_with_warnings');
    expect(parsed.missing).toEqual([]);
    expect(parsed.sections.Findings).toBe(
      '### Design\nSorting a copy.\n### Error handling\nEmpty input throws.',
    );
    expect(parsed.sections.Errors).toBe('None');
  });

  it.each([
    ['**Status**: Complete', 'success'],
    ['**Status:** Complete', 'success'],
    ['- **Status**: Complete', 'success'],
    ['**Status: Failed**', 'failure'],
    ['__Status__: complete', 'success'],
    ['Status: Complete', 'success'],
    ['STATUS: FAILED', 'failure'],
    ['status: complete with warnings', 'success_with_warnings'],
    ['## Status\nComplete', 'success'],
    ['### **Status**\n\n**Complete**', 'success'],
    ['## Status: ✅ Completed', 'success'],
    ['# STATUS\n`Complete (with warnings)`', 'success_with_warnings'],
    ['**Status**: Complete | Complete with Warnings | Failed', 'unknown'],
    ['**Status**: Partially done', 'unknown'],
    ['**Status**: Not complete', 'unknown'],
    ['**Status**:', 'unknown'],
    ['Nothing here', 'unknown'],
  ])('%j → %s', (text, status) => {
    expect(parseResultFile(text).status).toBe(status);
  });

  it('lists missing sections in contract order', () => {
    expect(parseResultFile('**Summary**: x\n**Status**: Complete').missing).toEqual([
      'Outputs',
      'Findings',
      'Issues',
      'Errors',
    ]);
  });

  it('treats singular names and a repeated name as the same section', () => {
    const parsed = parseResultFile('Status: Failed\nError: ENOENT\nError: second line\nOutput: none');
    expect(parsed.sections.Errors).toBe('ENOENT\nError: second line');
    expect(parsed.sections.Outputs).toBe('none');
  });

  it('ignores section names inside code fences', () => {
    const parsed = parseResultFile(
      '**Status**: Complete\n**Findings**:\n```\nStatus: Failed\n## Errors\n```\n',
    );
    expect(parsed.status).toBe('success');
    expect(parsed.sections.Errors).toBeUndefined();
    expect(parsed.sections.Findings).toBe('```\nStatus: Failed\n## Errors\n```');
  });

  it('ends a heading section at a sibling heading', () => {
    const parsed = parseResultFile('## Summary\nDid it.\n## Notes\nunrelated\n');
    expect(parsed.sections.Summary).toBe('Did it.');
  });

  it('keeps the agent-result block out of the sections and parses it', () => {
    const parsed = parseResultFile(
      `${BOLD}\n<agent-result>\n<status>completed</status>\n<outputs>src/stats.ts</outputs>\n<summary>ok</summary>\n</agent-result>\n`,
    );
    expect(parsed.sections.Errors).toBe('None');
    expect(parsed.agentResult).toMatchObject({
      status: 'completed',
      outputs: ['src/stats.ts'],
      truncated: false,
    });
  });

  it('handles CRLF line ends', () => {
    expect(parseResultFile(BOLD.replace(/\n/g, '\r\n')).missing).toEqual([]);
  });
});

describe('mapStatus', () => {
  it.each([
    [undefined, 'unknown'],
    ['Complete', 'success'],
    ['Completed — all tests pass', 'success'],
    ['Complete with warnings', 'success_with_warnings'],
    ['Completed, with warnings', 'success_with_warnings'],
    ['Failed', 'failure'],
    ['failure: tests broke', 'failure'],
    ['[Complete]', 'success'],
    ['Done', 'unknown'],
  ])('%j → %s', (value, status) => {
    expect(mapStatus(value)).toBe(status);
  });
});

describe('parseAgentResult', () => {
  it('returns null without a block', () => {
    expect(parseAgentResult('no block here')).toBeNull();
    // Mentioned in prose, as the prompt does, it is not a block.
    expect(parseAgentResult('end with a line `<agent-result>`, then `<status>`')).toBeNull();
  });

  it.each([
    'completed',
    'needs_input',
    'blocked',
    'approved',
    'approved_with_notes',
    'needs_revision',
    'rolled-back',
  ] as const)('reads status %s', (status) => {
    expect(parseAgentResult(`<agent-result>\n<status>${status}</status>\n</agent-result>`)?.status).toBe(
      status,
    );
  });

  it.each([
    ['Needs-Input', 'needs_input'],
    ['rolled_back', 'rolled-back'],
    ['ROLLED BACK', 'rolled-back'],
    ['approved with notes', 'approved_with_notes'],
  ])('normalises %j', (raw, status) => {
    expect(parseAgentResult(`<agent-result><status>${raw}</status></agent-result>`)).toMatchObject({
      status,
      statusSource: 'tag',
    });
  });

  it('defaults a missing status to completed when there are outputs, blocked when not', () => {
    expect(parseAgentResult('<agent-result>\n<outputs>a.ts, b.ts</outputs>\n</agent-result>')).toMatchObject({
      status: 'completed',
      statusSource: 'inferred',
      outputs: ['a.ts', 'b.ts'],
    });
    expect(parseAgentResult('<agent-result>\n<summary>hm</summary>\n</agent-result>')).toMatchObject({
      status: 'blocked',
      statusSource: 'inferred',
    });
  });

  it('keeps an unknown status as rawStatus', () => {
    expect(
      parseAgentResult('<agent-result><status>done</status><outputs>a.ts</outputs></agent-result>'),
    ).toMatchObject({
      status: 'completed',
      rawStatus: 'done',
    });
  });

  it('reads needs_input with questions, steps and guidance', () => {
    const result = parseAgentResult(`Some prose first.
<agent-result>
<status>needs_input</status>
<outputs>docs/plan.md</outputs>
<summary>Need a decision on rounding.</summary>
<questions>[{"id": "Q1", "text": "Round half up or to even?", "options": ["up", "even"]}]</questions>
<completed-steps>1. read the code
2. drafted the plan</completed-steps>
<resume-guidance>Continue at step 3 with the chosen rounding.</resume-guidance>
</agent-result>`);
    expect(result).toEqual({
      status: 'needs_input',
      statusSource: 'tag',
      outputs: ['docs/plan.md'],
      summary: 'Need a decision on rounding.',
      questions: [{ id: 'Q1', text: 'Round half up or to even?', options: ['up', 'even'] }],
      completedSteps: '1. read the code\n2. drafted the plan',
      resumeGuidance: 'Continue at step 3 with the chosen rounding.',
      truncated: false,
    });
  });

  it('keeps questions that are not JSON as text', () => {
    expect(
      parseAgentResult(
        '<agent-result><status>needs_input</status><questions>Which DB?</questions></agent-result>',
      )?.questions,
    ).toBe('Which DB?');
  });

  it('reads a truncated block, unclosed fields included', () => {
    expect(
      parseAgentResult(
        '<agent-result>\n<status>completed</status>\n<outputs>src/a.ts,\nsrc/b.ts</outputs>\n<summary>Wrote a and b and then',
      ),
    ).toEqual({
      status: 'completed',
      statusSource: 'tag',
      outputs: ['src/a.ts', 'src/b.ts'],
      summary: 'Wrote a and b and then',
      truncated: true,
    });
    expect(parseAgentResult('<agent-result>\n<status>compl')).toMatchObject({
      truncated: true,
      status: 'blocked',
      rawStatus: 'compl',
    });
  });

  it('takes the last block', () => {
    const text =
      '<agent-result>\n<status>blocked</status>\n</agent-result>\nretrying\n<agent-result>\n<status>completed</status>\n<outputs>x</outputs>\n</agent-result>';
    expect(parseAgentResult(text)?.status).toBe('completed');
  });
});

describe('splitOutputs', () => {
  it.each([
    ['src/a.ts, src/b.ts', ['src/a.ts', 'src/b.ts']],
    ['- `src/a.ts`\n* "src/b.ts"\n1. src/c.ts', ['src/a.ts', 'src/b.ts', 'src/c.ts']],
    [
      '- `src/a.ts` — created\n- src/b.ts - updated the tests\n- src/c.ts (new)',
      ['src/a.ts', 'src/b.ts', 'src/c.ts'],
    ],
    ['None', []],
    ['none.', []],
    ['', []],
  ])('%j', (text, outputs) => {
    expect(splitOutputs(text)).toEqual(outputs);
  });
});

function collect(overrides: Partial<CollectInput>) {
  return collectResult({
    exitCode: 0,
    timedOut: false,
    stdout: '',
    stderr: '',
    resultFileText: null,
    changedFiles: [],
    ...overrides,
  });
}

describe('collectResult', () => {
  it('a clean Complete result file', () => {
    const result = collect({ resultFileText: BOLD, changedFiles: ['src/stats.ts', 'test/stats.test.ts'] });
    expect(result).toEqual({
      status: 'success',
      outcome: 'done',
      text: BOLD,
      source: 'file',
      warnings: [],
      summary: 'Implemented median(xs) in src/stats.ts with tests for odd and even lengths.',
      outputs: ['src/stats.ts', 'test/stats.test.ts'],
      findings: 'Sorting a copy keeps the input untouched.',
    });
  });

  it.each([
    // name, input, status, outcome, source, warning pattern
    ['Complete with Warnings', { resultFileText: HEADINGS }, 'success_with_warnings', 'done', 'file', null],
    [
      'Failed',
      { resultFileText: '**Status**: Failed\n**Summary**: tests broke\n**Errors**: tsc: 3 errors' },
      'failure',
      'failed',
      'file',
      /lacks the sections: Outputs, Findings, Issues/,
    ],
    [
      'unknown status',
      { resultFileText: '**Status**: Mostly\n**Summary**: x' },
      'unknown',
      'done',
      'file',
      /Status 'Mostly' is not/,
    ],
    ['empty file', { resultFileText: '  \n' }, 'failure', 'failed', 'file', /result file is empty/],
    [
      'every section missing',
      { resultFileText: 'I did the thing.' },
      'failure',
      'failed',
      'file',
      /none of the sections.*partial failure/,
    ],
    [
      'non-zero exit with a Complete file',
      { exitCode: 1, stderr: 'warn: x', resultFileText: BOLD },
      'success_with_warnings',
      'done',
      'file',
      /exited with code 1/,
    ],
    [
      'non-zero exit with a Failed file',
      { exitCode: 2, resultFileText: '**Status**: Failed' },
      'failure',
      'failed',
      'file',
      /exited with code 2/,
    ],
    [
      'timeout with a partial file',
      { timedOut: true, exitCode: null, resultFileText: '**Status**: Complete\n**Summary**: half' },
      'success_with_warnings',
      'done',
      'file',
      /timed out/,
    ],
    [
      'timeout with an unknown status',
      { timedOut: true, exitCode: null, resultFileText: '**Summary**: half' },
      'success_with_warnings',
      'done',
      'file',
      /partial result/,
    ],
    [
      'timeout without a file',
      { timedOut: true, exitCode: null, stdout: 'working…', changedFiles: ['a.ts'] },
      'failure',
      'failed',
      'none',
      /timed out/,
    ],
    [
      'stopped for its output without a file',
      { outputCapped: 20 * 1024 * 1024, exitCode: null, stdout: 'log line', changedFiles: ['a.ts'] },
      'failure',
      'failed',
      'none',
      /printed more than 20 MB; stopped by flotilla/,
    ],
    [
      'stopped for its output with a partial file',
      { outputCapped: 1024 ** 3, exitCode: null, resultFileText: '**Status**: Complete\n**Summary**: half' },
      'success_with_warnings',
      'done',
      'file',
      /printed more than 1 GB; stopped by flotilla/,
    ],
    ['stdout with the sections', { stdout: BOLD }, 'success', 'done', 'stdout', /no result file/],
    [
      'stdout prose only',
      { stdout: 'Here is the analysis: all good.' },
      'unknown',
      'done',
      'stdout',
      /stdout used as the result/,
    ],
    [
      'stdout prose after a failed exit',
      { exitCode: 1, stdout: 'Error: not logged in', stderr: 'auth' },
      'failure',
      'failed',
      'stdout',
      /exited with code 1/,
    ],
    [
      'stdout agent-result',
      {
        stdout:
          'log\n<agent-result>\n<status>completed</status>\n<outputs>a.ts</outputs>\n<summary>did a</summary>\n</agent-result>',
      },
      'success',
      'done',
      'agent-result',
      /no result file/,
    ],
    [
      'agent-result blocked',
      {
        stdout:
          '<agent-result>\n<status>blocked</status>\n<summary>no access to the DB</summary>\n</agent-result>',
      },
      'failure',
      'failed',
      'agent-result',
      null,
    ],
    [
      'agent-result rolled-back',
      { resultFileText: '<agent-result>\n<status>rolled-back</status>\n</agent-result>' },
      'failure',
      'failed',
      'agent-result',
      /agent-result block was used/,
    ],
    [
      'agent-result approved_with_notes',
      { resultFileText: '<agent-result>\n<status>approved_with_notes</status>\n</agent-result>' },
      'success_with_warnings',
      'done',
      'agent-result',
      null,
    ],
    [
      'agent-result needs_revision',
      { resultFileText: '<agent-result>\n<status>needs_revision</status>\n</agent-result>' },
      'success_with_warnings',
      'done',
      'agent-result',
      /needs_revision/,
    ],
    [
      'agent-result without status, files changed',
      { stdout: '<agent-result>\n<summary>x</summary>\n</agent-result>', changedFiles: ['b.ts'] },
      'success',
      'done',
      'agent-result',
      null,
    ],
    [
      'truncated agent-result with new work',
      { stdout: '<agent-result>\n<status>completed</status>\n<summary>wrote', changedFiles: ['a.ts'] },
      'success_with_warnings',
      'done',
      'agent-result',
      /cut off/,
    ],
    [
      'truncated agent-result without new work',
      { stdout: '<agent-result>\n<status>completed</status>\n<summary>wrote' },
      'failure',
      'failed',
      'agent-result',
      /cut off/,
    ],
    [
      'no result, changed files',
      { changedFiles: ['src/a.ts'] },
      'success_with_warnings',
      'done',
      'changed-files',
      /completed, unverified/,
    ],
    ['nothing at all', {}, 'failure', 'failed', 'none', /no result file/],
    [
      'non-zero exit and nothing else',
      { exitCode: 127, stderr: 'codex: command not found' },
      'failure',
      'failed',
      'none',
      /exited with code 127/,
    ],
    [
      'killed by a signal',
      { exitCode: null, changedFiles: ['a.ts'] },
      'failure',
      'failed',
      'none',
      /killed by a signal/,
    ],
  ] as const)('%s', (_name, overrides, status, outcome, source, warning) => {
    const result = collect(overrides as Partial<CollectInput>);
    expect({ status: result.status, outcome: result.outcome, source: result.source }).toEqual({
      status,
      outcome,
      source,
    });
    if (warning) expect(result.warnings.join('\n')).toMatch(warning);
    // Never complete silently: a result the agent did not state in the contract's terms says why.
    if (result.source !== 'file' || result.status === 'unknown')
      expect(result.warnings.length).toBeGreaterThan(0);
    if (result.outcome === 'failed') expect(result.error).toBeTruthy();
  });

  it('keeps stderr on a non-zero exit, in the text and the error', () => {
    const result = collect({
      exitCode: 1,
      stderr: 'line 1\nError: API key missing',
      resultFileText: '**Status**: Failed\n**Errors**: no key',
    });
    expect(result.text).toContain('## stderr (the CLI exited with code 1)\n\nline 1\nError: API key missing');
    expect(result.error).toBe('The agent reports failure: no key (Error: API key missing)');
  });

  it('quotes the first failure reason without its list marker', () => {
    const result = collect({
      resultFileText: '**Status**: Failed\n**Errors**:\n- first try: the test still fails\n- second point',
    });
    expect(result.error).toBe('The agent reports failure: first try: the test still fails');
  });

  it('does not add stderr after a clean exit', () => {
    expect(collect({ stderr: 'progress noise', resultFileText: BOLD }).text).toBe(BOLD);
  });

  it('pauses on needs_input with the questions', () => {
    const result = collect({
      resultFileText: `**Status**: Complete with Warnings\n**Summary**: need an answer\n<agent-result>\n<status>needs_input</status>\n<questions>[{"id":"Q1","text":"Which?"}]</questions>\n</agent-result>`,
    });
    expect(result).toMatchObject({
      outcome: 'needs_input',
      questions: [{ id: 'Q1', text: 'Which?' }],
      summary: 'need an answer',
    });
  });

  it('says which files changed when nothing else came back', () => {
    expect(collect({ changedFiles: ['a.ts', 'b.ts'] })).toMatchObject({
      summary: 'Completed, unverified: no result was returned, but 2 file(s) changed (a.ts, b.ts).',
      outputs: ['a.ts', 'b.ts'],
    });
  });

  it('says blocked when there is nothing', () => {
    expect(collect({}).summary).toBe(
      'Blocked: the CLI returned no structured result, printed nothing and changed no files.',
    );
  });

  it('falls back to the changed files for outputs', () => {
    expect(
      collect({ resultFileText: '**Status**: Complete\n**Outputs**: None', changedFiles: ['x.ts'] }).outputs,
    ).toEqual(['x.ts']);
  });

  it('clips a long summary', () => {
    const summary = collect({
      resultFileText: `**Status**: Complete\n**Summary**: ${'word '.repeat(200)}`,
    }).summary;
    expect(summary.length).toBeLessThanOrEqual(400);
    expect(summary.endsWith('…')).toBe(true);
  });
});

describe('collectResult of a CLI stopped for its output', () => {
  it('fails with the plain reason as its error, never a broken pipe', () => {
    const result = collectResult({
      exitCode: null,
      timedOut: false,
      outputCapped: 500 * 1024 * 1024,
      stdout: 'log',
      stderr: 'still logging',
      resultFileText: null,
      changedFiles: [],
    });
    expect(result.error).toBe('The CLI printed more than 500 MB; stopped by flotilla. (still logging)');
  });
});
