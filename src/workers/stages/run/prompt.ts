import type { ControlMode } from '../../../shared/capabilities.js';
import { codeBullets, joinParts } from '../../../shared/markdown.js';
import type { TaskSpec } from '../../../shared/mission.js';

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
  /**
   * True when this run resumes from a checkpoint: the previous run of the same attempt was
   * interrupted (its host stopped) and its work so far is in the checkout.
   */
  readonly interrupted?: boolean;
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

export const INTERRUPTED_TEXT = [
  '## Resumed After an Interruption',
  'The previous run of this task was interrupted before it finished. Its work so far, as of its last checkpoint, is already in your working directory as uncommitted changes. Look at what is there and continue the task from it instead of starting over.',
].join('\n\n');

export const NO_STDOUT = 'Do not write anything to stdout — write the full result to the file above.';

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
    input.interrupted ? INTERRUPTED_TEXT : '',
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
      ? `Writes outside these paths are reverted when you finish:\n\n${codeBullets(allowed)}`
      : '';
  switch (mode) {
    case 'autonomous':
      // No guidance in autonomous mode, but a hard write scope is still enforced, so say so.
      return reverted ? `## Write Scope\n\n${reverted}` : '';
    case 'guarded': {
      const files =
        task.files.length > 0
          ? `This task is expected to touch only these files:\n\n${codeBullets(task.files)}`
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
    codeBullets(task.exitCriteria),
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
