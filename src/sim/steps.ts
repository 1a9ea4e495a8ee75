import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { parseDuration } from '../shared/duration.js';
import type { Role } from './args.js';

/**
 * The sim language: a YAML list in a ```sim block of the task description. Each item is one step
 * (exactly one of the kinds below) plus optional scope keys. docs/SIM.md is the user's reference;
 * this file is the one place that defines what is accepted.
 */

export const RESULT_STATUSES = ['Complete', 'Complete with Warnings', 'Failed'] as const;
export type ResultStatus = (typeof RESULT_STATUSES)[number];

export const DEFAULT_RATE_LIMIT_MESSAGE = 'Error: 429 rate_limit_error: rate limit exceeded';
export const DEFAULT_NOT_LOGGED_IN_MESSAGE = 'Invalid API key · Please run /login';
const DEFAULT_RUN_TIMEOUT_MS = 60_000;
/** What `print` repeats when the block gives no text: one line of a loud agent's log. */
export const DEFAULT_PRINT_TEXT = 'flotilla-sim: a line of output from a loud agent, printed on purpose\n';

// Each schema is a builder, run the first time a block uses its step (stepSchema below): building
// all of them costs a run more than its own steps do, and a benchmark's run has one or two kinds.
const attempt = () => z.number().int().min(1);
const score = () => z.number().min(0).max(10);
const duration = () =>
  z.union([z.string(), z.number()]).transform((value, ctx) => {
    const ms = parseDuration(value);
    if (ms === undefined) {
      ctx.addIssue({ code: 'custom', message: `expected a duration like 500ms or 2s, got '${value}'` });
      return z.NEVER;
    }
    return ms;
  });
/** Arguments are text; a YAML scalar such as `false` or `1` is taken as written. */
const argv = () => z.array(z.union([z.string(), z.number(), z.boolean()]).transform(String)).min(1);
const fileWrite = () =>
  z
    .object({ path: z.string().min(1), content: z.string().default(''), broken: z.string().optional() })
    .strict();
const question = () =>
  z.union([
    z.string().min(1),
    z
      .object({
        id: z.string().optional(),
        text: z.string().min(1),
        options: z.array(z.string()).default([]),
      })
      .strict(),
  ]);

