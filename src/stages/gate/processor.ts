import type { Job } from 'bullmq';
import { enqueueAttempt, enqueueAttempts, enqueueFinalize } from '../../queue/enqueue.js';
import type { CriticResult, GateDecision, StageJobData } from '../../shared/contracts.js';
import { FlotillaError } from '../../shared/errors.js';
import type { TaskSpec } from '../../shared/mission.js';
import type { SettleOutcome } from '../../store/mission-store.js';
import { integrateAttempt } from '../../workspace/integrate.js';
import { openRepoCache } from '../../workspace/repo-cache.js';
import { type HostContext, missionRecord } from '../context.js';
import { assertSigned } from '../job-guard.js';
import { childValue, ignoredChildFailure, lostRun } from '../verify/processor.js';
import {
  decideAfterMerge,
  decideBudget,
  decideGate,
  describeDecision,
  type MergeOutcome,
  settlePatch,
} from './decide.js';

/**
 * The gate: the attempt's results decide approve / retry / fail (pure functions in decide.ts);
 * approval merges the branch into the integration branch first, so a conflict is a failed attempt
 * like any other. The state transition is one Lua script, applied once per attempt however often
 * this job runs; its effects (next flows, finalize) are idempotent adds with deterministic job ids.
 */
export async function gateAttempt(ctx: HostContext, job: Job<StageJobData>): Promise<{ action: string }> {
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
  if (decision.action === 'approve') {
    decision = decideAfterMerge(
      decision,
      await merge(ctx, meta.repo, { missionId, taskId, attempt }, result),
      task,
      attempt,
    );
  }
  if (decision.action === 'retry' && spec.budgetUsd !== undefined) {
    // Read fresh: other tasks spend while this one ran.
    decision = decideBudget(decision, {
      budgetUsd: spec.budgetUsd,
      spentUsd: await ctx.store.addCost(missionId, 0),
    });
  }

  const now = new Date().toISOString();
  const patch = settlePatch(decision, result);
  const outcome = await ctx.store.settle(missionId, taskId, attempt, decision.action, patch, now);
  // Effects are idempotent, so they run on replays too (a host may have died right after the
  // script). What lets work start comes first; what only records (log, audit, events) after it,
  // so a released task waits for nothing.
  const released = await startNext(ctx, { missionId, task, attempt, tasks: spec.tasks }, decision, outcome);
  if (outcome.applied)
    await record(ctx, { missionId, taskId, attempt, cli: result.verify.run.cli }, decision, outcome, now);
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

async function merge(
  ctx: HostContext,
  repo: string,
  ref: { missionId: string; taskId: string; attempt: number },
  result: CriticResult,
): Promise<MergeOutcome> {
  const { missionId, taskId, attempt } = ref;
  const cache = await openRepoCache({ repo, cacheDir: ctx.cacheDir });
  return integrateAttempt({
    cache,
    missionId,
    branch: result.verify.run.branch ?? '',
    // Only the commit the completed run job returned; anything else on the branch is refused.
    ...(result.verify.run.commit ? { commit: result.verify.run.commit } : {}),
    message: `flotilla: merge ${taskId} (attempt ${attempt})`,
    workRoot: ctx.workRoot,
  });
}

/** The audit row and events of a transition that applied (a replay writes none of them again). */
async function record(
  ctx: HostContext,
  ref: { missionId: string; taskId: string; attempt: number; cli: string },
  decision: GateDecision,
  outcome: SettleOutcome,
  at: string,
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
  await ctx.store.audit(missionId, {
    at,
    taskId,
    attempt,
    stage: 'gate',
    host: ctx.hostId,
    cli: ref.cli,
    event: {
      kind: 'gate',
      action: decision.action,
      ...('reason' in decision ? { reason: decision.reason } : {}),
      ...(decision.action === 'retry' ? { delayMs: decision.delayMs } : {}),
      ...(decision.action === 'approve' && decision.score !== undefined ? { score: decision.score } : {}),
    },
  });
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
    await enqueueAttempt(ctx, { missionId, task, attempt: attempt + 1, delayMs: decision.delayMs });
  }
  return routed.length > 0 ? released : [];
}
