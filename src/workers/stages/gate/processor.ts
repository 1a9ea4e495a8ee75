import type { Job } from 'bullmq';
import type { CriticResult, GateDecision, StageJobData } from '../../../shared/contracts.js';
import { FlotillaError } from '../../../shared/errors.js';
import type { TaskSpec } from '../../../shared/mission.js';
import { enqueueAttempt, enqueueAttempts, enqueueFinalize } from '../../../shared/queue/enqueue.js';
import type { AuditInput, SettleOutcome } from '../../../shared/store/mission-store.js';
import { readAgentSettings } from '../../agent/personality.js';
import { IntegrationContended } from '../../workspace/integrate.js';
import { type HostContext, missionRecord } from '../context.js';
import { assertSigned, giveBack } from '../job-guard.js';
import { childValue, ignoredChildFailure, lostRun } from '../verify/processor.js';
import {
  decideAfterMerge,
  decideBudget,
  decideGate,
  describeDecision,
  gateEvent,
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

export async function gateAttempt(
  ctx: HostContext,
  job: Job<StageJobData>,
  token?: string,
): Promise<{ action: string }> {
  assertSigned(ctx, job);
  const { missionId, taskId, attempt } = job.data;
  const { spec, meta } = await missionRecord(ctx, missionId);
  const task = spec.tasks.find((t) => t.id === taskId);
  if (!task) throw new FlotillaError('internal', `mission ${missionId} has no task ${taskId}`);

  const result: CriticResult = (await childValue<CriticResult>(job)) ?? {
    verify: lostRun((await ignoredChildFailure(job)) ?? 'the critic job failed'),
    ran: false,
  };
  const cancelled = await ctx.store.isCancelled(missionId);
  let decision = decideGate({ result, task, attempt, cancelled });
  let mergeCommit: string | undefined;
  if (decision.action === 'approve') {
    const merged = await mergeApproved(
      ctx,
      meta.repo,
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
  const patch = { ...settlePatch(decision, result), ...(escalation ? { escalated: escalation } : {}) };
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
    }),
  };
  const outcome = await ctx.store.settle(missionId, taskId, attempt, decision.action, patch, now, entry);
  // Effects are idempotent, so they run on replays too (a host may have died right after the
  // script). What lets work start comes first; what only tells (the log line, events) after it,
  // so a released task waits for nothing.
  const released = await startNext(ctx, { missionId, task, attempt, tasks: spec.tasks }, decision, outcome);
  if (outcome.applied) await recordSettled(ctx, { missionId, taskId, attempt }, decision, outcome);
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
      message: `skipped: dependency ${taskId} ${decision.action === 'cancel' ? 'cancelled' : 'failed'}`,
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
