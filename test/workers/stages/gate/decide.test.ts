import { describe, expect, it } from 'vitest';
import type { CriterionResult, CriticResult, RunResult } from '../../../../src/shared/contracts.js';
import {
  approvalRecord,
  decideAfterMerge,
  decideBudget,
  decideGate,
  decideGateJobFailed,
  decideHeld,
  describeDecision,
  formatCriteriaFeedback,
  formatCriticFeedback,
  holdForPerson,
  MAX_RETRY_DELAY_MS,
  retryDelayMs,
  settlePatch,
} from '../../../../src/workers/stages/gate/decide.js';
import { taskSpec as task } from '../../../helpers/factories.js';

const doneRun: RunResult = {
  outcome: 'done',
  cli: 'codex',
  host: 'h1',
  resultStatus: 'success',
  summary: 'Added mean().',
  durationMs: 1_000,
};
const pass: CriterionResult = { command: 'npm test', exitCode: 0, timedOut: false, tail: 'ok' };
const fail: CriterionResult = {
  command: 'npx tsc --noEmit',
  exitCode: 2,
  timedOut: false,
  tail: 'src/a.ts(1,1): error TS2304',
};
const slow: CriterionResult = { command: 'npm run e2e', exitCode: null, timedOut: true, tail: '' };

function result(overrides: {
  run?: Partial<RunResult>;
  ran?: boolean;
  passed?: boolean;
  criteria?: CriterionResult[];
  critic?: Partial<CriticResult>;
}): CriticResult {
  const criteria = overrides.criteria ?? [pass];
  return {
    verify: {
      run: { ...doneRun, ...overrides.run },
      ran: overrides.ran ?? true,
      passed: overrides.passed ?? criteria.every((c) => c.exitCode === 0 && !c.timedOut),
      criteria,
    },
    ran: true,
    cli: 'gemini',
    verdict: { score: 8, verdict: 'approve', issues: [] },
    ...overrides.critic,
  };
}

const decide = (r: CriticResult, attempt = 1, t = task(), cancelled = false) =>
  decideGate({ result: r, task: t, attempt, cancelled });

