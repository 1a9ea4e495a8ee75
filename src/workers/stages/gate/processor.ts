import type { Job } from 'bullmq';
import type {
  ApprovalJobData,
  ApprovalRecord,
  CriticResult,
  GateDecision,
  StageJobData,
} from '../../../shared/contracts.js';
import { FlotillaError } from '../../../shared/errors.js';
import type { MissionSpec, TaskSpec } from '../../../shared/mission.js';
import {
  enqueueAttempt,
  enqueueAttempts,
  enqueueFinalize,
  enqueueVerdict,
} from '../../../shared/queue/enqueue.js';
import type { AuditInput, SettleOutcome } from '../../../shared/store/mission-store.js';
import { readAgentSettings } from '../../agent/personality.js';
import { IntegrationContended } from '../../workspace/integrate.js';
import { type HostContext, missionRecord } from '../context.js';
import { assertSigned, giveBack } from '../job-guard.js';
import { notifySettled } from '../notify/occurrences.js';
import { childValue, ignoredChildFailure, lostRun } from '../verify/processor.js';
import {
  approvalRecord,
  decideAfterMerge,
  decideBudget,
  decideGate,
  decideHeld,
  describeDecision,
  gateEvent,
  holdForPerson,
  settlePatch,
} from './decide.js';
import { escalateRetry } from './escalation.js';
import { mergeApproved } from './merge.js';

/**
 * The gate: the attempt's results decide approve / retry / fail (pure functions in decide.ts);
 * approval merges the work into the integration branch first (merge.ts, batched with this host's
 * other gates for the branch), so a conflict is a failed attempt like any other. The state transition is one Lua script, applied once per attempt however often
 * this job runs; its effects (next flows, finalize) are idempotent adds with deterministic job ids.
 */
/**
 * How long a gate whose merge lost every compare-and-swap to other hosts waits before it tries
 * again, without spending one of its job's attempts: a random pause, so the gates that lost
 * together come back apart.
 */
export function contendedDelayMs(random = Math.random()): number {
  return 1_000 + Math.floor(random * 2_000);
}

/** A gate-queue job's mission and task, once its signature is checked. */
async function signedTask(ctx: HostContext, job: Job<StageJobData>) {
  assertSigned(ctx, job);
  const { missionId, taskId } = job.data;
  const { spec, meta } = await missionRecord(ctx, missionId);
  const task = spec.tasks.find((t) => t.id === taskId);
  if (!task) throw new FlotillaError('internal', `mission ${missionId} has no task ${taskId}`);
  return { spec, meta, task };
}

export async function gateAttempt(
  ctx: HostContext,
  job: Job<StageJobData>,
  token?: string,
): Promise<{ action: string }> {
  const { spec, meta, task } = await signedTask(ctx, job);
  const { missionId, attempt } = job.data;
  const result: CriticResult = (await childValue<CriticResult>(job)) ?? {
    verify: lostRun((await ignoredChildFailure(job)) ?? 'the critic job failed'),
    ran: false,
  };
  const cancelled = await ctx.store.isCancelled(missionId);
  const decision = holdForPerson(decideGate({ result, task, attempt, cancelled }), task);
  if (decision.action === 'hold') return holdAttempt(ctx, { missionId, task, attempt }, decision, result);
  return conclude(ctx, job, token, { spec, repo: meta.repo, task, attempt, result, decision });
}

/**
 * A person's verdict on an attempt held for approval (`approve: human`), or its timeout. The
 * attempt's results were kept on the task when it was held, so any host can merge it now, as the
 * gate would have; a verdict that comes after the attempt went on (cancelled, decided, timed
 * out) changes nothing.
 */
export async function verdictOnHeld(
  ctx: HostContext,
  job: Job<ApprovalJobData>,
  token?: string,
): Promise<{ action: string }> {
  const { spec, meta, task } = await signedTask(ctx, job);
  const { missionId, taskId, attempt } = job.data;
  const state = await ctx.store.getTask(missionId, taskId);
  if (state?.status !== 'awaiting_approval' || state.attempts !== attempt || !state.held) {
    return { action: 'stale' };
  }
  const held = JSON.parse(state.held) as CriticResult;
  const decision = decideHeld(job.data, held, task, attempt);
  const approval = approvalRecord(job.data, state.heldAt);
  return conclude(ctx, job, token, {
    spec,
    repo: meta.repo,
    task,
    attempt,
    result: held,
    decision,
    approval,
  });
}

