import type { Role } from './args.js';
import type { ResultStatus, Step, StepScope } from './steps.js';

/**
 * Performs a sim block's steps for one run. The effects (files, processes, time, the rate-limit
 * counter) come in through `SimIo`, so this is tested without touching a disk or a clock.
 */

export interface SimIo {
  /** Writes or appends a file inside the working directory; returns its path relative to it. Throws outside it. */
  writeFile(path: string, content: string, append: boolean): Promise<string>;
  /** Runs a program without a shell in the working directory. */
  run(
    argv: readonly string[],
    timeoutMs: number,
  ): Promise<{ exitCode: number | null; output: string; error?: string }>;
  sleep(ms: number): Promise<void>;
  /** Milliseconds since this process started (its own start-up included). */
  uptimeMs(): number;
  /** True when this run should be rate limited; `times` undefined means every run. */
  takeRateLimit(times: number | undefined): Promise<boolean>;
  /** Writes text to the sim's stdout or stderr, waiting while the reader is behind. */
  print(stream: 'stdout' | 'stderr', data: string | Uint8Array): Promise<void>;
}

export interface RunContext {
  readonly role: Role;
  readonly attempt: number;
  readonly model?: string;
  readonly dispatchTaskId?: string;
  /** Present when the prompt answers an earlier needs_input. */
  readonly answers?: string;
}

export interface Verdict {
  readonly score: number;
  readonly verdict: 'approve' | 'reject';
  readonly issues: readonly string[];
}

export interface NeedsInput {
  readonly questions: ReadonlyArray<{ id: string; text: string; options: readonly string[] }>;
  readonly completedSteps: readonly string[];
  readonly resumeGuidance?: string;
}

export interface Report {
  readonly status: ResultStatus | 'Needs Input';
  readonly summary: string;
  readonly outputs: readonly string[];
  readonly findings: readonly string[];
  readonly issues: readonly string[];
  readonly errors: readonly string[];
  readonly verdict?: Verdict;
  readonly needsInput?: NeedsInput;
}

export type Outcome =
  /** The normal end: a result to write, then exit with `exitCode`. */
  | {
      readonly kind: 'report';
      readonly report: Report;
      readonly exitCode: number;
      readonly stdoutOnly: boolean;
      readonly costUsd?: number;
    }
  /** What a real CLI does on a rate limit or a missing login: a message, exit 1, no result. */
  | { readonly kind: 'abort'; readonly reason: 'rate_limit' | 'not_logged_in'; readonly message: string }
  /** exceed_timeout: never finish; `report` is written first when a partial result was asked for. */
  | { readonly kind: 'hang'; readonly report?: Report };

/** The approving review a reviewer gives when the block says nothing about reviewing. */
export const DEFAULT_REVIEW: Verdict = { score: 8, verdict: 'approve', issues: [] };
const APPROVE_AT = 7;

