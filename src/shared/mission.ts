import { z } from 'zod';
import { CONTROL_MODES, TASK_KINDS } from './capabilities.js';
import { DURATION_PATTERN, parseDuration } from './duration.js';
import {
  canonicalRequirements,
  isEmptyRequirements,
  PLATFORMS,
  parseToolRequirement,
  type Requirements,
  TOOL_PATTERN,
  type ToolRequirement,
} from './host-facts.js';
import { DEFAULT_NOTIFY_EVENTS, NOTIFY_EVENTS, type NotifyHook } from './notify.js';

/**
 * The mission file's shape. Unknown fields are errors (a typo must not silently drop a setting);
 * cross-task rules (unique ids, dependencies, cycles) live in mission/rules.ts.
 */
export const TASK_ID_PATTERN = /^[a-z0-9][a-z0-9_-]*$/;

/*
 * A transform is opaque to z.toJSONSchema, so the schemas that parse text carry what that text
 * looks like as metadata (`pattern`, `minimum`, `anyOf`), built from the constants the parsers
 * use; metadata changes nothing in validation. shared/mission-json-schema.ts makes the whole into
 * the JSON Schema editors read.
 */
const DURATION_TEXT = 'a duration: 90s, 10m, 1h30m, 500ms, 7d, or a number of milliseconds';

const duration = z
  .union([z.string().meta({ pattern: DURATION_PATTERN }), z.number().meta({ minimum: 0 })])
  .meta({ description: DURATION_TEXT })
  .transform((value, ctx) => {
    const ms = parseDuration(value);
    if (ms === undefined) {
      ctx.addIssue({ code: 'custom', message: `expected a duration like 90s, 10m or 1h30m, got '${value}'` });
      return z.NEVER;
    }
    return ms;
  });

/** An attempt's time limit when the mission sets none. */
export const DEFAULT_TASK_TIMEOUT_MS = 600_000;

/**
 * How long a CLI run may take: the mission's own `timeout` when it set one (an hours-long task is
 * the author's call), else the shorter of the task's default and the adapter's `timeout_ms`.
 */
export function runTimeoutMs(
  task: Pick<TaskSpec, 'timeoutMs' | 'timeoutSet'>,
  adapterTimeoutMs: number,
): number {
  return task.timeoutSet ? task.timeoutMs : Math.min(adapterTimeoutMs, task.timeoutMs);
}

/** How often a running CLI's checkout is saved to the attempt's work-in-progress ref, by default. */
export const DEFAULT_CHECKPOINT_MS = 120_000;
/** Shorter intervals would spend more on git than they could save. */
export const MIN_CHECKPOINT_MS = 1_000;

/**
 * `checkpoint_interval`: a duration of at least a second, or `off` (also `0`, `false`) for no
 * checkpoints, which is 0 here. Undefined for anything else.
 */
export function parseCheckpointInterval(value: unknown): number | undefined {
  if (value === false || (typeof value === 'string' && value.trim().toLowerCase() === 'off')) return 0;
  if (typeof value !== 'string' && typeof value !== 'number') return undefined;
  const ms = parseDuration(value);
  if (ms === undefined) return undefined;
  return ms === 0 || ms >= MIN_CHECKPOINT_MS ? ms : undefined;
}

/** The forms parseCheckpointInterval takes; a string's at-least-1s is the one part no pattern states. */
const CHECKPOINT_FORMS = [
  { type: 'string', pattern: DURATION_PATTERN },
  { type: 'string', pattern: '^\\s*[Oo][Ff][Ff]\\s*$' },
  { const: 0 },
  { type: 'number', minimum: MIN_CHECKPOINT_MS },
  { const: false },
];

const checkpointInterval = z
  .unknown()
  .meta({
    anyOf: CHECKPOINT_FORMS,
    description:
      "how often a running agent's checkout is saved: a duration of at least 1s (30s, 2m), or off (also 0 or false)",
  })
  .transform((value, ctx) => {
    const ms = parseCheckpointInterval(value);
    if (ms === undefined) {
      const got = typeof value === 'string' ? `'${value}'` : String(value);
      ctx.addIssue({
        code: 'custom',
        message: `expected a duration of at least 1s like 30s or 2m, or off to save no checkpoints, got ${got}`,
      });
      return z.NEVER;
    }
    return ms;
  });

