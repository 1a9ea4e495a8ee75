import { CAPABILITIES, CONTROL_MODES, TASK_KINDS } from '../shared/capabilities.js';
import { fence } from '../shared/markdown.js';
import { defaultsSchema, missionSchema, taskSchema } from '../shared/mission.js';
import { MAX_PLAN_TASKS, MIN_PLAN_TASKS } from './plan-rules.js';

/**
 * `flotilla plan` as text in, text out: the prompt that asks a planning CLI for a mission file, the
 * retry prompt that hands it the validator's problems, reading the mission YAML back out of its
 * answer, and the decomposition rules the mission schema does not enforce. The rules the prompt
 * states and the rules `checkPlanRules` checks live in one file so they cannot drift apart.
 */

export interface PlanPromptInput {
  readonly goal: string;
  /** What the planner's working directory is: the workspace to read, or an empty scratch folder. */
  readonly workspace:
    | { readonly kind: 'existing'; readonly path: string }
    | { readonly kind: 'new'; readonly path: string }
    | { readonly kind: 'none' };
  /** The value the mission's `workspace:` must hold (relative to the mission file), when flotilla knows it. */
  readonly workspaceValue?: string;
  /** Where the CLI writes its answer, relative to its working directory. */
  readonly resultPath: string;
  readonly retry?: PlanRetry;
}

export interface PlanRetry {
  /** The round that failed, 1-based, and how many rounds there are in all. */
  readonly round: number;
  readonly maxRounds: number;
  /** The validator's problems, one `file:line: path: message` line each, verbatim. */
  readonly problems: readonly string[];
  /** The mission file the planner wrote last round, as flotilla validated it. */
  readonly previous?: string;
}

export function buildPlanPrompt(input: PlanPromptInput): string {
  const parts = [
    '# Mission Planning Task',
    'You are planning a mission for flotilla. flotilla runs each task of a mission on an AI coding-agent CLI, in a git checkout of the workspace, and accepts a task only when every one of its exit criteria (shell commands) exits with status 0. Your job is to break the goal below into such tasks and write them as one mission file. Do not carry out the goal yourself, and do not create, change or delete any file other than the result file named at the end.',
    '## Goal',
    input.goal.trim(),
    workspaceText(input),
    '## Decomposition Rules',
    RULES_TEXT,
    '## Mission File Format',
    formatText(input),
    input.retry ? retryText(input.retry) : '',
    '## Result Instructions',
    `When you complete this task, write your result to: ${input.resultPath}`,
    'The result file must hold only the mission file: plain YAML, or one fenced block with the info string `yaml` holding the whole mission. Nothing outside that block is read. Do not write anything to stdout — write the full result to the file above.',
  ];
  return `${parts.filter((part) => part.trim()).join('\n\n')}\n`;
}

function workspaceText(input: PlanPromptInput): string {
  const { workspace } = input;
  const where =
    workspace.kind === 'existing'
      ? `Your current directory is the workspace, ${workspace.path}. Read it (files, package.json, tests, build scripts) so that task descriptions and exit criteria name real files and commands; do not change it.`
      : workspace.kind === 'new'
        ? `The workspace, ${workspace.path}, does not exist yet: flotilla creates it as an empty git repository, so the first tasks start from nothing.`
        : 'No workspace was given: the mission starts from an empty git repository, so the first tasks start from nothing.';
  const value = input.workspaceValue
    ? `Set \`workspace: ${input.workspaceValue}\` in the mission file.`
    : 'Set `workspace:` to a short new folder name relative to the mission file, such as `./stats-module`; flotilla creates it.';
  return [
    '## Workspace',
    where,
    'Every task runs in a checkout of the workspace, holding the approved work of the tasks it depends on. Paths in descriptions and exit criteria are relative to the workspace root, where the exit criteria run.',
    value,
  ].join('\n\n');
}