describe('decideGate', () => {
  it.each([
    ['cancelled mission', decide(result({}), 1, task(), true), { action: 'cancel' }],
    ['cancelled run', decide(result({ run: { outcome: 'cancelled' } })), { action: 'cancel' }],
    ['approve with the critic score', decide(result({})), { action: 'approve', score: 8 }],
    [
      'approve at exactly min score',
      decide(result({ critic: { verdict: { score: 7, verdict: 'approve', issues: [] } } })),
      { action: 'approve', score: 7 },
    ],
    [
      'approve without a critic when the task has none',
      decide(result({ critic: { ran: false, verdict: undefined } }), 1, task({ critic: false })),
      { action: 'approve' },
    ],
  ] as const)('%s', (_name, decision, expected) => {
    expect(decision).toEqual(expected);
  });

  it('cancel wins over everything else', () => {
    expect(decide(result({ run: { outcome: 'failed', error: 'x' } }), 3, task(), true)).toEqual({
      action: 'cancel',
    });
  });

  it('pauses on needs_input', () => {
    expect(decide(result({ run: { outcome: 'needs_input', summary: 'Which rounding?' } }))).toEqual({
      action: 'pause',
      reason: 'the agent needs input: Which rounding?',
    });
  });

  it('retries a failed run with its error', () => {
    const decision = decide(
      result({ run: { outcome: 'failed', error: 'The CLI exited with code 1', summary: 'x' } }),
    );
    expect(decision).toMatchObject({
      action: 'retry',
      delayMs: 5_000,
      reason: 'run failed: The CLI exited with code 1',
    });
    expect(decision.action === 'retry' && decision.feedback).toContain('The CLI exited with code 1');
  });

  it('fails a failed run on the last attempt', () => {
    expect(decide(result({ run: { outcome: 'failed', error: 'boom' } }), 3)).toMatchObject({
      action: 'fail',
      reason: 'out of attempts (3/3): run failed: boom',
    });
  });

  it('retries failing criteria with each command, exit code and output', () => {
    const decision = decide(result({ criteria: [pass, fail, slow] }), 2);
    expect(decision).toMatchObject({
      action: 'retry',
      delayMs: 10_000,
      reason: 'exit criteria failed: 2 of 3 (npx tsc --noEmit exited 2)',
    });
    expect(decision.action === 'retry' && decision.feedback).toBe(
      [
        '2 of 3 exit criteria failed (1 passed):',
        '1. `npx tsc --noEmit`: exit code 2\n\n```\nsrc/a.ts(1,1): error TS2304\n```',
        '2. `npm run e2e`: timed out (no output)',
      ].join('\n\n'),
    );
  });

  it('does not run the critic rules when criteria failed', () => {
    const decision = decide(result({ criteria: [fail], critic: { ran: false, verdict: undefined } }));
    expect(decision).toMatchObject({
      action: 'retry',
      reason: 'exit criteria failed: 1 of 1 (npx tsc --noEmit exited 2)',
    });
  });

  it('retries when the exit criteria were not run', () => {
    expect(decide(result({ ran: false, passed: false, criteria: [] }))).toMatchObject({
      action: 'retry',
      reason: 'exit criteria were not run',
    });
  });

  it.each([
    [
      'a low score',
      { score: 5, verdict: 'reject', issues: ['no test for []'] },
      'critic rejected 5/10 (min 7)',
    ],
    [
      'a low score the critic approved anyway',
      { score: 6, verdict: 'approve', issues: [] },
      'critic scored 6/10 (min 7)',
    ],
    [
      'a reject with a high score',
      { score: 9, verdict: 'reject', issues: ['wrong file'] },
      'critic rejected 9/10 (min 7)',
    ],
  ] as const)('retries on %s', (_name, verdict, reason) => {
    const decision = decide(result({ critic: { verdict: { ...verdict, issues: [...verdict.issues] } } }));
    expect(decision).toMatchObject({ action: 'retry', reason });
  });

  it("feeds the critic's score and issues back", () => {
    const decision = decide(
      result({
        critic: { verdict: { score: 5, verdict: 'reject', issues: ['no test for []', 'mutates input'] } },
      }),
    );
    expect(decision.action === 'retry' && decision.feedback).toBe(
      'The reviewer scored the work 5/10 (7 needed) and rejected the work. Issues:\n\n- no test for []\n- mutates input',
    );
  });

  it("honours the task's min score", () => {
    expect(decide(result({}), 1, task({ minScore: 9 }))).toMatchObject({
      action: 'retry',
      reason: 'critic scored 8/10 (min 9)',
    });
  });

  it('does not approve a critic task without a verdict', () => {
    expect(decide(result({ critic: { verdict: undefined, error: 'reviewer timed out' } }))).toMatchObject({
      action: 'retry',
      reason: 'critic gave no verdict: reviewer timed out',
    });
    expect(decide(result({ critic: { ran: false, verdict: undefined } }), 3)).toMatchObject({
      action: 'fail',
      reason: 'out of attempts (3/3): critic gave no verdict: it did not run',
    });
  });

  it.each([
    [1, 3, 'retry'],
    [2, 3, 'retry'],
    [3, 3, 'fail'],
    [1, 1, 'fail'],
    [4, 3, 'fail'],
  ])('attempt %i of %i → %s', (attempt, maxAttempts, action) => {
    expect(decide(result({ criteria: [fail] }), attempt, task({ maxAttempts })).action).toBe(action);
  });

  it('keeps the feedback when it fails', () => {
    const decision = decide(result({ criteria: [fail] }), 3);
    expect(decision.action === 'fail' && decision.feedback).toContain('npx tsc --noEmit');
  });
});

describe('decideAfterMerge', () => {
  const approve = { action: 'approve', score: 9 } as const;
  const conflict = {
    ok: false,
    conflict: 'CONFLICT (content): Merge conflict in src/a.ts',
    files: ['src/a.ts'],
  } as const;

  it('keeps an approval whose merge went through, and any decision that was not an approval', () => {
    expect(decideAfterMerge(approve, { ok: true }, task(), 1)).toBe(approve);
    const retry = { action: 'retry', feedback: 'f', delayMs: 1, reason: 'r' } as const;
    expect(decideAfterMerge(retry, conflict, task(), 1)).toBe(retry);
  });

  it('retries a conflict with the conflict as feedback, on the same capped backoff as any retry', () => {
    const decision = decideAfterMerge(approve, conflict, task({ maxAttempts: 20, backoffMs: 60_000 }), 10);
    expect(decision).toMatchObject({
      action: 'retry',
      reason: 'merge conflict in src/a.ts',
      delayMs: MAX_RETRY_DELAY_MS,
    });
    expect(decision.action === 'retry' && decision.feedback).toContain('Merge conflict in src/a.ts');
  });

  it('retries work holding paths git refuses, naming each path and why, not as a conflict', () => {
    const refused = {
      ok: false,
      conflict:
        '`.GIT/hooks/post-checkout`: git refuses this path (a part of it is `.git`, in upper or lower case)',
      files: ['.GIT/hooks/post-checkout'],
      refused: true,
    } as const;
    const decision = decideAfterMerge(approve, refused, task({ maxAttempts: 3 }), 1);
    expect(decision).toMatchObject({
      action: 'retry',
      reason: 'git refuses a path in the work: .GIT/hooks/post-checkout',
    });
    const feedback = decision.action === 'retry' ? decision.feedback : '';
    expect(feedback).toContain('- `.GIT/hooks/post-checkout`: git refuses this path');
    expect(feedback).not.toContain('conflicted');
  });

  it('fails a conflict on the last attempt, saying it ran out of attempts', () => {
    expect(decideAfterMerge(approve, conflict, task({ maxAttempts: 3 }), 3)).toMatchObject({
      action: 'fail',
      reason: 'out of attempts (3/3): merge conflict in src/a.ts',
    });
  });
});

