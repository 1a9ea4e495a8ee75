import { describe, expect, it } from 'vitest';
import type { GateDecision } from '../../../../src/shared/contracts.js';
import type { TaskSpec } from '../../../../src/shared/mission.js';
import {
  decideAfterMerge,
  formatConflictFeedback,
  type MergeOutcome,
} from '../../../../src/workers/stages/gate/decide.js';
import { taskSpec } from '../../../helpers/factories.js';

function task(overrides: Partial<TaskSpec> = {}): TaskSpec {
  return taskSpec({ exitCriteria: ['npm test'], ...overrides });
}

const approve: GateDecision = { action: 'approve', score: 8 };
const merged: MergeOutcome = { ok: true };
const conflict: MergeOutcome = {
  ok: false,
  conflict: 'CONFLICT (content): Merge conflict in src/stats.ts',
  files: ['src/stats.ts', 'test/stats.test.ts'],
};
const feedback = formatConflictFeedback(conflict.ok ? '' : conflict.conflict, [
  'src/stats.ts',
  'test/stats.test.ts',
]);

describe('decideAfterMerge', () => {
  it.each<[string, GateDecision, MergeOutcome, number, GateDecision]>([
    ['an approval whose merge went in stands', approve, merged, 1, approve],
    [
      'a conflict is a retry naming the files, with the backoff of any retry',
      approve,
      conflict,
      1,
      {
        action: 'retry',
        feedback,
        delayMs: 5_000,
        reason: 'merge conflict in src/stats.ts, test/stats.test.ts',
      },
    ],
    [
      'the second attempt backs off twice as long',
      approve,
      conflict,
      2,
      {
        action: 'retry',
        feedback,
        delayMs: 10_000,
        reason: 'merge conflict in src/stats.ts, test/stats.test.ts',
      },
    ],
    [
      'a conflict on the last attempt fails the task',
      approve,
      conflict,
      3,
      {
        action: 'fail',
        feedback,
        reason: 'out of attempts (3/3): merge conflict in src/stats.ts, test/stats.test.ts',
      },
    ],
    [
      'anything but an approval is left as it was (nothing was merged)',
      { action: 'cancel' },
      conflict,
      1,
      { action: 'cancel' },
    ],
  ])('%s', (_name, decision, merge, attempt, expected) => {
    expect(decideAfterMerge(decision, merge, task(), attempt)).toEqual(expected);
  });

  it('names at most ten files in the one-line reason; the feedback lists them all', () => {
    const files = Array.from({ length: 12 }, (_, i) => `f${i}.ts`);
    const decision = decideAfterMerge(approve, { ok: false, conflict: '', files }, task(), 1);
    expect(decision).toMatchObject({
      action: 'retry',
      reason:
        'merge conflict in f0.ts, f1.ts, f2.ts, f3.ts, f4.ts, f5.ts, f6.ts, f7.ts, f8.ts, f9.ts and 2 more',
    });
    if (decision.action === 'retry')
      for (const file of files) expect(decision.feedback).toContain(`\`${file}\``);
  });
});

describe('formatConflictFeedback', () => {
  it('lists the files, quotes git, and says where the next attempt starts', () => {
    expect(formatConflictFeedback('CONFLICT (content): Merge conflict in a.txt\n', ['a.txt'])).toBe(
      [
        'Your work passed its checks, but merging it into the integration branch conflicted with work another task integrated meanwhile, in these files:',
        '- `a.txt`',
        '```\nCONFLICT (content): Merge conflict in a.txt\n```',
        'This attempt starts from the current integration branch, which holds those changes: make your change on top of them.',
      ].join('\n\n'),
    );
  });
});