export async function executeSteps(steps: readonly Step[], ctx: RunContext, io: SimIo): Promise<Outcome> {
  const active = steps.filter((step) => appliesTo(step, ctx.role, ctx.attempt));
  const outputs: string[] = [];
  const did: string[] = [];
  const findings: string[] = [];
  let breakUntil = 0;
  let stop:
    | { status: ResultStatus | 'Needs Input'; summary: string; errors: string[]; exitCode: number }
    | undefined;
  let needsInput: NeedsInput | undefined;

  const addOutput = (path: string) => {
    if (!outputs.includes(path)) outputs.push(path);
  };
  const finish = (): Report => buildReport(ctx, active, { outputs, did, findings, stop, needsInput });
  const partial = (): Report => ({
    ...finish(),
    status: 'Complete with Warnings',
    summary: 'flotilla-sim was still working when it was stopped (exceed_timeout).',
  });

  for (const step of active) {
    if (stop) break;
    switch (step.kind) {
      case 'write':
      case 'append': {
        const broken = ctx.attempt < breakUntil;
        const content = broken
          ? (step.value.broken ?? brokenContent(ctx.attempt, breakUntil))
          : step.value.content;
        const path = await io.writeFile(step.value.path, fill(content, ctx), step.kind === 'append');
        addOutput(path);
        did.push(`${step.kind === 'write' ? 'wrote' : 'appended to'} ${path}`);
        break;
      }
      case 'write_outside_scope': {
        const path = await io.writeFile(step.value.path, fill(step.value.content, ctx), false);
        addOutput(path);
        did.push(`wrote ${path}`);
        break;
      }
      case 'run': {
        const shown = step.value.argv.join(' ');
        const ran = await io.run(step.value.argv, step.value.timeoutMs);
        const ok = ran.exitCode === 0 && !ran.error;
        findings.push(`Ran \`${shown}\`: ${ran.error ?? `exit ${ran.exitCode}`}${tailOf(ran.output)}`);
        did.push(`ran ${step.value.argv[0]}`);
        if (!ok && !step.value.allowFailure) {
          stop = {
            status: 'Failed',
            summary: `flotilla-sim stopped at step ${step.index}: \`${shown}\` failed.`,
            errors: [`\`${shown}\` ${ran.error ?? `exited with ${ran.exitCode}`}${tailOf(ran.output)}`],
            exitCode: 0,
          };
        }
        break;
      }
      case 'print': {
        const printed = await print(io, step.value);
        did.push(`printed ${printed} to ${step.value.stream}`);
        break;
      }
      case 'sleep':
        await io.sleep(step.value);
        did.push(`slept ${step.value}ms`);
        break;
      case 'sleep_until': {
        // The run as a whole takes the given time: a benchmark's task then costs what its mission
        // says, with the stand-in's own start-up inside it, as a real CLI's is inside its run.
        const rest = Math.max(0, step.value - io.uptimeMs());
        await io.sleep(rest);
        did.push(`slept ${Math.round(rest)}ms (until ${step.value}ms after start)`);
        break;
      }
      case 'fail_until_attempt':
        if (ctx.attempt < step.value.attempt) {
          const message =
            step.value.message ??
            `Simulated failure on attempt ${ctx.attempt} (this task fails until attempt ${step.value.attempt}).`;
          stop = { status: 'Failed', summary: message, errors: [message], exitCode: step.value.exitCode };
        }
        break;
      case 'break_until_attempt':
        breakUntil = step.value;
        break;
      case 'exceed_timeout':
        if (step.value.enabled)
          return { kind: 'hang', report: step.value.partialResult ? partial() : undefined };
        break;
      case 'rate_limit':
        if (await io.takeRateLimit(step.value.times)) {
          return { kind: 'abort', reason: 'rate_limit', message: step.value.message };
        }
        break;
      case 'not_logged_in':
        if (step.value.enabled)
          return { kind: 'abort', reason: 'not_logged_in', message: step.value.message };
        break;
      case 'needs_input':
        if (ctx.answers === undefined) {
          needsInput = step.value;
          stop = {
            status: 'Needs Input',
            summary: `flotilla-sim needs input before it can go on (${step.value.questions.length} question(s)).`,
            errors: [],
            exitCode: 0,
          };
        } else {
          findings.push(`Answers received: ${oneLine(ctx.answers)}`);
        }
        break;
      // Declarations: read when the report is built, wherever they stand in the block.
      case 'review':
      case 'review_until_attempt':
      case 'result':
      case 'stdout_only':
      case 'cost_usd':
        break;
    }
  }

  const override = last(active, 'result')?.value;
  return {
    kind: 'report',
    report: finish(),
    exitCode: stop ? stop.exitCode : (override?.exitCode ?? 0),
    stdoutOnly: last(active, 'stdout_only')?.value ?? false,
    costUsd: last(active, 'cost_usd')?.value,
  };
}

/** Bytes a `print` of `mb` writes at a time: few large writes keep hundreds of MB quick. */
const PRINT_CHUNK_BYTES = 1024 * 1024;

/**
 * A `print` step: `times` copies of the text (with `every` between them), or as many copies as
 * make `mb` megabytes (the last one whole, so a line stays a line), written about a megabyte at a
 * time.
 */
async function print(
  io: SimIo,
  value: { text: string; stream: 'stdout' | 'stderr'; times: number; everyMs: number; bytes?: number },
): Promise<string> {
  if (value.bytes === undefined) {
    for (let i = 0; i < value.times; i++) {
      if (i > 0 && value.everyMs > 0) await io.sleep(value.everyMs);
      await io.print(value.stream, value.text);
    }
    return `${value.times} time(s)`;
  }
  const unit = Buffer.byteLength(value.text);
  const perChunk = Math.max(1, Math.floor(PRINT_CHUNK_BYTES / unit));
  const chunk = value.text.repeat(perChunk);
  let copies = Math.ceil(value.bytes / unit);
  for (; copies >= perChunk; copies -= perChunk) await io.print(value.stream, chunk);
  if (copies > 0) await io.print(value.stream, value.text.repeat(copies));
  return `${Math.ceil(value.bytes / unit) * unit} bytes`;
}