/**
 * `requires`: what a task's machine must have (shared/host-facts.ts). Only hosts that satisfy it
 * take the task's run, verify and critic; a task no live host satisfies waits, saying what is missing.
 */
const requires = z
  .object({
    os: z.array(z.enum(PLATFORMS)).min(1).optional(),
    arch: z.array(z.string().min(1)).min(1).optional(),
    tools: z
      .array(
        z
          .string()
          // parseToolRequirement trims the text before matching it.
          .meta({ pattern: `^\\s*${TOOL_PATTERN.source.slice(1, -1)}\\s*$` })
          .transform((text, ctx): ToolRequirement => {
            const tool = parseToolRequirement(text);
            if (!tool) {
              ctx.addIssue({
                code: 'custom',
                message: `expected a tool name with an optional version, like docker or 'node>=20', got '${text}'`,
              });
              return z.NEVER;
            }
            return tool;
          }),
      )
      .optional(),
    labels: z.record(z.string().min(1), z.string()).optional(),
  })
  .strict();

/** `escalate: [tier, cli]`: what a retry changes after a failed attempt (stages/run/escalate.ts). */
const escalate = z
  .array(z.enum(['tier', 'cli']))
  .max(2)
  .refine((steps) => new Set(steps).size === steps.length, 'expected each of tier and cli at most once')
  .meta({ uniqueItems: true });

/**
 * `approve: human`: after its exit criteria and critic pass, a task waits for a person's approval
 * (`flotilla approve`, the board) before it merges and releases its dependents; `auto` (the
 * default) merges at once. `approve_timeout` bounds the wait; `on_approve_timeout` says what then.
 */
const approve = z.enum(['auto', 'human']);
const onApproveTimeout = z.enum(['fail', 'skip']);

/**
 * The mission-wide value of every per-task setting that has one (DESIGN.md §5); a task's own value
 * wins. `critic` and `kind` have no fixed default: absent, each task decides by its kind.
 */
export const defaultsSchema = z
  .object({
    max_attempts: z.number().int().min(1).max(20).default(3),
    timeout: duration.optional().describe('the time limit of one attempt (default 10m)'),
    min_score: z.number().min(0).max(10).default(7),
    control_mode: z.enum(CONTROL_MODES).default('guarded'),
    backoff: duration.default(5_000),
    checkpoint_interval: checkpointInterval.default(DEFAULT_CHECKPOINT_MS),
    budget_usd: z.number().positive().optional(),
    escalate: escalate.default([]),
    critic: z.boolean().optional(),
    kind: z.enum(TASK_KINDS).optional(),
    cli: z.string().min(1).optional(),
    allowed_paths: z.array(z.string()).optional(),
    setup: z.array(z.string().min(1)).optional(),
    setup_inputs: z.array(z.string().min(1)).optional(),
    requires: requires.optional(),
    approve: approve.optional(),
    approve_timeout: duration.optional(),
    on_approve_timeout: onApproveTimeout.optional(),
  })
  .strict();

export const taskSchema = z
  .object({
    id: z
      .string()
      .regex(
        TASK_ID_PATTERN,
        'expected lower-case letters, digits, - and _, starting with a letter or digit',
      ),
    title: z.string().min(1),
    description: z.string().default(''),
    capability: z.string().min(1).optional(),
    task_type: z.string().min(1).optional(),
    kind: z.enum(TASK_KINDS).optional(),
    division: z.string().optional(),
    languages: z.array(z.string()).default([]),
    frameworks: z.array(z.string()).default([]),
    agent: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'expected an agent id (a file name in agents/)')
      .optional(),
    depends_on: z
      .array(z.string())
      .default([])
      .describe('ids of the tasks that must be done before this one'),
    exit_criteria: z
      .array(z.string().min(1))
      .min(1, 'expected at least one shell command')
      .describe('shell commands run in the checkout; the task is done when every one exits 0'),
    allowed_paths: z.array(z.string()).optional(),
    files: z.array(z.string()).default([]),
    critic: z.boolean().optional(),
    cli: z.string().optional(),
    control_mode: z.enum(CONTROL_MODES).optional(),
    max_attempts: z.number().int().min(1).max(20).optional(),
    timeout: duration.optional(),
    min_score: z.number().min(0).max(10).optional(),
    escalate: escalate.optional(),
    setup: z.array(z.string().min(1)).optional(),
    setup_inputs: z.array(z.string().min(1)).optional(),
    requires: requires.optional(),
    approve: approve.optional(),
    approve_timeout: duration.optional(),
    on_approve_timeout: onApproveTimeout.optional(),
  })
  .strict();

