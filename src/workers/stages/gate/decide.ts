import type {
  ApprovalRecord,
  CriterionResult,
  CriticResult,
  CriticVerdict,
  GateDecision,
  PersonVerdict,
  RunResult,
  TaskState,
} from '../../../shared/contracts.js';
import { formatDurationSetting } from '../../../shared/duration.js';
import { clip, fence } from '../../../shared/markdown.js';
import type { TaskSpec } from '../../../shared/mission.js';

/**
 * The gate's decision for one attempt, a pure function of what run, verify and critic returned.
 * Anything short of approval retries with feedback (what failed, in words the next prompt can act
 * on) while attempts remain, then fails the task.
 */

export const MAX_RETRY_DELAY_MS = 10 * 60_000;
const TAIL_LINES = 30;
const TAIL_CHARS = 3_000;

export interface GateInput {
  readonly result: CriticResult;
  readonly task: TaskSpec;
  /** The attempt being decided, counting from 1. */
  readonly attempt: number;
  readonly cancelled: boolean;
}

export function decideGate(input: GateInput): GateDecision {
  const { result, task, attempt } = input;
  const { run } = result.verify;
  if (input.cancelled || run.outcome === 'cancelled') return { action: 'cancel' };
  if (run.outcome === 'needs_input') {
    return {
      action: 'pause',
      reason: `the agent needs input: ${clip(run.summary || 'see its questions', 200)}`,
    };
  }
  if (run.outcome === 'failed' && run.fatal) {
    // No retry can help (the CLI is not logged in and no live host can serve the task): a retry
    // would sit in a queue nobody consumes, so the task fails now with the CLI's own message.
    return {
      action: 'fail',
      feedback: formatRunFeedback(run),
      reason: `run failed: ${clip(run.error ?? run.summary, 200)}`,
    };
  }
  if (run.outcome === 'failed') {
    return retryOrFail(
      task,
      attempt,
      formatRunFeedback(run),
      `run failed: ${clip(run.error ?? run.summary, 200)}`,
    );
  }
  if (!result.verify.ran) {
    return retryOrFail(task, attempt, formatRunFeedback(run), 'exit criteria were not run');
  }
  if (!result.verify.passed) {
    const failing = result.verify.criteria.filter(isFailing);
    const first = failing[0];
    const firstText = first
      ? ` (${clip(first.command, 200)} ${first.timedOut ? 'timed out' : `exited ${first.exitCode ?? 'without a code'}`})`
      : '';
    return retryOrFail(
      task,
      attempt,
      formatCriteriaFeedback(result.verify.criteria),
      `exit criteria failed: ${failing.length} of ${result.verify.criteria.length}${firstText}`,
    );
  }
  const verdict = result.verdict;
  if (verdict) {
    if (verdict.score < task.minScore || verdict.verdict === 'reject') {
      return retryOrFail(
        task,
        attempt,
        formatCriticFeedback(verdict, task.minScore),
        `critic ${verdict.verdict === 'reject' ? 'rejected' : 'scored'} ${formatScore(verdict.score)}/10 (min ${task.minScore})`,
      );
    }
    return { action: 'approve', score: verdict.score };
  }
  // The critic is the second gate: when the task asks for one and no verdict came, nothing is
  // approved on the exit criteria alone.
  if (task.critic) {
    const why = result.error ?? (result.ran ? 'its result held no readable verdict' : 'it did not run');
    return retryOrFail(
      task,
      attempt,
      `The exit criteria passed, but the review gave no verdict (${why}). Make sure the change is complete and your result file describes it.`,
      `critic gave no verdict: ${clip(why, 200)}`,
    );
  }
  return { action: 'approve' };
}

/**
 * `approve: human`: an attempt its gates approved is held for a person instead of merged. Anything
 * short of approval (and a cancel) goes on as decided.
 */
