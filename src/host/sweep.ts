import { Job } from 'bullmq';
import { enqueueAttempts, enqueueFinalize } from '../queue/enqueue.js';
import { attemptJobId, finalizeJobId, QUEUES } from '../shared/contracts.js';
import type { HostContext } from '../stages/context.js';

/** How many of the newest missions a sweep looks at. */
const SWEEP_WINDOW = 500;

/**
 * The safety net for a process that died between writing mission state and adding the jobs that
 * carry it on (a producer killed mid-submit, a host killed after a transition whose gate job was
 * then lost with Redis data): a task that is queued or retrying with no job for its attempt gets
 * one, and a finished mission with no finalize job gets one. Adds are idempotent (deterministic
 * ids), so two hosts sweeping at once do no harm; a lock keeps it to one host at a time anyway.
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
    if (record.meta.cancelled) continue;
    const states = await ctx.store.getTasks(id);
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
  if (repaired.length > 0) ctx.logger.warn({ repaired }, 'sweep: re-added jobs lost with a crashed process');
  return { repaired };
}
