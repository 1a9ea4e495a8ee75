import type { Adapter, PROMPT_DELIVERIES } from '../../shared/adapter.js';
import { splitFlags } from '../../shared/adapter.js';
import type { ControlMode, ModelTier } from '../../shared/capabilities.js';
import type { CriterionResult } from '../../shared/contracts.js';
import type { TaskSpec } from '../../shared/mission.js';

/**
 * The prompt a CLI receives, in the order and under the headings of cli-dispatch's template, and
 * the argument array that delivers it. Everything here is text in, text out: the runner writes the
 * prompt file and starts the process.
 */

export interface HandoffEntry {
  readonly taskId: string;
  readonly title: string;
  readonly summary: string;
  readonly outputs: string;
  readonly findings: string;
}

export interface PromptInput {
  /** The whole agents/<id>.md file; empty when the task names no agent. */
  readonly personality: string;
  readonly missionGoal: string;
  readonly task: TaskSpec;
  /** One entry per approved dependency, in depends_on order. */
  readonly handoff: readonly HandoffEntry[];
  readonly controlMode: ControlMode;
  /** The adapter's result_path with {task-id} already resolved. */
  readonly resultPath: string;
  /** `attempt` is the number of the attempt that failed; `feedback` is what the gate wrote. */
  readonly retry?: { readonly attempt: number; readonly maxAttempts: number; readonly feedback: string };
  readonly continuation?: { readonly questions: string; readonly answers: string };
}

export const NO_HANDOFF = 'No handoff context available from prior waves. Proceed with task instructions.';

export const RESULT_SECTIONS_TEXT = [
  '- **Status**: Complete | Complete with Warnings | Failed',
  '- **Summary**: What you did (2-4 sentences)',
  '- **Outputs**: List of files created or modified (or "None")',
  '- **Findings**: Key findings, decisions, or recommendations',
  '- **Issues**: Any problems encountered (or "None")',
  '- **Errors**: Error details if failed (or "None")',
].join('\n');

const NO_STDOUT = 'Do not write anything to stdout — write the full result to the file above.';

export function assemblePrompt(input: PromptInput): string {
  const { task } = input;
  const parts = [
    ...personalityParts(input.personality),
    '# Dispatch Task',
    'You are executing a task as part of flotilla, dispatched to an external CLI.',
    handoffText(task, input.handoff),
    controlScopeText(input.controlMode, task),
    taskText(input.missionGoal, task, input.controlMode),
    input.retry ? retryText(input.retry) : '',
    input.continuation ? continuationText(input.continuation) : '',
    resultInstruction(input.resultPath),
  ];
  return joinParts(parts);
}

/** An empty personality leaves out the separator too: a prompt file starting with `---` reads as front matter. */
function personalityParts(personality: string): string[] {
  const text = personality.trim();
  return text ? [text, '---'] : [];
}

/** No dependencies, no section; dependencies that left nothing get the seed's explicit line. */
function handoffText(task: TaskSpec, handoff: readonly HandoffEntry[]): string {
  const blocks = handoff
    .map((entry) => {
      const fields = [
        ['Summary', entry.summary],
        ['Outputs', entry.outputs],
        ['Findings', entry.findings],
      ].filter(([, value]) => value?.trim());
      if (fields.length === 0) return '';
      const lines = fields.map(([name, value]) => `**${name}**: ${value?.trim()}`);
      return `### From ${entry.title} (${entry.taskId})\n\n${lines.join('\n\n')}`;
    })
    .filter(Boolean);
  if (blocks.length === 0 && task.dependsOn.length === 0) return '';
  const body = blocks.length > 0 ? blocks.join('\n\n') : NO_HANDOFF;
  return `## Handoff Context from Prior Wave\n\n${body}`;
}

export function controlScopeText(mode: ControlMode, task: Pick<TaskSpec, 'files' | 'allowedPaths'>): string {
  const allowed = task.allowedPaths ?? [];
  const reverted =
    allowed.length > 0
      ? `Writes outside these paths are reverted when you finish:\n\n${bullets(allowed)}`
      : '';
  switch (mode) {
    case 'autonomous':
      // No guidance in autonomous mode, but a hard write scope is still enforced, so say so.
      return reverted ? `## Write Scope\n\n${reverted}` : '';
    case 'guarded': {
      const files =
        task.files.length > 0
          ? `This task is expected to touch only these files:\n\n${bullets(task.files)}`
          : '';
      const lists = [files, reverted].filter(Boolean).join('\n\n');
      const advice = lists
        ? 'Stay within them. If the task cannot be done without changing anything else, leave it unchanged and describe what you would change, and why, under **Issues** in your result.'
        : 'No file list was given for this task. Change only what the task needs, and name under **Issues** in your result anything you had to change beyond it.';
      return `## File Scope Guidance\n\n${lists ? `${lists}\n\n` : ''}${advice}`;
    }
    case 'surgical':
      return [
        '## Read-Only Constraint',
        'This is an assessment, not an implementation. Do not create, modify or delete any file in the working directory: every change is reverted when you finish. Read the code and run read-only commands where they help.',
        'Write your assessment, with concrete recommendations (which file, what to change, why), under **Findings** in your result. The result file named below is the only file you write.',
      ].join('\n\n');
    case 'advisory':
      return [
        '## Advisory Mode',
        'You advise; someone else makes the changes. Do not create, modify or delete any file in the working directory: every change is reverted when you finish.',
        'For each change you recommend, say which file, what to change and the reason for it, under **Findings** in your result. The result file named below is the only file you write.',
      ].join('\n\n');
  }
}