export function holdForPerson(decision: GateDecision, task: Pick<TaskSpec, 'approval'>): GateDecision {
  if (decision.action !== 'approve' || !task.approval) return decision;
  return { action: 'hold', ...(decision.score !== undefined ? { score: decision.score } : {}) };
}

/**
 * What a person's verdict (or the approval timeout) makes of a held attempt. An approval then
 * merges like any other (decideAfterMerge); a rejection is a failed attempt whose feedback is the
 * person's words; a timeout fails or skips the task, as its `on_approve_timeout` says.
 */
export function decideHeld(
  verdict: PersonVerdict,
  held: CriticResult,
  task: Pick<TaskSpec, 'maxAttempts' | 'backoffMs' | 'approval'>,
  attempt: number,
): GateDecision {
  const score = held.verdict?.score;
  switch (verdict.verdict) {
    case 'approve':
      return { action: 'approve', ...(score !== undefined ? { score } : {}) };
    case 'reject': {
      const who = verdict.by ?? 'a person';
      const why = verdict.reason?.trim() || 'no reason given';
      return retryOrFail(
        task,
        attempt,
        `The exit criteria and the review passed, but ${who} rejected the work before it merged:\n\n${why}\n\nChange the work to answer this.`,
        `rejected by ${who}: ${clip(why, 200)}`,
      );
    }
    case 'timeout': {
      const waited = task.approval?.timeoutMs;
      const reason = `no approval within ${waited !== undefined ? formatDurationSetting(waited) : 'its time'}`;
      return task.approval?.onTimeout === 'skip'
        ? { action: 'skip', reason }
        : { action: 'fail', feedback: reason, reason };
    }
  }
}

/** The record of a verdict kept on the task (status, board) and its wait. */
export function approvalRecord(verdict: PersonVerdict, heldAt: string | null | undefined): ApprovalRecord {
  const waitedMs = heldAt ? Math.max(0, Date.parse(verdict.at) - Date.parse(heldAt)) : 0;
  return {
    verdict:
      verdict.verdict === 'approve' ? 'approved' : verdict.verdict === 'reject' ? 'rejected' : 'timed out',
    by: verdict.by ?? null,
    at: verdict.at,
    ...(verdict.reason ? { reason: verdict.reason } : {}),
    waitedMs: Number.isFinite(waitedMs) ? waitedMs : 0,
  };
}

/** What integrating an approved attempt into the mission's branch came to. */
export type MergeOutcome =
  | { readonly ok: true; readonly commit?: string }
  | {
      readonly ok: false;
      readonly conflict: string;
      readonly files: readonly string[];
      /** The work holds paths git refuses (`conflict` names each and why): nothing was merged. */
      readonly refused?: true;
    };

/**
 * An approval stands once its work is in the integration branch. A conflict is a failed attempt
 * like any other: the next one starts from the current integration branch, which holds the other
 * tasks' changes to the same files, and its prompt names those files.
 */
export function decideAfterMerge(
  decision: GateDecision,
  merge: MergeOutcome,
  task: Pick<TaskSpec, 'maxAttempts' | 'backoffMs'>,
  attempt: number,
): GateDecision {
  if (decision.action !== 'approve' || merge.ok) return decision;
  const shown = merge.files.slice(0, 10).join(', ');
  const more = merge.files.length > 10 ? ` and ${merge.files.length - 10} more` : '';
  if (merge.refused) {
    return retryOrFail(
      task,
      attempt,
      formatRefusedFeedback(merge.conflict),
      `git refuses ${merge.files.length === 1 ? 'a path' : 'paths'} in the work: ${shown}${more}`,
    );
  }
  return retryOrFail(
    task,
    attempt,
    formatConflictFeedback(merge.conflict, merge.files),
    `merge conflict in ${shown}${more}`,
  );
}

/** The work held paths git refuses: each named with git's reason (`conflict`), none merged. */
export function formatRefusedFeedback(refusals: string): string {
  return [
    'Your work passed its checks, but it holds paths git refuses, so none of it was merged:',
    refusals
      .split('\n')
      .map((line) => `- ${line}`)
      .join('\n'),
    'Write the work under other names.',
  ].join('\n\n');
}