const RULES_TEXT = [
  `- Between ${MIN_PLAN_TASKS} and ${MAX_PLAN_TASKS} tasks. If the goal needs more, it is too big for one mission: plan the first complete, verifiable part of it.`,
  '- Every task has `exit_criteria`: one or more shell commands, run with `bash -c` in the workspace root, that exit with status 0 only when the task is done. For example:',
  '  - `test -f src/stats.ts` — the file exists',
  '  - `grep -q "export function mean" src/stats.ts` — the file holds the expected content',
  '  - `test -s docs/stats.md` — the file is not empty',
  '  - `npx tsc --noEmit` — the TypeScript compiles',
  '  - `npm test` — the tests pass',
  '- No vague criteria such as "code is clean" or "works well": every criterion is a command a machine runs. A command that always succeeds (`wc -c < file`, `echo ok`, `ls`) checks nothing.',
  '- Exit criteria finish within a minute, need no network and no input, and never start a server or another long-running process.',
  '- Include a final verification task of `kind: review` that depends on every coding task (directly or through other tasks), with exit criteria that build the project and run its whole test suite.',
  '- A coding task says in its description which files to create or change and what they must hold, and names them in `files`.',
  '- Task ids are unique, lower-case letters, digits, `-` and `_`, starting with a letter or a digit (`[a-z0-9][a-z0-9_-]*`).',
  '- `depends_on` lists the ids of the tasks that must be finished first; no cycles. Tasks that do not depend on each other run at the same time on different machines, so add only dependencies that are real, and do not let two such tasks change the same file.',
].join('\n');

/**
 * One line per field a person would tell a planner. The Record types make the compiler demand a
 * hint for every field of the schema, so a field added to mission.ts cannot go missing here.
 */
const MISSION_HINTS: Record<keyof typeof missionSchema.shape, string> = {
  goal: 'the goal, in one sentence',
  workspace: 'the workspace folder, relative to the mission file (see Workspace above)',
  base: 'the git branch to start from; leave out to use the repository HEAD',
  defaults: 'settings for every task (below); leave out unless the goal needs other values',
  setup:
    'commands that make a checkout ready before the agent and the criteria, like ["npm ci"]; only if the criteria need them',
  setup_inputs: 'files whose change re-runs setup; leave out (the usual lockfiles)',
  notify: 'webhooks; leave out',
  tasks: `the list of ${MIN_PLAN_TASKS} to ${MAX_PLAN_TASKS} tasks`,
  on_finish: 'a command run when the mission ends; leave out',
  deliver:
    'where the finished branch goes (a push, a pull request); leave out: the person who runs the mission decides',
};

const DEFAULTS_HINTS: Record<keyof typeof defaultsSchema.shape, string> = {
  max_attempts: 'attempts per task before it fails (default 3)',
  timeout: 'time limit of one attempt, like 10m (default 10m)',
  min_score: "the critic's score from 0 to 10 that approves a coding task (default 7)",
  control_mode: `how freely the agent may change files: ${CONTROL_MODES.join(', ')} (default guarded)`,
  backoff: 'pause before a retry, like 5s (default 5s)',
  checkpoint_interval:
    "how often a running agent's work is saved so a crashed machine loses little, like 2m, or off (default 2m); leave out",
  budget_usd: 'a spending limit in US dollars; leave out',
  escalate:
    'what a retry changes after a failure: [tier] (a stronger model), [cli] (another CLI) or both; leave out',
  critic: 'false turns the independent review off for every task; leave out (coding tasks are reviewed)',
  kind: 'the kind of every task that gives none; leave out',
  cli: 'pin every task to one agent CLI; leave out',
  allowed_paths: 'folders every task may write, like [src/, test/]; leave out unless the goal limits them',
  setup: 'the same as the top-level setup; leave out',
  setup_inputs: 'leave out',
  requires: 'what every machine must have ({ os: [linux], tools: [docker] }); leave out',
  approve: "human holds every task's approved work for a person before it merges; leave out (auto)",
  approve_timeout: 'how long a held task waits for a person, like 24h; leave out',
  on_approve_timeout: 'fail or skip a task whose approval did not come in time; leave out',
};

