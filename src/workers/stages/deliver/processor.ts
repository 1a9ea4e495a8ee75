import type { Job } from 'bullmq';
import type { DeliverJobData } from '../../../shared/contracts.js';
import type { HostContext } from '../context.js';
import { missionEnded } from '../finalize/processor.js';
import { assertSigned } from '../job-guard.js';
import type { DeliverContext } from './deliver.js';
import { settle, tryDelivery } from './try-delivery.js';

/**
 * The mission's delivery job (added by finalize for a mission with `deliver:`): one try per BullMQ
 * attempt. A failure another try can help (a forge or remote that is down) is thrown back to BullMQ,
 * which tries again after its exponential backoff; one it cannot (a bad token, a protected branch)
 * and the last try's failure are recorded as final and the job completes. A host killed mid-try
 * leaves the job to another host, whose try finds the pull request the first one opened.
 */
export async function deliverMission(
  ctx: HostContext,
  job: Job<DeliverJobData>,
): Promise<{ state: string; error: string | null }> {
  assertSigned(ctx, job);
  const { missionId } = job.data;
  const tries = job.opts.attempts ?? 1;
  const lastTry = job.attemptsMade + 1 >= tries;
  const backoff =
    typeof job.opts.backoff === 'object' ? (job.opts.backoff.delay ?? 0) : (job.opts.backoff ?? 0);
  const delivery = await tryDelivery(deliverContext(ctx), missionId, {
    lastTry,
    // BullMQ's exponential backoff: delay × 2^(attempts made − 1), counted after this one.
    nextTryInMs: backoff * 2 ** job.attemptsMade,
    missions: ctx.missions,
    onEnd: (summary) => missionEnded(ctx, missionId, summary),
  });
  if (delivery.state === 'retrying')
    throw new Error(`delivery try failed, retrying: ${delivery.error ?? ''}`);
  return { state: delivery.state, error: delivery.error };
}

/**
 * A delivery job that failed for good without recording it (its tries ran out on faults outside
 * the delivery itself, a lost Redis connection, say): the delivery is reported failed, and the
 * mission's end told, so that no follower waits for ever.
 */
export async function deliverJobFailed(ctx: HostContext, job: Job<DeliverJobData>): Promise<void> {
  const { missionId } = job.data;
  const { meta } = await ctx.store.getMission(missionId);
  if (meta.delivery?.state === 'delivered' || meta.delivery?.state === 'failed') return;
  const delivery = {
    state: 'failed' as const,
    remote: meta.delivery?.remote ?? null,
    branch: meta.delivery?.branch ?? `flotilla/${missionId}`,
    pushedCommit: meta.delivery?.pushedCommit ?? null,
    pullRequest: meta.delivery?.pullRequest ?? null,
    tries: meta.delivery?.tries ?? job.attemptsMade,
    error: job.failedReason || 'the delivery job failed',
    at: new Date().toISOString(),
  };
  await ctx.store.setDelivery(missionId, delivery);
  await settle(deliverContext(ctx), missionId, delivery, {
    missions: ctx.missions,
    onEnd: (summary) => missionEnded(ctx, missionId, summary),
  });
}

export function deliverContext(ctx: HostContext): DeliverContext {
  return {
    store: ctx.store,
    cacheDir: ctx.cacheDir,
    tokens: ctx.config.forgeTokens,
    logger: ctx.logger,
    host: ctx.hostId,
  };
}