function taskText(missionGoal: string, task: TaskSpec, mode: ControlMode): string {
  const facts = [
    task.languages.length > 0 ? `**Languages**: ${task.languages.join(', ')}` : '',
    task.frameworks.length > 0 ? `**Frameworks**: ${task.frameworks.join(', ')}` : '',
  ].filter(Boolean);
  const description =
    task.description.trim() || 'No description was given: the title and the exit criteria define the task.';
  return [
    '## Task',
    `**Mission goal**: ${missionGoal.trim()}`,
    `### ${task.title} (${task.id})`,
    description,
    ...(facts.length > 0 ? [facts.join('\n')] : []),
    '### Working Directory',
    mode === 'surgical' || mode === 'advisory'
      ? 'Your current directory is a git checkout of the mission repository on a branch made for this attempt; it already holds the approved work of the tasks this one depends on. Read it as you need. Do not commit, push or switch branches, and do not start servers or other long-running processes.'
      : 'Your current directory is a git checkout of the mission repository on a branch made for this attempt; it already holds the approved work of the tasks this one depends on. Work only inside it. flotilla commits your changes when you finish, so do not commit, push or switch branches yourself, and do not start servers or other long-running processes.',
    '### Exit Criteria',
    'When you finish, flotilla runs each of these shell commands in the working directory; every one must exit with status 0 for the task to pass:',
    bullets(task.exitCriteria),
  ].join('\n\n');
}

function retryText(retry: NonNullable<PromptInput['retry']>): string {
  return [
    `## ⚠️ PREVIOUS ATTEMPT FAILED (attempt ${retry.attempt}/${retry.maxAttempts})`,
    retry.feedback.trim(),
    'Fix these issues.',
  ].join('\n\n');
}

function continuationText(continuation: NonNullable<PromptInput['continuation']>): string {
  return [
    '## Continuation',
    'You stopped earlier to ask questions. Here they are with the answers. Continue the task from where you stopped and do not ask them again.',
    '### Your Questions',
    continuation.questions.trim(),
    '### Answers',
    continuation.answers.trim(),
  ].join('\n\n');
}

/**
 * The continuation block's two texts from every answered round. One round reads as the questions
 * and the answer; with two, each line is labelled with its round so an answer stays with the
 * questions it answers (agent-dispatch allows two rounds before a person takes over).
 */
export function continuationInput(
  asked: readonly string[],
  answers: readonly string[],
): NonNullable<PromptInput['continuation']> {
  if (answers.length <= 1) return { questions: asked[0] ?? '[]', answers: answers[0] ?? '' };
  const label = (items: readonly string[]) =>
    answers.map((_, index) => `Round ${index + 1}: ${items[index] ?? '(not recorded)'}`).join('\n');
  return { questions: label(asked), answers: label(answers) };
}

function resultInstruction(resultPath: string): string {
  return [
    '## Result Instructions',
    `When you complete this task, write your result to: ${resultPath}`,
    `Your result file MUST contain these sections:\n${RESULT_SECTIONS_TEXT}`,
    NO_STDOUT,
    // Described in prose on purpose: a literal example block would be parsed as a real one if a
    // CLI echoed its prompt to stdout.
    'Optionally, end the result file with an agent-result block: a line `<agent-result>`, then `<status>` (one of completed, needs_input, blocked), `<outputs>` (the paths you created or changed, comma-separated) and `<summary>` (one or two sentences), each closed by its end tag, then a line `</agent-result>`. If you cannot go on without an answer from a person, use the status needs_input and add `<questions>` (a JSON list such as [{"id": "Q1", "text": "…", "options": ["…"]}]), `<completed-steps>` and `<resume-guidance>`: the task pauses and resumes with the answers.',
  ].join('\n\n');
}

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

/** CataForge's agent tiers name the same three levels differently. */
export const TIER_ALIASES: Readonly<Record<string, ModelTier>> = {
  light: 'check',
  standard: 'execution',
  heavy: 'planning',
};