const TASK_HINTS: Record<keyof typeof taskSchema.shape, string> = {
  id: 'unique id, `[a-z0-9][a-z0-9_-]*`',
  title: 'a short imperative title',
  description:
    'what to do, which files to create or change, and what done looks like; the agent sees nothing else',
  capability: `what the task needs, which picks the agent CLI: one of ${CAPABILITIES.join(', ')} (default from kind)`,
  task_type: 'another name for capability; give one of the two, not both',
  kind: `one of ${TASK_KINDS.join(', ')} (default coding)`,
  division: 'leave out',
  languages: 'programming languages involved, like [typescript]',
  frameworks: 'frameworks involved, like [vitest]',
  agent: 'leave out',
  depends_on: 'ids of the tasks that must be finished first (default [])',
  exit_criteria: 'shell commands that all exit 0 when the task is done',
  allowed_paths: 'paths the task may write (folders end with /); changes elsewhere are reverted',
  files: 'the files the task is expected to change',
  critic: 'whether a second agent reviews the work (default true for coding)',
  cli: 'leave out',
  setup: "this task's own setup commands, replacing the mission's; leave out",
  setup_inputs: 'leave out',
  requires:
    "what the task's machine must have, like { os: [linux], tools: ['node>=20'] }; leave out unless the goal names a platform",
  control_mode: `overrides defaults.control_mode: ${CONTROL_MODES.join(', ')}`,
  max_attempts: 'overrides defaults.max_attempts',
  timeout: 'overrides defaults.timeout',
  min_score: 'overrides defaults.min_score',
  escalate: 'overrides defaults.escalate',
  approve: 'human holds the task for a person before it merges; leave out unless the goal asks for it',
  approve_timeout: 'leave out',
  on_approve_timeout: 'leave out',
};

interface FieldShape {
  safeParse(value: unknown): { success: boolean };
}

/** Required means the schema rejects the field's absence; read from zod, not written by hand. */
function fieldList(
  shape: Readonly<Record<string, FieldShape>>,
  hints: Readonly<Record<string, string>>,
): string {
  return Object.entries(shape)
    .map(([name, field]) => {
      const required = field.safeParse(undefined).success ? '' : ' (required)';
      return `- \`${name}\`${required}: ${hints[name] ?? ''}`;
    })
    .join('\n');
}

function formatText(input: PlanPromptInput): string {
  const workspace = input.workspaceValue ?? './stats-module';
  const example = [
    'goal: <the goal, in one sentence>',
    `workspace: ${workspace}`,
    'tasks:',
    '  - id: <task-id>',
    '    title: <short title>',
    '    description: <what to do, which files, what done looks like>',
    '    kind: coding',
    '    capability: code_implementation',
    '    files: [<path>]',
    '    depends_on: []',
    '    exit_criteria:',
    '      - <shell command>',
    '  - id: verify',
    '    title: Verify the whole change',
    '    description: <build and run every test; fix nothing>',
    '    kind: review',
    '    capability: testing',
    '    depends_on: [<every coding task id>]',
    '    exit_criteria:',
    '      - <command that builds the project>',
    '      - <command that runs the whole test suite>',
  ].join('\n');
  return [
    'The mission file is YAML of exactly this shape (the values in angle brackets are placeholders):',
    fence(example, 'yaml'),
    'Fields of the mission. A field not listed here is an error.',
    fieldList(missionSchema.shape, MISSION_HINTS),
    'Fields of `defaults`:',
    fieldList(defaultsSchema.shape, DEFAULTS_HINTS),
    'Fields of each task:',
    fieldList(taskSchema.shape, TASK_HINTS),
  ].join('\n\n');
}

/** A previous answer longer than this is not a mission worth mending; repeating it would only bloat the prompt. */
export const MAX_PREVIOUS_CHARS = 20_000;

function retryText(retry: PlanRetry): string {
  const text = retry.previous?.trimEnd() ?? '';
  const previous = !text.trim()
    ? []
    : text.length > MAX_PREVIOUS_CHARS
      ? [
          `Your previous file had ${text.length} characters; it is not repeated here. Start again from the rules.`,
        ]
      : ['This is the mission file you wrote, as flotilla read it:', fence(text, 'yaml')];
  return [
    `## ⚠️ PREVIOUS ATTEMPT FAILED (attempt ${retry.round}/${retry.maxRounds})`,
    'flotilla rejected your mission file with these problems (file:line: field: message):',
    fence(retry.problems.join('\n'), 'text'),
    ...previous,
    'Write a corrected, complete mission file — not a patch — that fixes every problem above and still follows every rule.',
  ].join('\n\n');
}