export const STEP_SCHEMAS = {
  write: fileWrite,
  append: fileWrite,
  run: () =>
    z
      .union([
        argv(),
        z
          .object({
            argv: argv(),
            allow_failure: z.boolean().default(false),
            timeout: duration().optional(),
          })
          .strict(),
      ])
      .transform((value) =>
        Array.isArray(value)
          ? { argv: value, allowFailure: false, timeoutMs: DEFAULT_RUN_TIMEOUT_MS }
          : {
              argv: value.argv,
              allowFailure: value.allow_failure,
              timeoutMs: value.timeout ?? DEFAULT_RUN_TIMEOUT_MS,
            },
      ),
  sleep: duration,
  sleep_until: duration,
  fail_until_attempt: () =>
    z
      .union([
        attempt(),
        z
          .object({
            attempt: attempt(),
            message: z.string().optional(),
            exit_code: z.number().int().min(0).max(255).optional(),
          })
          .strict(),
      ])
      .transform((value) =>
        typeof value === 'number'
          ? { attempt: value, message: undefined, exitCode: 0 }
          : { attempt: value.attempt, message: value.message, exitCode: value.exit_code ?? 0 },
      ),
  break_until_attempt: attempt,
  exceed_timeout: () =>
    z
      .union([z.boolean(), z.object({ partial_result: z.boolean().default(false) }).strict()])
      .transform((value) =>
        typeof value === 'boolean'
          ? { enabled: value, partialResult: false }
          : { enabled: true, partialResult: value.partial_result },
      ),
  write_outside_scope: () =>
    z
      .union([
        z.string().min(1),
        z.object({ path: z.string().min(1), content: z.string().optional() }).strict(),
      ])
      .transform((value) => {
        const path = typeof value === 'string' ? value : value.path;
        const content = typeof value === 'string' ? undefined : value.content;
        return { path, content: content ?? 'flotilla-sim wrote this file outside its scope on purpose.\n' };
      }),
  rate_limit: () =>
    z
      .union([
        z.literal(true),
        z.string().min(1),
        z
          .object({ message: z.string().min(1).optional(), times: z.number().int().min(1).optional() })
          .strict(),
      ])
      .transform((value) =>
        typeof value === 'object'
          ? { message: value.message ?? DEFAULT_RATE_LIMIT_MESSAGE, times: value.times }
          : {
              message: value === true ? DEFAULT_RATE_LIMIT_MESSAGE : value,
              times: undefined as number | undefined,
            },
      ),
  not_logged_in: () =>
    z
      .union([z.boolean(), z.string().min(1)])
      .transform((value) =>
        typeof value === 'string'
          ? { enabled: true, message: value }
          : { enabled: value, message: DEFAULT_NOT_LOGGED_IN_MESSAGE },
      ),
  needs_input: () =>
    z
      .object({
        questions: z.array(question()).min(1),
        completed_steps: z.array(z.string()).default([]),
        resume_guidance: z.string().optional(),
      })
      .strict()
      .transform((value) => ({
        questions: value.questions.map((q, i) =>
          typeof q === 'string'
            ? { id: `Q${i + 1}`, text: q, options: [] as string[] }
            : { id: q.id ?? `Q${i + 1}`, text: q.text, options: q.options },
        ),
        completedSteps: value.completed_steps,
        resumeGuidance: value.resume_guidance,
      })),
  review: () =>
    z
      .object({
        score: score(),
        issues: z.array(z.string()).default([]),
        verdict: z.enum(['approve', 'reject']).optional(),
      })
      .strict(),
  review_until_attempt: () =>
    z
      .object({
        attempt: attempt(),
        score_before: score().default(4),
        issues_before: z
          .array(z.string())
          .default(['flotilla-sim: the work is not ready yet (review_until_attempt)']),
      })
      .strict(),
  result: () =>
    z
      .union([
        z.enum(RESULT_STATUSES),
        z
          .object({
            status: z.enum(RESULT_STATUSES).optional(),
            summary: z.string().min(1).optional(),
            exit_code: z.number().int().min(0).max(255).optional(),
          })
          .strict(),
      ])
      .transform((value) =>
        typeof value === 'string'
          ? {
              status: value as ResultStatus | undefined,
              summary: undefined as string | undefined,
              exitCode: undefined,
            }
          : { status: value.status, summary: value.summary, exitCode: value.exit_code },
      ),
  stdout_only: () => z.boolean(),
  cost_usd: () => z.number().min(0),
  print: () =>
    z
      .union([
        z.string().min(1),
        z
          .object({
            text: z.string().min(1).optional(),
            mb: z.number().positive().optional(),
            times: z.number().int().min(1).optional(),
            every: duration().optional(),
            stream: z.enum(['stdout', 'stderr']).default('stdout'),
          })
          .strict()
          .refine((value) => value.mb === undefined || value.times === undefined, {
            message: 'give mb or times, not both',
          }),
      ])
      .transform((value) =>
        typeof value === 'string'
          ? { text: value, stream: 'stdout' as const, times: 1, everyMs: 0, bytes: undefined }
          : {
              text: value.text ?? DEFAULT_PRINT_TEXT,
              stream: value.stream,
              times: value.times ?? 1,
              everyMs: value.every ?? 0,
              bytes: value.mb === undefined ? undefined : Math.round(value.mb * 1024 * 1024),
            },
      ),
} as const;

export type StepKind = keyof typeof STEP_SCHEMAS;

/** What each step accepts, in words: the message when a value matches none of a step's forms. */
export const STEP_FORMS: Readonly<Record<StepKind, string>> = {
  write: '{path, content, broken?}',
  append: '{path, content, broken?}',
  run: 'an argument list [program, arg, …] or {argv: […], allow_failure?, timeout?}',
  sleep: 'a duration such as 500ms or 2s',
  sleep_until: 'a duration such as 500ms or 2s',
  fail_until_attempt: 'an attempt number or {attempt, message?, exit_code?}',
  break_until_attempt: 'an attempt number',
  exceed_timeout: 'true or {partial_result: true}',
  write_outside_scope: 'a path or {path, content?}',
  rate_limit: 'true, a message, or {message?, times?}',
  not_logged_in: 'true or a message',
  needs_input: '{questions: [text or {id?, text, options?}], completed_steps?, resume_guidance?}',
  review: '{score: 0-10, issues?: [...], verdict?: approve|reject}',
  review_until_attempt: '{attempt, score_before?, issues_before?}',
  result: "'Complete', 'Complete with Warnings', 'Failed', or {status?, summary?, exit_code?}",
  stdout_only: 'true or false',
  cost_usd: 'a number of US dollars',
  print: 'a text, or {text?, mb? | times?, every?, stream?: stdout|stderr}',
};
export const STEP_KINDS = Object.keys(STEP_SCHEMAS) as StepKind[];
type StepValues = { [K in StepKind]: z.output<ReturnType<(typeof STEP_SCHEMAS)[K]>> };

/** When a step applies: which role runs it, and for which attempts. */
export interface StepScope {
  /** 1-based position in the block, for messages. */
  readonly index: number;
  readonly role: Role | 'both';
  /** Runs only while attempt < before_attempt. */
  readonly beforeAttempt?: number;
  /** Runs only from this attempt on. */
  readonly fromAttempt?: number;
}