export function formatConflictFeedback(conflict: string, files: readonly string[]): string {
  const list = files.map((file) => `- \`${file}\``).join('\n');
  return [
    'Your work passed its checks, but merging it into the integration branch conflicted with work another task integrated meanwhile, in these files:',
    list,
    fence(conflict.trim()),
    'This attempt starts from the current integration branch, which holds those changes: make your change on top of them.',
  ].join('\n\n');
}

/** What a gate job that failed for good came to: its last error and how often BullMQ ran it. */
export interface GateJobFailure {
  /** The error of the job's last try (BullMQ's `failedReason`), empty when none was recorded. */
  readonly cause: string;
  readonly tries: number;
  readonly cancelled: boolean;
}

/**
 * The gate job itself failed for good: every try threw for a reason other than a merge conflict
 * (a git error, a broken mission repo, a fault in the gate). No attempt gets past a gate that
 * cannot run, so the task fails, naming the gate and the cause's last line, and the mission goes
 * on without it; in a cancelled mission the task is cancelled like its siblings.
 */
export function decideGateJobFailed(failure: GateJobFailure): GateDecision {
  if (failure.cancelled) return { action: 'cancel' };
  const lines = failure.cause
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
  const last = lines.at(-1) ?? 'no error was recorded';
  const tries = `${failure.tries} ${failure.tries === 1 ? 'try' : 'tries'}`;
  return {
    action: 'fail',
    feedback: failure.cause.trim() || last,
    reason: `gate failed after ${tries}: ${clip(last, 300)}`,
  };
}

/** The spend that stops retries: a retry once budget_usd is spent fails the task instead. */
export interface BudgetState {
  readonly budgetUsd?: number;
  readonly spentUsd: number;
}

export function decideBudget(decision: GateDecision, budget: BudgetState): GateDecision {
  if (decision.action !== 'retry' || budget.budgetUsd === undefined) return decision;
  if (budget.spentUsd < budget.budgetUsd) return decision;
  return {
    action: 'fail',
    feedback: decision.feedback,
    reason: `budget of $${budget.budgetUsd} spent ($${budget.spentUsd.toFixed(2)}); no new attempt`,
  };
}

/** The task fields a decision writes in the same transition that settles the attempt. */
export function settlePatch(decision: GateDecision, result: CriticResult): Partial<TaskState> {
  const run = result.verify.run;
  const score = result.verdict ? { score: result.verdict.score } : {};
  switch (decision.action) {
    case 'approve':
      return {
        score: result.verdict?.score ?? null,
        error: null,
        feedback: null,
        handoff: { summary: run.summary, outputs: run.outputs ?? '', findings: run.findings ?? '' },
      };
    case 'retry':
      return { feedback: decision.feedback, error: decision.reason, ...score };
    case 'fail':
      // The reason is the one line a person reads in `status`; the whole feedback stays beside it.
      return { error: decision.reason.slice(0, 500), feedback: decision.feedback, ...score };
    case 'pause':
      return { questions: run.questions ?? null, error: null };
    case 'hold':
      return {
        score: result.verdict?.score ?? null,
        error: null,
        feedback: null,
        held: JSON.stringify(result),
      };
    case 'skip':
      return { error: decision.reason.slice(0, 500), held: null };
    case 'cancel':
      return { error: 'mission cancelled' };
  }
}

/** The one line the audit trail, the event stream and the log say about a decision. */
export function describeDecision(decision: GateDecision): string {
  switch (decision.action) {
    case 'approve':
      return `approved${decision.score !== undefined ? ` (score ${decision.score})` : ''}`;
    case 'retry':
      return `retry in ${Math.round(decision.delayMs / 1000)}s: ${decision.reason}`;
    case 'fail':
      return `failed: ${decision.reason}`;
    case 'pause':
      return `paused: ${decision.reason}`;
    case 'hold':
      return `passed its gates${decision.score !== undefined ? ` (score ${decision.score})` : ''}; waiting for a person's approval`;
    case 'skip':
      return `skipped: ${decision.reason}`;
    case 'cancel':
      return 'cancelled';
  }
}

