import { DelayedError, type Job } from 'bullmq';
import { type AttemptRef, attemptJobId, finalizeJobId, JOBS } from '../shared/contracts.js';
import { FlotillaError } from '../shared/errors.js';
import { verifyPayload } from '../shared/signing.js';
import type { HostContext } from './context.js';

/** The abort reason a cancel message gives; any other reason (shutdown, lost lock) is not the task's end. */
export const MISSION_CANCELLED = 'mission cancelled';

/** Jobs whose payload fails its signature are refused, loudly, before anything runs. */
export function assertSigned(ctx: HostContext, job: Job): void {
  if (!verifyPayload(job.data as object, ctx.config.secret)) {
    ctx.logger.error(
      { jobId: job.id, queue: job.queueName },
      'refusing job: payload signature missing or wrong',
    );
    throw new FlotillaError('job/unsigned', `job ${job.id}: payload signature missing or wrong; refused`);
  }
  // The id is a function of the signed data, so a captured payload re-added under another id
  // (to run an attempt twice) is refused too; under its own id BullMQ keeps the first job.
  if (ctx.config.secret && job.id !== expectedJobId(job)) {
    ctx.logger.error(
      { jobId: job.id, queue: job.queueName },
      'refusing job: id does not match its signed payload',
    );
    throw new FlotillaError('job/unsigned', `job ${job.id}: id does not match its signed payload; refused`);
  }
}

function expectedJobId(job: Job): string | undefined {
  const data = job.data as Partial<AttemptRef>;
  if (job.name === JOBS.finalize) return data.missionId ? finalizeJobId(data.missionId) : undefined;
  const stage = Object.values(JOBS).find((name) => name === job.name);
  if (!stage || stage === JOBS.finalize || !data.missionId || !data.taskId || !data.attempt) return undefined;
  return attemptJobId(data.missionId, data.taskId, data.attempt, stage);
}

/** Moves the job back to its queue for `delayMs` without spending a task attempt. */
export async function giveBack(job: Job, token: string | undefined, delayMs: number): Promise<never> {
  await job.moveToDelayed(Date.now() + delayMs, token);
  throw new DelayedError();
}