/**
 * Holds an attempt its gates approved until a person decides: nothing merges and no dependent
 * starts. The results are kept on the task for the verdict's job; with `approve_timeout` a
 * delayed job stands in for a verdict that never comes. Both survive any host's crash (Redis).
 */
async function holdAttempt(
  ctx: HostContext,
  ref: { missionId: string; task: TaskSpec; attempt: number },
  decision: GateDecision,
  result: CriticResult,
): Promise<{ action: string }> {
  const { missionId, task, attempt } = ref;
  const now = new Date().toISOString();
  const entry: AuditInput = {
    at: now,
    taskId: task.id,
    attempt,
    stage: 'gate',
    host: ctx.hostId,
    cli: result.verify.run.cli,
    event: gateEvent(decision),
  };
  const patch = { ...settlePatch(decision, result), heldAt: now };
  const outcome = await ctx.store.settle(missionId, task.id, attempt, 'hold', patch, now, entry);
  if (outcome.taskStatus !== 'awaiting_approval' || outcome.attempts !== attempt) return { action: 'hold' };
  await notifySettled(ctx, { missionId, taskId: task.id, attempt }, outcome);
  const timeoutMs = task.approval?.timeoutMs;
  if (timeoutMs !== undefined) {
    // A replayed gate (its host died after the transition) adds the timeout it may have missed.
    const heldAt = outcome.applied ? now : ((await ctx.store.getTask(missionId, task.id))?.heldAt ?? now);
    const remaining = Date.parse(heldAt) + timeoutMs - Date.now();
    await enqueueVerdict(
      ctx,
      {
        missionId,
        taskId: task.id,
        attempt,
        verdict: 'timeout',
        at: new Date(Date.parse(heldAt) + timeoutMs).toISOString(),
      },
      Math.max(0, remaining),
    );
  }
  if (outcome.applied) {
    const message = `${describeDecision(decision)}: flotilla approve ${missionId} ${task.id}`;
    ctx.logger.info(
      { missionId, taskId: task.id, attempt, host: ctx.hostId, action: 'hold' },
      `gate: ${message}`,
    );
    await ctx.store.emit({
      missionId,
      taskId: task.id,
      attempt,
      type: 'task',
      status: 'awaiting_approval',
      message,
    });
  }
  return { action: 'hold' };
}

/**
 * The rest of a decision, the gate's or a person's: an approval merges first (a conflict is a
 * failed attempt), a retry checks the budget, then one transition with its audit entry, then the
 * effects.
 */