/** Exponential backoff from the task's base delay, capped so a retry is never hours away. */
export function retryDelayMs(backoffMs: number, attempt: number): number {
  return Math.min(backoffMs * 2 ** Math.max(0, attempt - 1), MAX_RETRY_DELAY_MS);
}

function retryOrFail(
  task: Pick<TaskSpec, 'maxAttempts' | 'backoffMs'>,
  attempt: number,
  feedback: string,
  reason: string,
): GateDecision {
  if (attempt < task.maxAttempts) {
    return { action: 'retry', feedback, delayMs: retryDelayMs(task.backoffMs, attempt), reason };
  }
  return { action: 'fail', feedback, reason: `out of attempts (${attempt}/${task.maxAttempts}): ${reason}` };
}

export function formatRunFeedback(run: RunResult): string {
  const lines = [`The previous attempt did not produce a usable result: ${run.error ?? 'the run failed'}.`];
  if (run.summary && run.summary !== run.error) lines.push(`Its result said: ${run.summary}`);
  return lines.join('\n\n');
}

export function formatCriteriaFeedback(criteria: readonly CriterionResult[]): string {
  const failing = criteria.filter(isFailing);
  const blocks = failing.map((criterion, index) => {
    const outcome = criterion.timedOut ? 'timed out' : `exit code ${criterion.exitCode ?? 'none (killed)'}`;
    const tail = outputTail(criterion.tail);
    const output = tail ? `\n\n${fence(tail)}` : ' (no output)';
    return `${index + 1}. \`${criterion.command}\`: ${outcome}${output}`;
  });
  const passed = criteria.length - failing.length;
  const header = `${failing.length} of ${criteria.length} exit criteria failed${passed > 0 ? ` (${passed} passed)` : ''}:`;
  return [header, ...blocks].join('\n\n');
}

export function formatCriticFeedback(verdict: CriticVerdict, minScore: number): string {
  const decision = verdict.verdict === 'reject' ? 'rejected the work' : 'did not approve the work';
  const header = `The reviewer scored the work ${formatScore(verdict.score)}/10 (${minScore} needed) and ${decision}.`;
  if (verdict.issues.length === 0)
    return `${header} It listed no specific issues; review the change against the task.`;
  return `${header} Issues:\n\n${verdict.issues.map((issue) => `- ${issue}`).join('\n')}`;
}

function isFailing(criterion: CriterionResult): boolean {
  return criterion.timedOut || criterion.exitCode !== 0;
}

function outputTail(tail: string): string {
  const lines = tail.trimEnd().split('\n').slice(-TAIL_LINES).join('\n');
  return lines.length > TAIL_CHARS ? `…${lines.slice(-TAIL_CHARS)}` : lines;
}

function formatScore(score: number): string {
  return Number.isInteger(score) ? String(score) : score.toFixed(1);
}

/**
 * The audit event of a gate decision: its action and what the decision itself carries (the
 * reason, a retry's delay, an approval's score), plus what only the caller knows.
 */
export function gateEvent(
  decision: GateDecision,
  extra: {
    readonly commit?: string;
    readonly escalation?: string;
    readonly approval?: ApprovalRecord['verdict'];
    readonly by?: string;
    readonly waitedMs?: number;
  } = {},
) {
  return {
    kind: 'gate' as const,
    action: decision.action,
    ...('reason' in decision ? { reason: decision.reason } : {}),
    ...(decision.action === 'retry' ? { delayMs: decision.delayMs } : {}),
    ...((decision.action === 'approve' || decision.action === 'hold') && decision.score !== undefined
      ? { score: decision.score }
      : {}),
    ...extra,
  };
}