export type Step = {
  [K in StepKind]: { readonly kind: K; readonly value: StepValues[K] } & StepScope;
}[StepKind];

const REVIEWER_KINDS: readonly StepKind[] = ['review', 'review_until_attempt'];

const scopeSchema = z
  .object({
    role: z.enum(['builder', 'reviewer', 'both']).optional(),
    before_attempt: attempt().optional(),
    from_attempt: attempt().optional(),
    rate_limit_times: z.number().int().min(1).optional(),
  })
  .strict();
const SCOPE_KEYS = Object.keys(scopeSchema.shape);

export type SimBlock =
  | { readonly ok: true; readonly steps: readonly Step[] }
  | { readonly ok: false; readonly problems: readonly string[] };

export function parseSimBlock(source: string): SimBlock {
  let root: unknown;
  try {
    root = parseYaml(source);
  } catch (error) {
    return { ok: false, problems: [`sim block: not valid YAML: ${(error as Error).message.split('\n')[0]}`] };
  }
  if (root === null || root === undefined) return { ok: true, steps: [] };
  if (!Array.isArray(root))
    return { ok: false, problems: ['sim block: expected a YAML list of steps (- write: …)'] };

  const steps: Step[] = [];
  const problems: string[] = [];
  root.forEach((item: unknown, i) => {
    const parsed = parseStep(item, i + 1);
    if (typeof parsed === 'string') problems.push(parsed);
    else steps.push(parsed);
  });
  return problems.length > 0 ? { ok: false, problems } : { ok: true, steps };
}

function parseStep(item: unknown, index: number): Step | string {
  const where = `sim block, step ${index}`;
  if (typeof item !== 'object' || item === null || Array.isArray(item)) {
    return `${where}: expected a mapping such as 'write: {path, content}'`;
  }
  const entries = Object.entries(item as Record<string, unknown>);
  const kinds = entries.filter(([key]) => isStepKind(key));
  const unknown = entries
    .filter(([key]) => !isStepKind(key) && !SCOPE_KEYS.includes(key))
    .map(([key]) => key);
  if (unknown.length > 0) {
    return `${where}: unknown key '${unknown[0]}' (steps: ${STEP_KINDS.join(', ')}; scope keys: ${SCOPE_KEYS.join(', ')})`;
  }
  const [first, ...others] = kinds;
  if (!first) return `${where}: no step in it (expected one of ${STEP_KINDS.join(', ')})`;
  if (others.length > 0)
    return `${where}: one step per list item, found ${kinds.map(([k]) => k).join(' and ')}`;

  const kind = first[0] as StepKind;
  const value = stepSchema(kind).safeParse(first[1]);
  if (!value.success) {
    const union = value.error.issues.some(
      (issue) => issue.code === 'invalid_union' && issue.path.length === 0,
    );
    return `${where} (${kind}): ${union ? `expected ${STEP_FORMS[kind]}` : describeIssues(value.error)}`;
  }
  const scope = scopeSchema.safeParse(Object.fromEntries(entries.filter(([key]) => key !== kind)));
  if (!scope.success) return `${where} (${kind}): ${describeIssues(scope.error)}`;
  if (scope.data.rate_limit_times !== undefined && kind !== 'rate_limit') {
    return `${where} (${kind}): rate_limit_times belongs to a rate_limit step`;
  }

  let stepValue = value.data;
  if (kind === 'rate_limit' && scope.data.rate_limit_times !== undefined) {
    stepValue = { ...(value.data as StepValues['rate_limit']), times: scope.data.rate_limit_times };
  }
  // The schema was picked by `kind`, so value and kind belong together; TypeScript cannot follow
  // that correlation through the lookup, hence the one assertion.
  return {
    kind,
    value: stepValue,
    index,
    role: scope.data.role ?? (REVIEWER_KINDS.includes(kind) ? 'reviewer' : 'builder'),
    beforeAttempt: scope.data.before_attempt,
    fromAttempt: scope.data.from_attempt,
  } as Step;
}

const built = new Map<StepKind, z.ZodType>();

function stepSchema(kind: StepKind): z.ZodType {
  let schema = built.get(kind);
  if (!schema) {
    schema = STEP_SCHEMAS[kind]();
    built.set(kind, schema);
  }
  return schema;
}

function isStepKind(key: string): key is StepKind {
  return Object.hasOwn(STEP_SCHEMAS, key);
}

function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => (issue.path.length > 0 ? `${issue.path.join('.')}: ${issue.message}` : issue.message))
    .join('; ');
}
