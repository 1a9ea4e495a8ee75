import { DelayedError, type Job, WaitingError } from 'bullmq';
import { type AttemptRef, attemptJobId, deliverJobId, finalizeJobId, JOBS } from '../../shared/contracts.js';
import { FlotillaError } from '../../shared/errors.js';
import { deliveryId } from '../../shared/notify.js';
import type { NotifyJobData } from '../../shared/queue/notify.js';
import { verifyPayload } from '../../shared/signing.js';
import type { HostContext } from './context.js';

/** The abort reason a cancel message gives; any other reason (shutdown, lost lock) is not the task's end. */
export const MISSION_CANCELLED = 'mission cancelled';

/** Jobs whose payload fails its signature are refused, loudly, before anything runs. */
export function assertSigned(ctx: HostContext, job: Job): void {
  const problem = signatureProblem(ctx, job);
  if (!problem) return;
  ctx.logger.error({ jobId: job.id, queue: job.queueName }, `refusing job: ${problem}`);
  throw new FlotillaError('job/unsigned', `job ${job.id}: ${problem}; refused`);
}

/**
 * What is wrong with a job's signature, or null when nothing is: a payload signature missing or
 * wrong, or (with a secret) an id that is not the one its signed data gives. The id is a function
 * of the signed data, so a captured payload re-added under another id (to run an attempt twice)
 * is refused too; under its own id BullMQ keeps the first job.
 */
export function signatureProblem(ctx: Pick<HostContext, 'config'>, job: Job): string | null {
  if (!verifyPayload(job.data as object, ctx.config.secret)) return 'payload signature missing or wrong';
  if (ctx.config.secret && job.id !== expectedJobId(job)) return 'id does not match its signed payload';
  return null;
}

function expectedJobId(job: Job): string | undefined {
  const data = job.data as Partial<AttemptRef>;
  if (job.name === JOBS.finalize) return data.missionId ? finalizeJobId(data.missionId) : undefined;
  if (job.name === JOBS.notify) {
    const hook = job.data as Partial<NotifyJobData>;
    return hook.missionId && typeof hook.index === 'number' && hook.key
      ? deliveryId(hook.missionId, hook.index, hook.key)
      : undefined;
  }
  if (job.name === JOBS.deliver) return data.missionId ? deliverJobId(data.missionId) : undefined;
  const stage = Object.values(JOBS).find((name) => name === job.name);
  if (
    !stage ||
    stage === JOBS.finalize ||
    stage === JOBS.notify ||
    stage === JOBS.deliver ||
    !data.missionId ||
    !data.taskId ||
    !data.attempt
  )
    return undefined;
  return attemptJobId(data.missionId, data.taskId, data.attempt, stage);
}

/** Moves the job back to its queue for `delayMs` without spending a task attempt. */
export async function giveBack(job: Job, token: string | undefined, delayMs: number): Promise<never> {
  await job.moveToDelayed(Date.now() + delayMs, token);
  throw new DelayedError();
}

/**
 * Hands a job this host cannot start now straight back to its queue, in its place (the front of
 * its priority), for another host: no attempt spent, no delay. BullMQ's move back to the
 * prioritized set adds no marker, so a host blocked waiting on the queue would not see the job
 * until its block timed out; the marker is added here, as BullMQ adds it for a new job.
 */
export async function handBack(
  ctx: Pick<HostContext, 'queues'>,
  job: Job,
  token: string | undefined,
): Promise<never> {
  await job.moveToWait(token);
  const queue = ctx.queues.get(job.queueName);
  await ctx.queues.connection.zadd(queue.toKey('marker'), 0, '0');
  throw new WaitingError();
}
