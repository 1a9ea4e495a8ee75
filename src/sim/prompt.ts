import type { Role } from './args.js';

/**
 * What flotilla-sim reads from a dispatch prompt. Everything here is plain text matching: the
 * prompt is data, never instructions to run.
 */
export interface PromptFacts {
  /** From `When you complete this task, write your result to: <path>`; absent when the prompt has none. */
  readonly resultPath?: string;
  /** The result file's name without `-RESULT.md`: flotilla's `{task-id}`. */
  readonly dispatchTaskId?: string;
  /** The task section (or the whole prompt when it has no `## Task` heading). */
  readonly task: string;
  /** The body of the first ```sim block of the task section. */
  readonly simSource?: string;
  /** The attempt this run is (builder) or reviews (reviewer), 1-based. */
  readonly attempt: number;
  readonly attemptSource: 'retry-heading' | 'attempt-line' | 'task-id' | 'default';
  /** The text under an answers/continuation heading, when this run continues a needs_input pause. */
  readonly answers?: string;
}

const RESULT_LINE = /^[ \t]*When you complete this task, write your result to:[ \t]*(.+?)[ \t]*$/m;
/** Adapters may bring their own `result_instruction`, e.g. "Write your complete output to {result_path} …". */
const RESULT_FALLBACK =
  /\bwrite your (?:complete )?(?:result|output) to:?[ \t]+`?([^\s`]+?)`?[.,;]?(?:\s|$)/i;
const TASK_HEADING = /^##[ \t]+Task\b.*$/m;
/** Level-2 headings flotilla puts after the task description (builder and critic prompts). */
const TASK_END =
  /^##[ \t]+(?:Result Instructions|(?:⚠️[ \t]*)?PREVIOUS ATTEMPT FAILED|Continuation|Exit Criteria Results|Diff|How to Review)\b/m;
const RETRY_HEADING =
  /^#{1,6}[ \t]*(?:⚠️[ \t]*)?PREVIOUS ATTEMPT FAILED[ \t]*\(attempt[ \t]*(\d+)[ \t]*\/[ \t]*\d+[ \t]*\)/gim;
/** `Attempt: 2`, also written `**Attempt**: 2`. */
const ATTEMPT_LINE = /^[ \t]*(?:\*\*)?Attempt(?:\*\*)?:(?:\*\*)?[ \t]*(\d+)\b/m;
const TASK_ID_ATTEMPT = /-a(\d+)(?=$|[-_.])/g;
const CONTINUATION_HEADING = /^##[ \t]+Continuation\b[^\n]*$/gm;

export function readPromptFacts(prompt: string, role: Role): PromptFacts {
  const text = prompt.replace(/\r\n/g, '\n');
  const resultPath = findResultPath(text);
  const dispatchTaskId = resultPath ? dispatchTaskIdOf(resultPath) : undefined;
  const task = taskSection(text);
  const { attempt, attemptSource } = findAttempt(text, role, dispatchTaskId);
  return {
    resultPath,
    dispatchTaskId,
    task,
    simSource: findSimBlock(task),
    attempt,
    attemptSource,
    answers: findAnswers(text),
  };
}

export function findResultPath(text: string): string | undefined {
  const line = RESULT_LINE.exec(text)?.[1] ?? RESULT_FALLBACK.exec(text)?.[1];
  if (!line) return undefined;
  const path = line.replace(/^[`'"]+|[`'"]+$/g, '').trim();
  return path.length > 0 ? path : undefined;
}

export function dispatchTaskIdOf(resultPath: string): string {
  const base = resultPath.split(/[\\/]/).pop() ?? resultPath;
  return base.replace(/-RESULT\.md$/i, '').replace(/\.[^.]+$/, '');
}

/**
 * The task description: from the `## Task` heading to the result instructions or the retry block.
 * Restricting the search to it means a ```sim fence that shows up in handoff context or in a
 * failing criterion's output is never mistaken for the task's own.
 */
export function taskSection(text: string): string {
  const heading = TASK_HEADING.exec(text);
  if (!heading) return text;
  const rest = text.slice(heading.index + heading[0].length);
  const end = TASK_END.exec(rest);
  return end ? rest.slice(0, end.index) : rest;
}

/** The body of the first fenced block whose info string is `sim`, with its indentation removed. */
export function findSimBlock(text: string): string | undefined {
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^([ \t]*)(`{3,}|~{3,})[ \t]*sim[ \t]*$/.exec(lines[i] ?? '');
    if (!open) continue;
    const indent = open[1] ?? '';
    const fence = open[2] ?? '```';
    const body: string[] = [];
    for (let j = i + 1; j < lines.length; j++) {
      const line = lines[j] ?? '';
      const close = /^[ \t]*(`{3,}|~{3,})[ \t]*$/.exec(line)?.[1];
      if (close && close[0] === fence[0] && close.length >= fence.length) return body.join('\n');
      body.push(line.startsWith(indent) ? line.slice(indent.length) : line.trimStart());
    }
    return body.join('\n');
  }
  return undefined;
}

/**
 * A builder is attempt n+1 after the highest `PREVIOUS ATTEMPT FAILED (attempt n/max)` heading. A
 * reviewer reviews the attempt named by the `Attempt: n` line of the critic prompt. Either falls
 * back to the other's signal, then to the `-a<n>` of flotilla's dispatch task id
 * (`multiply-a2`, `power-a1-critic`), then to 1.
 */
export function findAttempt(
  text: string,
  role: Role,
  dispatchTaskId?: string,
): { attempt: number; attemptSource: PromptFacts['attemptSource'] } {
  let failed = 0;
  for (const match of text.matchAll(RETRY_HEADING)) failed = Math.max(failed, Number(match[1]));
  const fromHeading = failed > 0 ? failed + 1 : 0;
  const fromLine = Number(ATTEMPT_LINE.exec(text)?.[1] ?? 0);
  const fromTaskId = Number([...(dispatchTaskId ?? '').matchAll(TASK_ID_ATTEMPT)].pop()?.[1] ?? 0);
  const signals: Array<[PromptFacts['attemptSource'], number]> =
    role === 'reviewer'
      ? [
          ['attempt-line', fromLine],
          ['retry-heading', fromHeading],
          ['task-id', fromTaskId],
        ]
      : [
          ['retry-heading', fromHeading],
          ['attempt-line', fromLine],
          ['task-id', fromTaskId],
        ];
  for (const [source, value] of signals) if (value > 0) return { attempt: value, attemptSource: source };
  return { attempt: 1, attemptSource: 'default' };
}

/**
 * The answers of a task resumed after needs_input: flotilla's `## Continuation` section, read from
 * its `### Answers` sub-heading to the next level-2 heading. Requiring both headings keeps a task
 * description that merely has a "Continuation" heading from counting as answered.
 */
export function findAnswers(text: string): string | undefined {
  for (const heading of text.matchAll(CONTINUATION_HEADING)) {
    const rest = text.slice((heading.index ?? 0) + heading[0].length);
    const end = /^##[ \t]/m.exec(rest);
    const section = end ? rest.slice(0, end.index) : rest;
    const answers = /^###[ \t]+Answers\b[^\n]*$/m.exec(section);
    if (!answers) continue;
    const body = section.slice(answers.index + answers[0].length).trim();
    return body.length > 0 ? body : '(answered)';
  }
  return undefined;
}