describe('decideBudget', () => {
  const retry = {
    action: 'retry',
    feedback: 'criteria failed',
    delayMs: 5_000,
    reason: 'exit criteria failed',
  } as const;

  it.each([
    ['no budget', undefined, 100, 'retry'],
    ['budget left', 10, 9.99, 'retry'],
    ['budget spent', 10, 10, 'fail'],
    ['over budget', 10, 12.5, 'fail'],
  ] as const)('%s', (_name, budgetUsd, spentUsd, action) => {
    expect(decideBudget(retry, { budgetUsd, spentUsd }).action).toBe(action);
  });

  it('says what was spent and keeps the feedback; it never touches an approval', () => {
    expect(decideBudget(retry, { budgetUsd: 10, spentUsd: 12.5 })).toEqual({
      action: 'fail',
      feedback: 'criteria failed',
      reason: 'budget of $10 spent ($12.50); no new attempt',
    });
    const approve = { action: 'approve' } as const;
    expect(decideBudget(approve, { budgetUsd: 1, spentUsd: 2 })).toBe(approve);
  });
});

describe('settlePatch and describeDecision', () => {
  const withVerdict: CriticResult = {
    ...result({ criteria: [pass] }),
    ran: true,
    verdict: { score: 6, verdict: 'reject', issues: ['x'] },
  };

  it.each([
    [{ action: 'approve', score: 6 }, { score: 6, error: null, feedback: null }, 'approved (score 6)'],
    [
      { action: 'retry', feedback: 'fix x', delayMs: 5_000, reason: 'critic scored 6/10' },
      { score: 6, error: 'critic scored 6/10', feedback: 'fix x' },
      'retry in 5s: critic scored 6/10',
    ],
    [
      { action: 'fail', feedback: 'fix x', reason: 'out of attempts' },
      { score: 6, error: 'out of attempts' },
      'failed: out of attempts',
    ],
    [{ action: 'pause', reason: 'the agent needs input' }, { error: null }, 'paused: the agent needs input'],
    [{ action: 'cancel' }, { error: 'mission cancelled' }, 'cancelled'],
  ] as const)('%o', (decision, patch, sentence) => {
    expect(settlePatch(decision, withVerdict)).toMatchObject(patch);
    expect(describeDecision(decision)).toBe(sentence);
  });

  it('hands the run summary, outputs and findings to dependents on approval', () => {
    expect(settlePatch({ action: 'approve' }, withVerdict).handoff).toEqual({
      summary: withVerdict.verify.run.summary,
      outputs: withVerdict.verify.run.outputs ?? '',
      findings: withVerdict.verify.run.findings ?? '',
    });
  });
});

describe('retryDelayMs', () => {
  it.each([
    [5_000, 1, 5_000],
    [5_000, 2, 10_000],
    [5_000, 3, 20_000],
    [5_000, 10, MAX_RETRY_DELAY_MS],
    [0, 5, 0],
    [1_000, 0, 1_000],
  ])('backoff %i, attempt %i → %i', (backoff, attempt, delay) => {
    expect(retryDelayMs(backoff, attempt)).toBe(delay);
  });
});

describe('feedback formatting', () => {
  it('keeps only the tail of long output', () => {
    const tail = Array.from({ length: 100 }, (_, i) => `line ${i}`).join('\n');
    const text = formatCriteriaFeedback([{ command: 'x', exitCode: 1, timedOut: false, tail }]);
    expect(text).toContain('line 99');
    expect(text).not.toContain('line 69\n');
    expect(text).toContain('line 70');
  });

  it('fences output that holds a fence', () => {
    expect(
      formatCriteriaFeedback([{ command: 'x', exitCode: 1, timedOut: false, tail: '```\nin\n```' }]),
    ).toContain('````\n```\nin\n```\n````');
  });

  it('says when the critic listed nothing', () => {
    expect(formatCriticFeedback({ score: 6.5, verdict: 'approve', issues: [] }, 7)).toBe(
      'The reviewer scored the work 6.5/10 (7 needed) and did not approve the work. It listed no specific issues; review the change against the task.',
    );
  });
});

