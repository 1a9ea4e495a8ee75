import type { Job } from 'bullmq';
import { enqueueAttempt, enqueueAttempts } from '../producer/enqueue.js';
import {
  type CriticResult,
  finalizeJobId,
  type GateDecision,
  JOBS,
  QUEUES,
  type StageJobData,
} from '../shared/contracts.js';
import { FlotillaError } from '../shared/errors.js';
import type { SettleAction } from '../shared/mission-store.js';
import { RETENTION } from '../shared/queues.js';
import { withSignature } from '../shared/signing.js';
import { decideGate } from './gate-decision.js';
import { type HostContext, loadMission } from './host-context.js';
import { assertSigned } from './job-guard.js';
import { childValue, ignoredChildFailure, lostRun } from './verify-attempt.js';
import { integrateAttempt } from './workspace/integrate.js';
import { openRepoCache } from './workspace/repo-cache.js';

/**
 * The gate: the attempt's results decide approve / retry / fail (a pure function); approval merges
 * the branch into the integration branch first, so a conflict is a failed attempt like any other.
 * The state transition is one Lua script, applied once per attempt however often this job runs;
 * its effects (next flows, finalize) are idempotent adds with deterministic job ids.
 */
export async function gateAttempt(ctx: HostContext, job: Job<StageJobData>): Promise<{ action: string }> {
  assertSigned(ctx, job);
  const { missionId, taskId, attempt } = job.data;
  const { spec, meta } = await loadMission(ctx, missionId);
  const task = spec.tasks.find((t) => t.id === taskId);
  if (!task) throw new FlotillaError('internal', `mission ${missionId} has no task ${taskId}`);
  const log = ctx.logger.child({ missionId, taskId, attempt, host: ctx.hostId });

  const result: CriticResult = (await childValue<CriticResult>(job)) ?? {
    verify: lostRun((await ignoredChildFailure(job)) ?? 'the critic job failed'),
    ran: false,
  };
  const cancelled = await ctx.store.isCancelled(missionId);
  let decision: GateDecision = decideGate({ result, task, attempt, cancelled });

  if (decision.action === 'approve') {
    const cache = await openRepoCache({ repo: meta.repo, cacheDir: ctx.cacheDir });
    const merged = await integrateAttempt({
      cache,
      missionId,
      branch: result.verify.run.branch ?? '',
      ...(result.verify.run.commit ? { commit: result.verify.run.commit } : {}),
      message: `flotilla: merge ${taskId} (attempt ${attempt})`,
      workRoot: ctx.workRoot,
    });
    if (!merged.ok) {
      const feedback = `Merging your branch into the mission's integration branch conflicted:\n${merged.conflict}\nRebase your work on the current integration branch.`;
      decision =
        attempt < task.maxAttempts
          ? {
              action: 'retry',
              feedback,
              delayMs: task.backoffMs * 2 ** (attempt - 1),
              reason: 'merge conflict',
            }
          : { action: 'fail', feedback, reason: 'merge conflict' };
    }
  }
  if (decision.action === 'retry' && spec.budgetUsd !== undefined) {
    const costNow = await ctx.store.addCost(missionId, 0);
    if (costNow >= spec.budgetUsd) {
      decision = {
        action: 'fail',
        feedback: decision.feedback,
        reason: `budget of $${spec.budgetUsd} spent ($${costNow.toFixed(2)}); no new attempt`,
      };
    }
  }

  const now = new Date().toISOString();
  const action: SettleAction = decision.action;
  const run = result.verify.run;
  const patch: Record<string, unknown> = {};
  if (decision.action === 'approve') {
    patch.score = result.verdict?.score ?? null;
    patch.error = null;
    patch.feedback = null;
    patch.handoff = { summary: run.summary, outputs: run.outputs ?? '', findings: run.findings ?? '' };
  } else if (decision.action === 'retry') {
    patch.feedback = decision.feedback;
    patch.error = decision.reason;
    if (result.verdict) patch.score = result.verdict.score;
  } else if (decision.action === 'fail') {
    // The reason is the one line a person reads in `status`; the whole feedback stays beside it.
    patch.error = decision.reason.slice(0, 500);
    patch.feedback = decision.feedback;
    if (result.verdict) patch.score = result.verdict.score;
  } else if (decision.action === 'pause') {
    patch.questions = run.questions ?? null;
    patch.error = null;
  } else {
    patch.error = 'mission cancelled';
  }
  const outcome = await ctx.store.settle(missionId, taskId, attempt, action, patch as never, now);
  // Effects are idempotent, so they run on replays too (a host may have died right after the
  // script). What lets work start comes first — the released tasks' flows, the next attempt —
  // and what only records (log, audit, events) after, so a release waits for nothing.
  const released = outcome.released.flatMap((id) => spec.tasks.filter((t) => t.id === id));
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
  if (outcome.applied) {
    log.info({ action, released: outcome.released, skipped: outcome.skipped }, `gate: ${describe(decision)}`);
    await ctx.store.audit(missionId, {
      at: now,
      taskId,
      attempt,
      stage: 'gate',
      host: ctx.hostId,
      cli: run.cli,
      message: describe(decision),
    });
    await ctx.store.emit({
      missionId,
      taskId,
      attempt,
      type: 'task',
      status: outcome.taskStatus,
      message: describe(decision),
    });
    for (const skipped of outcome.skipped) {
      await ctx.store.emit({
        missionId,
        taskId: skipped,
        type: 'task',
        status: outcome.missionStatus === 'cancelled' ? 'cancelled' : 'skipped',
        message: `skipped: dependency ${taskId} ${action === 'cancel' ? 'cancelled' : 'failed'}`,
      });
    }
  }
  // Nothing was added to a mission cancelled meanwhile.
  for (const releasedTask of routed.length > 0 ? released : []) {
    await ctx.store.emit({
      missionId,
      taskId: releasedTask.id,
      attempt: 1,
      type: 'task',
      status: 'queued',
      message: `released: all dependencies approved`,
    });
  }
  if (outcome.settled) await enqueueFinalize(ctx, missionId);
  return { action };
}

export async function enqueueFinalize(
  ctx: Pick<HostContext, 'queues' | 'config'>,
  missionId: string,
): Promise<void> {
  await ctx.queues.get(QUEUES.mission).add(JOBS.finalize, withSignature({ missionId }, ctx.config.secret), {
    jobId: finalizeJobId(missionId),
    ...RETENTION,
    attempts: 5,
  });
}

function describe(decision: GateDecision): string {
  switch (decision.action) {
    case 'approve':
      return `approved${decision.score !== undefined ? ` (score ${decision.score})` : ''}`;
    case 'retry':
      return `retry in ${Math.round(decision.delayMs / 1000)}s: ${decision.reason}`;
    case 'fail':
      return `failed: ${decision.reason}`;
    case 'pause':
      return `paused: ${decision.reason}`;
    case 'cancel':
      return 'cancelled';
  }
}