async function conclude(
  ctx: HostContext,
  job: Job<StageJobData>,
  token: string | undefined,
  input: {
    spec: MissionSpec;
    repo: string;
    task: TaskSpec;
    attempt: number;
    result: CriticResult;
    decision: GateDecision;
    approval?: ApprovalRecord;
  },
): Promise<{ action: string }> {
  const { spec, task, attempt, result, approval } = input;
  const { missionId } = job.data;
  const taskId = task.id;
  let { decision } = input;
  let mergeCommit: string | undefined;
  if (decision.action === 'approve') {
    const merged = await mergeApproved(
      ctx,
      input.repo,
      { missionId, taskId, attempt },
      result.verify.run,
    ).catch((error: unknown) => {
      // The branch was busy, the attempt is fine: try again later. Failing the job instead
      // spent its attempts and, once they were gone, left the task verifying for ever.
      if (error instanceof IntegrationContended) return giveBack(job, token, contendedDelayMs());
      throw error;
    });
    if (merged.ok) mergeCommit = merged.commit;
    decision = decideAfterMerge(decision, merged, task, attempt);
  }
  if (decision.action === 'retry' && spec.budgetUsd !== undefined) {
    // Read fresh: other tasks spend while this one ran.
    decision = decideBudget(decision, {
      budgetUsd: spec.budgetUsd,
      spentUsd: await ctx.store.addCost(missionId, 0),
    });
  }

  const now = new Date().toISOString();
  const escalation =
    decision.action === 'retry'
      ? await escalateRetry(ctx, {
          missionId,
          task,
          attempt,
          failedCli: result.verify.run.cli || null,
          baseTier: readAgentSettings(task.agent ? (spec.agents[task.agent] ?? '') : '').modelTier,
        })
      : null;
  const patch = {
    ...settlePatch(decision, result),
    ...(escalation ? { escalated: escalation } : {}),
    // The verdict is what lets a held attempt move (settle-5.lua); its results are no longer needed.
    ...(approval ? { approval, held: null } : {}),
  };
  // The audit row goes in with the transition (settle-5.lua): none is lost to a crash in between.
  const entry: AuditInput = {
    at: now,
    taskId,
    attempt,
    stage: 'gate',
    host: ctx.hostId,
    cli: result.verify.run.cli,
    event: gateEvent(decision, {
      ...(decision.action === 'approve' && mergeCommit ? { commit: mergeCommit } : {}),
      ...(escalation ? { escalation: escalation.reason } : {}),
      ...(approval ? { approval: approval.verdict, waitedMs: approval.waitedMs } : {}),
      ...(approval?.by ? { by: approval.by } : {}),
    }),
  };
  const outcome = await ctx.store.settle(missionId, taskId, attempt, decision.action, patch, now, entry);
  // Effects are idempotent, so they run on replays too (a host may have died right after the
  // script). What lets work start comes first; what only tells (the log line, events) after it,
  // so a released task waits for nothing.
  const released = await startNext(ctx, { missionId, task, attempt, tasks: spec.tasks }, decision, outcome);
  if (outcome.applied) await recordSettled(ctx, { missionId, taskId, attempt }, decision, outcome);
  await notifySettled(ctx, { missionId, taskId, attempt }, outcome);
  for (const releasedTask of released) {
    await ctx.store.emit({
      missionId,
      taskId: releasedTask.id,
      attempt: 1,
      type: 'task',
      status: 'queued',
      message: 'released: all dependencies approved',
    });
  }
  if (outcome.settled) await enqueueFinalize(ctx, missionId);
  return { action: decision.action };
}

/** The log line and events of a transition that applied (a replay sends none of them again). */
export async function recordSettled(
  ctx: HostContext,
  ref: { missionId: string; taskId: string; attempt: number },
  decision: GateDecision,
  outcome: SettleOutcome,
): Promise<void> {
  const { missionId, taskId, attempt } = ref;
  const message = describeDecision(decision);
  ctx.logger.info(
    {
      missionId,
      taskId,
      attempt,
      host: ctx.hostId,
      action: decision.action,
      released: outcome.released,
      skipped: outcome.skipped,
    },
    `gate: ${message}`,
  );
  await ctx.store.emit({ missionId, taskId, attempt, type: 'task', status: outcome.taskStatus, message });
  for (const skipped of outcome.skipped) {
    await ctx.store.emit({
      missionId,
      taskId: skipped,
      type: 'task',
      status: outcome.missionStatus === 'cancelled' ? 'cancelled' : 'skipped',
      message: `skipped: dependency ${taskId} ${decision.action === 'cancel' ? 'cancelled' : decision.action === 'skip' ? 'skipped' : 'failed'}`,
    });
  }
}

/**
 * The released dependents' flows, in one batch (one registry read, one round trip of marks and
 * checks, one MULTI; queue/enqueue.ts), and a retry's next attempt. Returns the tasks released,
 * none when the mission was cancelled meanwhile.
 */
async function startNext(
  ctx: HostContext,
  ref: { missionId: string; task: TaskSpec; attempt: number; tasks: readonly TaskSpec[] },
  decision: GateDecision,
  outcome: SettleOutcome,
): Promise<TaskSpec[]> {
  const { missionId, task, attempt } = ref;
  const released = outcome.released.flatMap((id) => ref.tasks.filter((t) => t.id === id));
  const routed = await enqueueAttempts(
    ctx,
    missionId,
    released.map((t) => ({ task: t, attempt: 1 })),
    { unlessCancelled: true },
  );
  if (
    decision.action === 'retry' &&
    (outcome.applied || outcome.attempts === attempt + 1) &&
    outcome.taskStatus === 'retrying'
  ) {
    // Read back, not recomputed: a replayed gate sends the retry where the first one decided.
    const escalated = task.escalate?.length ? (await ctx.store.getTask(missionId, task.id))?.escalated : null;
    await enqueueAttempt(ctx, {
      missionId,
      task,
      attempt: attempt + 1,
      delayMs: decision.delayMs,
      cli: escalated?.cli ?? null,
    });
  }
  return routed.length > 0 ? released : [];
}