const MODEL_KEYS = {
  planning: 'model_planning',
  execution: 'model_execution',
  check: 'model_check',
} as const;

export function resolveModel(adapter: Pick<Adapter, 'models' | 'config'>, tier?: string): string | undefined {
  const normalized = tier?.trim().toLowerCase() ?? '';
  const level: ModelTier =
    normalized === 'planning' || normalized === 'execution' || normalized === 'check'
      ? normalized
      : (TIER_ALIASES[normalized] ?? 'execution');
  return adapter.models[level] ?? adapter.config[MODEL_KEYS[level]];
}

/** Linux caps one argument at MAX_ARG_STRLEN (128 KiB, its terminating NUL included). */
export const MAX_ARG_BYTES = 128 * 1024;

export type PromptDelivery = (typeof PROMPT_DELIVERIES)[number];

export interface Invocation {
  readonly command: string;
  readonly args: string[];
  readonly stdin?: string;
  /** How the prompt actually goes; differs from the adapter's when a large prompt fell back to stdin. */
  readonly delivery: PromptDelivery;
  readonly note?: string;
}

export interface InvocationInput {
  readonly promptPath: string;
  readonly promptText: string;
  readonly model?: string;
  readonly maxArgBytes?: number;
}

export function buildInvocation(adapter: Pick<Adapter, 'config'>, input: InvocationInput): Invocation {
  const { config } = adapter;
  const [command = '', ...commandArgs] = splitFlags(config.invoke_command);
  const flags = [...commandArgs, ...substituteModel(config.invoke_flags, input.model)];
  const promptFlag = config.prompt_flag ?? '';
  switch (config.prompt_delivery) {
    case 'file_path':
      return {
        command,
        args: [...flags, ...flagWithValue(promptFlag, input.promptPath)],
        delivery: 'file_path',
      };
    case 'stdin_pipe':
      return { command, args: flags, stdin: input.promptText, delivery: 'stdin_pipe' };
    case 'content_flag': {
      const bytes = Buffer.byteLength(input.promptText, 'utf8');
      const max = input.maxArgBytes ?? MAX_ARG_BYTES;
      if (bytes < max) {
        return {
          command,
          args: [...flags, ...flagWithValue(promptFlag, input.promptText)],
          delivery: 'content_flag',
        };
      }
      return {
        command,
        args: flags,
        stdin: input.promptText,
        delivery: 'stdin_pipe',
        note: `prompt of ${bytes} bytes is more than one argument may hold (${max}); sent on stdin instead of ${promptFlag}`,
      };
    }
  }
}

/** A `{model}` flag pair is dropped when no model is known, so the CLI falls back to its default. */
function substituteModel(flags: readonly string[], model: string | undefined): string[] {
  const out: string[] = [];
  flags.forEach((flag, index) => {
    if (!flag.includes('{model}')) {
      out.push(flag);
    } else if (model) {
      out.push(flag.replaceAll('{model}', model));
    } else if (
      flag.trim() === '{model}' &&
      index > 0 &&
      flags[index - 1]?.startsWith('-') &&
      out.at(-1) === flags[index - 1]
    ) {
      out.pop();
    }
  });
  return out;
}

/** `--prompt-file=` style flags take their value in the same argument. */
function flagWithValue(flag: string, value: string): string[] {
  if (!flag) return [value];
  return flag.endsWith('=') ? [`${flag}${value}`] : [flag, value];
}

/** cli-dispatch's rule of thumb: about four characters to a token. */
export function promptTooLarge(adapter: Pick<Adapter, 'config' | 'maxPromptSize'>, text: string): boolean {
  const max = adapter.maxPromptSize ?? adapter.config.max_prompt_size;
  return max !== undefined && text.length / 4 > max;
}

function joinParts(parts: readonly string[]): string {
  return `${parts.filter((part) => part.trim()).join('\n\n')}\n`;
}

function bullets(items: readonly string[]): string {
  return items.map((item) => `- ${inlineCode(item)}`).join('\n');
}

/** Inline code that survives backticks inside the text. */
function inlineCode(text: string): string {
  const longest = Math.max(0, ...[...text.matchAll(/`+/g)].map((match) => match[0].length));
  const ticks = '`'.repeat(longest + 1);
  return longest > 0 ? `${ticks} ${text} ${ticks}` : `${ticks}${text}${ticks}`;
}

/** A fence longer than any backtick run inside, so diffs holding Markdown cannot close it early. */
function fence(text: string, lang: string): string {
  const longest = Math.max(0, ...[...text.matchAll(/`{3,}/g)].map((match) => match[0].length));
  const ticks = '`'.repeat(Math.max(3, longest + 1));
  return `${ticks}${lang}\n${text}\n${ticks}`;
}
