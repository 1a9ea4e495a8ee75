import type { Job } from 'bullmq';
import { checkpointRef, type RunJobData } from '../../../shared/contracts.js';
import type { Logger } from '../../../shared/logger.js';
import type { TaskSpec } from '../../../shared/mission.js';
import type { RepoCache } from '../../workspace/repo-cache.js';
import { fetchCheckpoint, leaseAtCheckpoint } from '../../workspace/resume-checkpoint.js';
import { leaseForRun, type RunCheckout } from '../../workspace/stage-checkout.js';
import { poolPlace } from '../checkout.js';
import type { HostContext } from '../context.js';
import { recordStage } from '../record.js';
import { decideResume, mayHaveCheckpoint } from './checkpoint-plan.js';

export interface RunCheckoutInput {
  readonly job: Job<RunJobData>;
  readonly cache: RepoCache;
  readonly task: TaskSpec;
  readonly cli: string;
  readonly intervalMs: number;
  readonly signal: AbortSignal | undefined;
  readonly log: Logger;
}

export interface LeasedRunCheckout extends RunCheckout {
  /** Set when the checkout holds the checkpoint of an interrupted run of this attempt. */
  readonly resumed?: { readonly commit: string; readonly tree: string };
}

/**
 * The run's checkout: at the integration branch's tip, or, for a run job delivered again after
 * its run was interrupted, at the base that run started from with its last checkpoint's files in
 * the tree. Nothing about a checkpoint can fail the run: one that cannot be found or restored is
 * recorded, and the run starts from the tip as it would have without checkpoints.
 */
export async function leaseRunCheckout(
  ctx: HostContext,
  input: RunCheckoutInput,
): Promise<LeasedRunCheckout> {
  const { job, cache, task, signal } = input;
  const { missionId } = job.data;
  const resumed = mayHaveCheckpoint(job, input.intervalMs) ? await tryResume(ctx, input) : undefined;
  if (!resumed) return leaseForRun({ cache, place: poolPlace(ctx), missionId, setup: task.setup, signal });
  try {
    await recordStage(ctx, job.data, 'run', {
      cli: input.cli,
      event: { kind: 'resumed', commit: resumed.resumed.commit, baseCommit: resumed.baseCommit },
    });
  } catch (error) {
    await resumed.lease.release();
    throw error;
  }
  return resumed;
}

async function tryResume(
  ctx: HostContext,
  input: RunCheckoutInput,
): Promise<(LeasedRunCheckout & Required<Pick<LeasedRunCheckout, 'resumed'>>) | undefined> {
  const { job, cache, signal } = input;
  const { missionId, taskId, attempt } = job.data;
  const ref = checkpointRef(missionId, taskId, attempt);
  try {
    const decision = decideResume(await fetchCheckpoint(cache, ref));
    if (!decision.resume && decision.ignored) throw new Error(`${ref}: ${decision.ignored}`);
    if (!decision.resume) return undefined;
    const checkout = await leaseAtCheckpoint({
      cache,
      place: poolPlace(ctx),
      setup: input.task.setup,
      signal,
      checkpoint: decision.checkpoint,
    });
    input.log.info({ checkpoint: decision.checkpoint.commit, ref }, 'resuming from a checkpoint');
    return { ...checkout, resumed: { commit: decision.checkpoint.commit, tree: decision.tree } };
  } catch (error) {
    if (signal?.aborted) throw error;
    const reason = error instanceof Error ? error.message : String(error);
    input.log.warn({ err: reason, ref }, 'checkpoint not resumed from; starting from the base');
    await recordStage(ctx, job.data, 'run', {
      cli: input.cli,
      event: { kind: 'checkpoint-failed', action: 'resume', reason: reason.slice(0, 500) },
    });
    return undefined;
  }
}
