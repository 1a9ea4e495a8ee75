import type { CriterionResult } from '../../../shared/contracts.js';
import { fence, inlineCode, joinParts } from '../../../shared/markdown.js';
import type { TaskSpec } from '../../../shared/mission.js';
import { NO_STDOUT, RESULT_SECTIONS_TEXT } from '../run/prompt.js';

/**
 * The reviewer's prompt: the task, the criteria results and the diff, and the JSON verdict it must
 * write. Text in, text out.
 */

/** Diffs past this many characters are cut, so the reviewer's prompt stays within every CLI's limits. */
export const MAX_REVIEW_DIFF_CHARS = 60_000;

export interface ReviewPromptInput {
  readonly task: TaskSpec;
  readonly diff: string;
  readonly criteria: readonly CriterionResult[];
  readonly resultPath: string;
  readonly minScore: number;
  /** The attempt under review, named in the heading when given. */
  readonly attempt?: number;
}

export function buildReviewPrompt(input: ReviewPromptInput): string {
  const { task, criteria } = input;
  const failed = criteria.filter((criterion) => criterion.exitCode !== 0 || criterion.timedOut).length;
  const criteriaSummary =
    criteria.length === 0
      ? 'No exit criteria were run.'
      : failed === 0
        ? `All ${criteria.length} exit criteria passed.`
        : `${failed} of ${criteria.length} exit criteria failed.`;
  const criteriaList = criteria.map((criterion) => {
    const outcome = criterion.timedOut
      ? 'timed out'
      : criterion.exitCode === 0
        ? 'passed (exit code 0)'
        : `failed (exit code ${criterion.exitCode ?? 'none'})`;
    const tail = criterion.tail.trim() ? `\n\n${fence(criterion.tail.trimEnd(), '')}` : '';
    return `- ${inlineCode(criterion.command)}: ${outcome}${tail}`;
  });
  const { text: diff, note } = truncateDiff(input.diff);
  return joinParts([
    '# Review Task',
    "You are reviewing another agent's work as part of flotilla. You did not write it; judge it only on what is in front of you.",
    '## Task Under Review',
    `### ${task.title} (${task.id}${input.attempt ? `, attempt ${input.attempt}` : ''})`,
    task.description.trim() || 'No description was given: the title and the exit criteria define the task.',
    '## Exit Criteria Results',
    criteriaSummary,
    criteriaList.join('\n\n'),
    '## Diff',
    diff.trim() ? fence(diff.trimEnd(), 'diff') : 'The attempt changed no files.',
    note,
    '## How to Review',
    `Do not create, modify or delete any file other than the result file named below. Read the diff and, where it helps, the files in the working directory. Check that the change does what the task asks, is correct, handles edge cases, is tested, and touches nothing it should not. Score it from 1 to 10: ${input.minScore} or more approves, less rejects. List every issue the author must fix, most important first, each specific enough to act on (which file, what is wrong, what to do).`,
    '## Result Instructions',
    `When you complete this task, write your result to: ${input.resultPath}`,
    `Your result file MUST contain these sections:\n${RESULT_SECTIONS_TEXT}`,
    'Your result file MUST also contain your verdict as one JSON object in a fenced json block, where N is your score from 1 to 10 and issues is a list of strings (empty when there are none):',
    '```json\n{"score": N, "verdict": "approve"|"reject", "issues": [...]}\n```',
    NO_STDOUT,
  ]);
}

function truncateDiff(diff: string): { text: string; note: string } {
  if (diff.length <= MAX_REVIEW_DIFF_CHARS) return { text: diff, note: '' };
  const cut = diff.lastIndexOf('\n', MAX_REVIEW_DIFF_CHARS);
  const text = diff.slice(0, cut > 0 ? cut : MAX_REVIEW_DIFF_CHARS);
  return {
    text,
    note: `Note: the diff is truncated; the first ${text.length} of its ${diff.length} characters are shown. Judge the rest from the files in the working directory.`,
  };
}