/**
 * `notify:` webhooks: each hook's URL gets a signed JSON POST for the events it names (default:
 * those that may need a person), delivered by any host through a queue with retries.
 */
const notifyHook = z
  .object({
    url: z
      .string()
      .regex(/^https?:\/\/[^\s/]+/, 'expected an http:// or https:// URL')
      .describe(
        'where each event is POSTed as JSON (signed with FLOTILLA_WEBHOOK_SECRET when hosts have it)',
      ),
    events: z
      .array(z.enum(NOTIFY_EVENTS))
      .min(1)
      .optional()
      .describe(
        'the events to send (default: mission.finished, task.failed, task.needs_input, task.awaiting_approval)',
      ),
  })
  .strict();

/** The forges delivery opens pull requests on (stages/deliver/forges/). Forgejo speaks Gitea's API. */
export const FORGES = ['github', 'gitlab', 'gitea'] as const;
export type Forge = (typeof FORGES)[number];

/** Mission statuses delivery may follow; a failed or cancelled mission has nothing to hand over. */
export const DELIVER_WHEN = ['done', 'partial'] as const;

/**
 * `deliver`: where the integration branch goes when the mission ends, and the pull request opened
 * or updated for it (stages/deliver/). Mission-level only, not in `defaults`: `defaults` holds the
 * mission-wide value of per-task settings, and a mission has one branch to deliver.
 */
const deliverSchema = z
  .object({
    /** A remote of the workspace repository, or a URL; default `origin` (a URL workspace: itself). */
    push: z.string().min(1).optional(),
    when: z
      .array(z.enum(DELIVER_WHEN))
      .min(1)
      .refine((list) => new Set(list).size === list.length, 'expected each of done and partial at most once')
      .default(['done']),
    forge: z.enum(FORGES).optional(),
    /** The forge's REST API root, for a self-hosted forge (https://git.example.com/api/v1). */
    api_url: z
      .string()
      .regex(/^https?:\/\/[^\s/]+/, 'expected an http(s) URL like https://git.example.com/api/v1')
      .optional(),
    pull_request: z
      .object({
        /** The branch the pull request merges into; default the mission's `base`, else the remote's HEAD. */
        base: z.string().min(1).optional(),
        title: z.string().min(1).optional(),
        draft: z.boolean().default(false),
        labels: z.array(z.string().min(1)).default([]),
      })
      .strict()
      .optional(),
  })
  .strict();

export const missionSchema = z
  .object({
    goal: z.string().min(1).describe("the mission's goal, in a sentence"),
    workspace: z
      .string()
      .min(1)
      .default('.')
      .describe(
        "the git repository the tasks change: a path from the mission file's folder (a plain or missing folder is made one) or a URL",
      ),
    base: z.string().min(1).optional(),
    defaults: defaultsSchema
      .default(() => defaultsSchema.parse({}))
      .describe("the mission-wide value of each per-task setting; a task's own wins"),
    setup: z.array(z.string().min(1)).optional(),
    setup_inputs: z.array(z.string().min(1)).optional(),
    notify: z.array(notifyHook).optional().describe('webhooks told when something happens'),
    tasks: z
      .array(taskSchema)
      .min(1, 'expected at least one task')
      .describe('the tasks; each starts when the tasks it depends_on are done'),
    on_finish: z
      .array(z.string().min(1))
      .min(1, 'expected a command and its arguments, like [scripts/announce.sh, --channel, dev]')
      .optional()
      .describe(
        'a command and its arguments (no shell) the finishing host runs once the mission has ended, with its facts in FLOTILLA_* variables',
      ),
    deliver: deliverSchema
      .optional()
      .describe('where the integration branch goes when the mission ends: a push, and a pull request'),
  })
  .strict();

