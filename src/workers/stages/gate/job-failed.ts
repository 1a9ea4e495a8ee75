import type { Job } from 'bullmq';
import type { StageJobData, TaskState } from '../../../shared/contracts.js';
import { enqueueFinalize } from '../../../shared/queue/enqueue.js';
import type { AuditInput, SettleOutcome } from '../../../shared/store/mission-store.js';
import type { HostContext } from '../context.js';
import { signatureProblem } from '../job-guard.js';
import { notifySettled } from '../notify/occurrences.js';
import { decideGateJobFailed, gateEvent } from './decide.js';
import { recordSettled } from './processor.js';

/**
 * A gate job that failed for good: BullMQ spent its attempts on errors other than a merge
 * conflict (a git error, a broken mission repo, a fault in the gate), or failed it for stalling
 * too often. Nothing else would ever settle its task, and the mission would run for ever; this
 * settles the attempt as failed (decideGateJobFailed), with its audit row, skips the dependents
 * and lets the rest of the mission go on.
 *
 * Two callers: the mission worker's `failed` event on the host whose try was the last, and the
 * sweep (host/sweep.ts) for a gate job it finds in BullMQ's failed set while its task is not
 * terminal (the host died between the job failing and the event's handler, or the job failed by
 * stalling, which no worker hears about). Both may run for one job: the settle script applies once
 * per attempt and never to a task already terminal, so the second does nothing, an approved task
 * is never failed afterwards, and a task that moved on to a later attempt is left alone.
 */
export async function settleFailedGate(
  ctx: HostContext,
  job: Job<StageJobData>,
): Promise<SettleOutcome | null> {
  // A forged job must not be able to fail a task either.
  const problem = signatureProblem(ctx, job);
  if (problem) {
    ctx.logger.error({ jobId: job.id }, `not settling failed gate job: ${problem}`);
    return null;
  }
  const { missionId, taskId, attempt } = job.data;
  const decision = decideGateJobFailed({
    cause: job.failedReason ?? '',
    tries: job.attemptsMade,
    cancelled: await ctx.store.isCancelled(missionId),
  });
  const patch: Partial<TaskState> =
    decision.action === 'fail'
      ? { error: decision.reason.slice(0, 500), feedback: decision.feedback }
      : { error: 'mission cancelled' };
  const now = new Date().toISOString();
  const entry: AuditInput = {
    at: now,
    taskId,
    attempt,
    stage: 'gate',
    host: ctx.hostId,
    event: gateEvent(decision),
  };
  const outcome = await ctx.store.settle(missionId, taskId, attempt, decision.action, patch, now, entry);
  if (outcome.applied) await recordSettled(ctx, { missionId, taskId, attempt }, decision, outcome);
  await notifySettled(ctx, { missionId, taskId, attempt }, outcome);
  if (outcome.settled) await enqueueFinalize(ctx, missionId);
  return outcome;
}

/**
 * The mission worker's `failed` event for a gate job. It fires for every failed try; only a job
 * that BullMQ moved to its failed set (no try left, or an unrecoverable error) settles the task.
 */
export async function gateJobFailed(ctx: HostContext, job: Job<StageJobData>): Promise<void> {
  if ((await job.getState()) !== 'failed') return;
  await settleFailedGate(ctx, job);
}
