import type { Queue } from 'bullmq';
import { attemptJobId, QUEUES } from '../../../shared/contracts.js';
import type { TaskSpec } from '../../../shared/mission.js';
import { PRIORITY_SCORE_SCALE } from '../../../shared/queue/priority.js';
import type { RedisClient } from '../../../shared/redis.js';
import type { HostContext } from '../context.js';

/**
 * Keeping a finished run's place in its queue for its dependents.
 *
 * A run's slot frees when its CLI is done, but its dependents are released only when its verify
 * and gate have approved it, 50–300 ms later. In that gap the freed slot takes the best job
 * waiting, often a side task, and a dependent on the critical path then waits a whole task for
 * the next slot: on the scheduling benchmark's DAG that alone made 10–30 s tasks 1.16 × the lower
 * bound, FIFO's figure, with priorities working. So when a dependent would outrank every job
 * waiting, the host stops fetching from that queue until the gate has released it (at most
 * `HOLD_MAX_MS`); the run job itself completes at once, so its verify is not delayed.
 */

/**
 * The longest a host holds a queue for a run's dependents. Verify and gate take 50–300 ms on an idle
 * machine and seconds on a loaded one (2–3 s at a load of 36 here); past this, the hold is not
 * worth its idle slot. Other hosts keep serving the queue meanwhile.
 */
export const HOLD_MAX_MS = 10_000;

/** How often the hold looks whether the gate has released the dependents. */
export const HOLD_POLL_MS = 25;

export interface HoldInput {
  /** The task's review: with a critic, approval waits for an agent's review, far too long to hold. */
  readonly critic: boolean;
  /** Priorities of the dependents this approval makes ready (their other dependencies are done). */
  readonly released: readonly number[];
  /** The best priority waiting in the queue: 0 for BullMQ's plain wait list, null when none waits. */
  readonly bestWaiting: number | null;
}

/**
 * Whether to hold: only when a dependent would be released by this approval and would outrank
 * every job already waiting. With nothing waiting a released job wakes an idle worker anyway; with
 * a job as good waiting, that job deserves the slot. Pure; tested by table.
 */
export function shouldHold(input: HoldInput): boolean {
  if (input.critic || input.released.length === 0 || input.bestWaiting === null) return false;
  return Math.min(...input.released) < input.bestWaiting;
}

/** The dependents of `task` whose other dependencies are all completed, with their priorities. */
export async function releasedByApproval(
  ctx: Pick<HostContext, 'store'>,
  missionId: string,
  tasks: readonly TaskSpec[],
  taskId: string,
): Promise<{ id: string; priority: number }[]> {
  const dependents = tasks.filter((t) => t.dependsOn.includes(taskId));
  if (dependents.length === 0) return [];
  const others = [...new Set(dependents.flatMap((t) => t.dependsOn.filter((d) => d !== taskId)))];
  const states = await ctx.store.getTaskStates(missionId, others);
  const done = new Set(others.filter((_, i) => states[i]?.status === 'completed'));
  return dependents
    .filter((t) => t.dependsOn.every((d) => d === taskId || done.has(d)))
    .map((t) => ({ id: t.id, priority: t.priority ?? 0 }));
}

/** The best priority waiting in `queue` (one round trip): 0 for the plain wait list, null for none. */
export async function bestWaiting(redis: RedisClient, queue: Queue): Promise<number | null> {
  const [[, waiting], [, best]] = ((await redis
    .pipeline()
    .llen(queue.toKey('wait'))
    .zrange(queue.toKey('prioritized'), 0, 0, 'WITHSCORES')
    .exec()) ?? [
    [null, 0],
    [null, []],
  ]) as [[unknown, number], [unknown, string[]]];
  if (Number(waiting) > 0) return 0;
  const score = best?.[1];
  return score === undefined ? null : Math.floor(Number(score) / PRIORITY_SCORE_SCALE);
}

/**
 * Resolves once the gate has released `dependents` (each one's first attempt flow is in the
 * queues; a release marks the task before it adds the flow, so the mark alone is too early), once
 * the attempt ended otherwise (failed, retried, cancelled), or after `HOLD_MAX_MS`. A dependent
 * this approval releases has never run, so its flow is attempt 1's. Two reads a poll.
 */
export async function untilReleased(
  ctx: Pick<HostContext, 'store' | 'queues'>,
  ref: { readonly missionId: string; readonly taskId: string; readonly attempt: number },
  dependents: readonly string[],
  maxMs = HOLD_MAX_MS,
): Promise<void> {
  const deadline = Date.now() + maxMs;
  const missionQueue = ctx.queues.get(QUEUES.mission);
  const flows = dependents.map((id) => missionQueue.toKey(attemptJobId(ref.missionId, id, 1, 'gate')));
  while (Date.now() < deadline) {
    await new Promise((done) => setTimeout(done, HOLD_POLL_MS));
    const exist = await ctx.store.jobsExist(flows).catch(() => flows.map(() => true));
    if (exist.every(Boolean)) return;
    const [task] = await ctx.store.getTaskStates(ref.missionId, [ref.taskId]).catch(() => []);
    // Still on its way to a release: this attempt in verify or review, or approved a moment ago.
    const releasing =
      task?.attempts === ref.attempt &&
      ['running', 'verifying', 'reviewing', 'completed'].includes(task.status);
    if (!releasing) return;
  }
}