describe('decideGateJobFailed', () => {
  it('fails the task naming the gate, its tries and the last line of the cause', () => {
    const decision = decideGateJobFailed({
      cause: 'git update-ref refs/heads/flotilla/m: error\nfatal: cannot lock ref   \n\n',
      tries: 5,
      cancelled: false,
    });
    expect(decision).toEqual({
      action: 'fail',
      feedback: 'git update-ref refs/heads/flotilla/m: error\nfatal: cannot lock ref',
      reason: 'gate failed after 5 tries: fatal: cannot lock ref',
    });
  });

  it('says so when BullMQ recorded no error, and counts one try as one', () => {
    expect(decideGateJobFailed({ cause: '', tries: 1, cancelled: false })).toMatchObject({
      action: 'fail',
      reason: 'gate failed after 1 try: no error was recorded',
    });
  });

  it('clips a long cause to one readable line', () => {
    const decision = decideGateJobFailed({
      cause: `fatal: ${'x'.repeat(1_000)}`,
      tries: 5,
      cancelled: false,
    });
    expect(decision.action === 'fail' && decision.reason.length).toBeLessThanOrEqual(340);
  });

  it('cancels the task of a cancelled mission instead', () => {
    expect(decideGateJobFailed({ cause: 'fatal: x', tries: 5, cancelled: true })).toEqual({
      action: 'cancel',
    });
  });
});

describe('approve: human', () => {
  const human = task({ approval: { onTimeout: 'fail', timeoutMs: 3_600_000 } });
  const skipping = task({ approval: { onTimeout: 'skip', timeoutMs: 90_000 } });
  const at = '2026-12-07T12:00:00.000Z';

  it.each([
    [
      'an approval of a task that asks a person is held',
      { action: 'approve', score: 8 },
      human,
      { action: 'hold', score: 8 },
    ],
    [
      'an approval of any other task merges',
      { action: 'approve', score: 8 },
      task(),
      { action: 'approve', score: 8 },
    ],
    [
      'a retry is not held',
      { action: 'retry', feedback: 'f', delayMs: 1, reason: 'r' },
      human,
      { action: 'retry', feedback: 'f', delayMs: 1, reason: 'r' },
    ],
    ['a cancel is not held', { action: 'cancel' }, human, { action: 'cancel' }],
  ] as const)('%s', (_, decision, t, expected) => {
    expect(holdForPerson(decision, t)).toEqual(expected);
  });

  it.each([
    [
      'approved: merges with the score the critic gave',
      { verdict: 'approve', by: 'alice', at },
      human,
      1,
      { action: 'approve', score: 8 },
    ],
    [
      'rejected with attempts left: a retry whose feedback is the words',
      { verdict: 'reject', by: 'bob', reason: 'keep the old names', at },
      human,
      1,
      { action: 'retry', reason: 'rejected by bob: keep the old names', delayMs: 1_000 },
    ],
    [
      'rejected on the last attempt: fails',
      { verdict: 'reject', by: 'bob', reason: 'no', at },
      human,
      3,
      { action: 'fail', reason: 'out of attempts (3/3): rejected by bob: no' },
    ],
    [
      'rejected without words',
      { verdict: 'reject', by: 'bob', at },
      human,
      1,
      { reason: 'rejected by bob: no reason given' },
    ],
    [
      'timed out, fail chosen',
      { verdict: 'timeout', at },
      human,
      1,
      { action: 'fail', reason: 'no approval within 1h' },
    ],
    [
      'timed out, skip chosen',
      { verdict: 'timeout', at },
      skipping,
      1,
      { action: 'skip', reason: 'no approval within 1m30s' },
    ],
  ] as const)('%s', (_, verdict, t, attempt, expected) => {
    expect(decideHeld(verdict, result({}), { ...t, backoffMs: 1_000 }, attempt)).toMatchObject(expected);
  });

  it("feeds a rejection to the next prompt in the person's own words", () => {
    const decision = decideHeld(
      { verdict: 'reject', by: 'bob', reason: 'use snake_case', at },
      result({}),
      human,
      1,
    );
    expect(decision.action === 'retry' && decision.feedback).toContain(
      'bob rejected the work before it merged:\n\nuse snake_case',
    );
  });

  it('records who decided and how long the attempt waited', () => {
    expect(approvalRecord({ verdict: 'approve', by: 'alice', at }, '2026-12-07T11:58:30.000Z')).toEqual({
      verdict: 'approved',
      by: 'alice',
      at,
      waitedMs: 90_000,
    });
    expect(approvalRecord({ verdict: 'timeout', at }, null)).toEqual({
      verdict: 'timed out',
      by: null,
      at,
      waitedMs: 0,
    });
  });

  it('keeps the held results and clears them when it moves on', () => {
    const r = result({});
    expect(JSON.parse(String(settlePatch({ action: 'hold', score: 8 }, r).held))).toEqual(r);
    expect(settlePatch({ action: 'skip', reason: 'late' }, r)).toEqual({ error: 'late', held: null });
  });
});
