import { Job } from 'bullmq';
import {
  attemptJobId,
  finalizeJobId,
  QUEUES,
  type StageJobData,
  type TaskState,
  TERMINAL_TASK_STATUSES,
} from '../../shared/contracts.js';
import type { TaskSpec } from '../../shared/mission.js';
import { enqueueAttempts, enqueueFinalize } from '../../shared/queue/enqueue.js';
import type { HostContext } from '../stages/context.js';
import { settleFailedGate } from '../stages/gate/job-failed.js';

/** How many of the newest missions a sweep looks at. */
const SWEEP_WINDOW = 500;

/**
 * The safety net for a process that died between writing mission state and adding the jobs that
 * carry it on (a producer killed mid-submit, a host killed after a transition whose gate job was
 * then lost with Redis data): a task that is queued or retrying with no job for its attempt gets
 * one, and a finished mission with no finalize job gets one. It also settles a task whose gate job
 * for its current attempt failed for good without its task being settled (the host died before
 * its `failed` handler ran, or BullMQ failed the job for stalling; stages/gate/job-failed.ts).
 * Adds are idempotent (deterministic ids) and settling applies once per attempt, so two hosts
 * sweeping at once do no harm; a lock keeps it to one host at a time anyway.
 */
export async function sweepMissions(ctx: HostContext, lockMs: number): Promise<{ repaired: string[] }> {
  if (!(await ctx.store.tryLock('sweep', ctx.hostId, lockMs))) return { repaired: [] };
  const repaired: string[] = [];
  const missionQueue = ctx.queues.get(QUEUES.mission);
  for (const id of await ctx.store.listMissions(SWEEP_WINDOW)) {
    const record = await ctx.store.getMission(id).catch(() => null);
    if (!record) continue;
    if (record.meta.status !== 'running') {
      const summary = await ctx.store.getMetaField(id, 'summary');
      if (summary === null && !(await Job.fromId(missionQueue, finalizeJobId(id)))) {
        await enqueueFinalize(ctx, id);
        repaired.push(`${id}: finalize`);
      }
      continue;
    }
    const states = await ctx.store.getTasks(id);
    // In cancelled missions too: a task whose gate failed for good would keep one from ending.
    for (const taskId of await settleFailedGates(ctx, id, record.spec.tasks, states)) {
      repaired.push(`${id}/${taskId}: failed gate settled`);
    }
    if (record.meta.cancelled) continue;
    const waiting = record.spec.tasks.flatMap((task) => {
      const state = states[task.id];
      return state && (state.status === 'queued' || state.status === 'retrying') && state.attempts >= 1
        ? [{ task, attempt: state.attempts, cli: state.escalated?.cli ?? null }]
        : [];
    });
    if (waiting.length === 0) continue;
    // Which of them have their gate job: one round trip for the mission, not a job read per task.
    const found = await ctx.store.jobsExist(
      waiting.map(({ task, attempt }) => missionQueue.toKey(attemptJobId(id, task.id, attempt, 'gate'))),
    );
    const lost = waiting.filter((_, i) => !found[i]);
    await enqueueAttempts(ctx, id, lost);
    for (const { task, attempt } of lost) repaired.push(`${id}/${task.id} a${attempt}`);
  }
  if (repaired.length > 0) ctx.logger.warn({ repaired }, 'sweep: repaired state a crashed process left');
  return { repaired };
}

/**
 * The tasks of a mission, in flight, whose gate job for their current attempt is in BullMQ's
 * failed set: each is settled as its gate's `failed` handler would have. Returns those settled.
 */
async function settleFailedGates(
  ctx: HostContext,
  missionId: string,
  tasks: readonly TaskSpec[],
  states: Readonly<Record<string, TaskState>>,
): Promise<string[]> {
  const missionQueue = ctx.queues.get(QUEUES.mission);
  const inFlight = tasks.flatMap((task) => {
    const state = states[task.id];
    return state &&
      state.attempts >= 1 &&
      state.status !== 'pending' &&
      state.status !== 'needs_input' &&
      state.status !== 'awaiting_approval' &&
      !TERMINAL_TASK_STATUSES.includes(state.status)
      ? [{ taskId: task.id, jobId: attemptJobId(missionId, task.id, state.attempts, 'gate') }]
      : [];
  });
  // One round trip for the mission; a job is read only when it is in the failed set.
  const failed = await ctx.store.jobsFailed(
    missionQueue.toKey('failed'),
    inFlight.map((t) => t.jobId),
  );
  const settled: string[] = [];
  for (const [i, { taskId, jobId }] of inFlight.entries()) {
    if (!failed[i]) continue;
    const job = await Job.fromId<StageJobData>(missionQueue, jobId);
    if (job && (await settleFailedGate(ctx, job))?.applied) settled.push(taskId);
  }
  return settled;
}