/**
 * A mission as a script writes it: the file's fields and spellings, before defaults (what
 * `client.submit({...})` takes). The parsed, defaulted MissionSpec below is internal.
 */
export type MissionInput = z.input<typeof missionSchema>;

/**
 * Returns its argument: wrapping a mission object in it gives an editor the fields, their types
 * and their docs while it is written (in TypeScript, and in JavaScript through the package's types).
 * Nothing is checked here; `client.submit()` validates.
 */
export function defineMission(input: MissionInput): MissionInput {
  return input;
}
export type MissionFile = z.output<typeof missionSchema>;
export type TaskFile = z.output<typeof taskSchema>;

/** A task with every default resolved: what the producer stores and workers read. */
export interface TaskSpec {
  readonly id: string;
  readonly title: string;
  readonly description: string;
  readonly capability: string;
  readonly kind: (typeof TASK_KINDS)[number];
  readonly division?: string;
  readonly languages: readonly string[];
  readonly frameworks: readonly string[];
  readonly agent?: string;
  readonly dependsOn: readonly string[];
  readonly exitCriteria: readonly string[];
  readonly allowedPaths?: readonly string[];
  readonly files: readonly string[];
  readonly critic: boolean;
  readonly cli?: string;
  readonly controlMode: (typeof CONTROL_MODES)[number];
  readonly maxAttempts: number;
  /** The time limit of one attempt: `timeout`, else DEFAULT_TASK_TIMEOUT_MS. */
  readonly timeoutMs: number;
  /**
   * The mission set `timeout` (on the task or in `defaults`): it is the run's limit whatever the
   * adapter's `timeout_ms`, so an hours-long task is not cut at the CLI's default. Absent: the
   * shorter of the two, as DESIGN.md has it.
   */
  readonly timeoutSet?: true;
  readonly minScore: number;
  readonly backoffMs: number;
  /**
   * BullMQ priority of the task's run jobs (1 first), set at submit from the task graph
   * (queue/priority.ts); absent in missions submitted before it existed, which run unprioritized.
   */
  readonly priority?: number;
  /** After a failed attempt: the next model tier, then another CLI, in the order given. */
  readonly escalate?: readonly ('tier' | 'cli')[];
  /**
   * Commands run in the checkout before the agent and before the criteria, cached per warm
   * checkout by the hash of `inputs` (empty: the usual lockfiles). Absent: no setup.
   */
  readonly setup?: { readonly commands: readonly string[]; readonly inputs: readonly string[] };
  /** What the task's machine must have (`requires`; a task's own replaces the defaults'); absent: any host. */
  readonly requires?: Requirements;
  /**
   * `approve: human`: a person approves each attempt the gates passed before it merges; how long
   * that may take (absent: no limit) and what then. Absent: approved attempts merge at once.
   */
  readonly approval?: { readonly timeoutMs?: number; readonly onTimeout: 'fail' | 'skip' };
}

/** A validated mission: what submit stores in Redis. */
export interface MissionSpec {
  readonly goal: string;
  /** Absolute path or URL of the git repository every host can reach. */
  readonly workspace: string;
  readonly base?: string;
  readonly budgetUsd?: number;
  /**
   * How often a running CLI's checkout is saved to the attempt's work-in-progress ref (0: never).
   * Absent in missions submitted before checkpoints existed: DEFAULT_CHECKPOINT_MS.
   */
  readonly checkpointMs?: number;
  /** `notify:` webhooks, each with the events it wants; absent: none. */
  readonly notify?: readonly NotifyHook[];
  /** Folder that holds agents/<id>.md for this mission (the mission file's folder), if any. */
  readonly agentsDir?: string;
  /** The whole text of each agent file the tasks name, resolved at submit time. */
  readonly agents: Readonly<Record<string, string>>;
  readonly tasks: readonly TaskSpec[];
  /** `deliver`: absent, the branch stays in the workspace repository and nothing is pushed. */
  readonly deliver?: DeliverSpec;
  /** `on_finish`: the command and its arguments run when the mission has ended (finalize/on-finish.ts). */
  readonly onFinish?: readonly string[];
}