interface Progress {
  readonly outputs: readonly string[];
  readonly did: readonly string[];
  readonly findings: readonly string[];
  readonly stop?: { status: Report['status']; summary: string; errors: string[] };
  readonly needsInput?: NeedsInput;
}

function buildReport(ctx: RunContext, active: readonly Step[], progress: Progress): Report {
  const { outputs, did, stop } = progress;
  const findings = [
    `Role: ${ctx.role}; ${ctx.role === 'reviewer' ? 'reviewing attempt' : 'attempt'} ${ctx.attempt}` +
      `${ctx.model ? `; model ${ctx.model}` : ''}.`,
    ...progress.findings,
  ];
  const verdict = ctx.role === 'reviewer' && !stop ? reviewFor(active, ctx.attempt) : undefined;
  if (stop) {
    return {
      status: stop.status,
      summary: [stop.summary, did.length > 0 ? `Before that it ${did.join(', ')}.` : '']
        .filter(Boolean)
        .join(' '),
      outputs,
      findings,
      issues: [],
      errors: stop.errors,
      needsInput: progress.needsInput,
    };
  }
  const override = last(active, 'result')?.value;
  const work = did.length > 0 ? `It ${did.join(', ')}.` : 'It made no change.';
  let summary: string;
  if (verdict) {
    summary =
      `flotilla-sim reviewed attempt ${ctx.attempt}: ${verdict.verdict}, score ${verdict.score}/10.` +
      (did.length > 0 ? ` ${work}` : '');
  } else if (active.length === 0) {
    summary = 'flotilla-sim (the stand-in agent) found no sim steps for this run and made no change.';
  } else {
    summary = `flotilla-sim ran the task's sim steps on attempt ${ctx.attempt}. ${work}`;
  }
  return {
    status: override?.status ?? 'Complete',
    summary: override?.summary ?? summary,
    outputs,
    findings,
    issues: verdict ? verdict.issues : [],
    errors: override?.status === 'Failed' ? ['The sim block asked for a Failed result.'] : [],
    verdict,
  };
}

/** The verdict for the builder attempt under review: review_until_attempt first, then review, then the default. */
export function reviewFor(active: readonly Step[], attempt: number): Verdict {
  const until = last(active, 'review_until_attempt')?.value;
  if (until && attempt < until.attempt) {
    return { score: until.score_before, verdict: verdictOf(until.score_before), issues: until.issues_before };
  }
  const review = last(active, 'review')?.value;
  if (review)
    return { score: review.score, verdict: review.verdict ?? verdictOf(review.score), issues: review.issues };
  return DEFAULT_REVIEW;
}

/** Whether a step applies to this run: its role, and the attempts its scope keys allow. */
export function appliesTo(step: StepScope, role: Role, attemptNumber: number): boolean {
  if (step.role !== 'both' && step.role !== role) return false;
  if (step.beforeAttempt !== undefined && attemptNumber >= step.beforeAttempt) return false;
  if (step.fromAttempt !== undefined && attemptNumber < step.fromAttempt) return false;
  return true;
}

function verdictOf(score: number): Verdict['verdict'] {
  return score >= APPROVE_AT ? 'approve' : 'reject';
}

function last<K extends Step['kind']>(
  steps: readonly Step[],
  kind: K,
): Extract<Step, { kind: K }> | undefined {
  for (let i = steps.length - 1; i >= 0; i--) {
    const step = steps[i];
    if (step?.kind === kind) return step as Extract<Step, { kind: K }>;
  }
  return undefined;
}

/** `{attempt}` and `{task-id}` are the only placeholders; nothing else in content is interpreted. */
export function fill(content: string, ctx: RunContext): string {
  return content
    .replaceAll('{attempt}', String(ctx.attempt))
    .replaceAll('{task-id}', ctx.dispatchTaskId ?? '');
}

function brokenContent(attempt: number, until: number): string {
  return `flotilla-sim broke this file on purpose on attempt ${attempt} (break_until_attempt: ${until}).\n`;
}

function tailOf(output: string): string {
  const tail = output.trim().split('\n').slice(-5).join('\n').slice(-600);
  return tail.length > 0 ? `\n\n  \`\`\`\n  ${tail.replaceAll('\n', '\n  ')}\n  \`\`\`` : '';
}

function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > 300 ? `${flat.slice(0, 297)}…` : flat;
}