/** `deliver` with its defaults resolved, as stored in the spec (camelCase like the rest of it). */
export interface DeliverSpec {
  readonly push?: string;
  readonly when: readonly (typeof DELIVER_WHEN)[number][];
  readonly forge?: Forge;
  readonly apiUrl?: string;
  readonly pullRequest?: {
    readonly base?: string;
    readonly title?: string;
    readonly draft: boolean;
    readonly labels: readonly string[];
  };
}

export function normalizeDeliver(deliver: MissionFile['deliver']): DeliverSpec | undefined {
  if (!deliver) return undefined;
  const pr = deliver.pull_request;
  return {
    ...(deliver.push ? { push: deliver.push } : {}),
    when: deliver.when,
    ...(deliver.forge ? { forge: deliver.forge } : {}),
    ...(deliver.api_url ? { apiUrl: deliver.api_url.replace(/\/+$/, '') } : {}),
    ...(pr
      ? {
          pullRequest: {
            ...(pr.base ? { base: pr.base } : {}),
            ...(pr.title ? { title: pr.title } : {}),
            draft: pr.draft,
            labels: pr.labels,
          },
        }
      : {}),
  };
}

/** The mission's top-level `setup`/`setup_inputs`; a task's own values replace them field by field. */
export interface MissionSetup {
  readonly setup?: readonly string[];
  readonly setup_inputs?: readonly string[];
}

export function normalizeTask(
  task: TaskFile,
  defaults: MissionFile['defaults'],
  mission: MissionSetup = {},
): TaskSpec {
  const kind = task.kind ?? defaults.kind ?? 'coding';
  const commands = task.setup ?? mission.setup ?? defaults.setup ?? [];
  const inputs = task.setup_inputs ?? mission.setup_inputs ?? defaults.setup_inputs ?? [];
  const requires = task.requires ?? defaults.requires;
  const timeoutMs = task.approve_timeout ?? defaults.approve_timeout;
  const approval =
    (task.approve ?? defaults.approve) === 'human'
      ? {
          ...(timeoutMs !== undefined ? { timeoutMs } : {}),
          onTimeout: task.on_approve_timeout ?? defaults.on_approve_timeout ?? 'fail',
        }
      : undefined;
  return {
    ...(approval ? { approval } : {}),
    ...(!isEmptyRequirements(requires) && requires ? { requires: canonicalRequirements(requires) } : {}),
    ...(commands.length > 0 ? { setup: { commands, inputs } } : {}),
    id: task.id,
    title: task.title,
    description: task.description,
    capability: task.capability ?? task.task_type ?? defaultCapability(kind),
    kind,
    division: task.division,
    languages: task.languages,
    frameworks: task.frameworks,
    agent: task.agent,
    dependsOn: task.depends_on,
    exitCriteria: task.exit_criteria,
    allowedPaths: task.allowed_paths ?? defaults.allowed_paths,
    files: task.files,
    critic: task.critic ?? defaults.critic ?? kind === 'coding',
    cli: task.cli ?? defaults.cli,
    controlMode: task.control_mode ?? defaults.control_mode,
    maxAttempts: task.max_attempts ?? defaults.max_attempts,
    timeoutMs: task.timeout ?? defaults.timeout ?? DEFAULT_TASK_TIMEOUT_MS,
    ...((task.timeout ?? defaults.timeout) !== undefined ? { timeoutSet: true as const } : {}),
    minScore: task.min_score ?? defaults.min_score,
    backoffMs: defaults.backoff,
    ...((task.escalate ?? defaults.escalate).length ? { escalate: task.escalate ?? defaults.escalate } : {}),
  };
}

function defaultCapability(kind: TaskFile['kind']): string {
  switch (kind) {
    case 'research':
      return 'large_analysis';
    case 'review':
      return 'code_review';
    case 'planning':
      return 'documentation';
    default:
      return 'code_implementation';
  }
}

/** The mission file's `notify:` as the spec keeps it: every hook with its events spelled out. */
export function normalizeNotify(hooks: MissionFile['notify']): readonly NotifyHook[] | undefined {
  if (!hooks?.length) return undefined;
  return hooks.map((hook) => ({ url: hook.url, events: hook.events ?? DEFAULT_NOTIFY_EVENTS }));
}
