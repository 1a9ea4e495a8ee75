import { Job } from 'bullmq';
import { attemptJobId, finalizeJobId, JOBS, QUEUES } from '../shared/contracts.js';
import type { Logger } from '../shared/logger.js';
import type { TaskSpec } from '../shared/mission.js';
import { withSignature } from '../shared/signing.js';
import type { MissionStore } from '../store/mission-store.js';
import { listHosts, routableHosts } from '../store/registry.js';
import { buildAttemptFlow } from './build-flow.js';
import { type QueueSet, RETENTION } from './queues.js';
import { routeTask } from './route.js';

/** Finalize only reads and writes the mission's own records, so a few infrastructure retries suffice. */
const FINALIZE_ATTEMPTS = 5;

export interface EnqueueContext {
  readonly store: MissionStore;
  readonly queues: QueueSet;
  /** Signs every job added; required (undefined when unset) so no caller forgets to pass it. */
  readonly secret: string | undefined;
  readonly logger: Logger;
}

/**
 * Adds one attempt's flow, routed by the live registry at this moment. Idempotent: if the
 * attempt's gate job exists (a re-delivered gate already added it), nothing is added again.
 * `cli` is the CLI escalation moved the task to: the attempt is routed as if the task pinned it.
 */
export async function enqueueAttempt(
  ctx: EnqueueContext,
  input: { missionId: string; task: TaskSpec; attempt: number; delayMs?: number; cli?: string | null },
): Promise<{ queue: string; reason: string }> {
  const { missionId, attempt } = input;
  const task = input.cli && !input.task.cli ? { ...input.task, cli: input.cli } : input.task;
  const gateId = attemptJobId(missionId, task.id, attempt, 'gate');
  const hosts = routableHosts(await listHosts(ctx.store.redis, ctx.store.prefix));
  const routed = routeTask(task, hosts);
  // Routed like a pin, but the user pinned nothing: the reason says who chose the CLI.
  const route = task === input.task ? routed : { ...routed, reason: `escalated: ${routed.reason}` };
  await ctx.store.mark(missionId, task.id, attempt, null, { route: route.reason });
  const existing = await Job.fromId(ctx.queues.get(QUEUES.mission), gateId);
  if (existing) return { queue: route.queue, reason: route.reason };
  await ctx.queues.flows.add(
    buildAttemptFlow({
      missionId,
      taskId: task.id,
      attempt,
      queue: route.queue,
      capability: route.capability,
      cli: task.cli,
      delayMs: input.delayMs,
      secret: ctx.secret,
    }),
  );
  ctx.logger.debug({ missionId, taskId: task.id, attempt, queue: route.queue }, route.reason);
  if (route.how === 'waiting') {
    // Followers (`run`, `submit --wait`, `status --watch`) print this, so a task that no host can
    // serve is said out loud instead of sitting silently in a queue nobody consumes.
    await ctx.store.emit({
      missionId,
      taskId: task.id,
      attempt,
      type: 'task',
      status: 'waiting',
      message: route.reason,
    });
  }
  await ctx.store.audit(missionId, {
    at: new Date().toISOString(),
    taskId: task.id,
    attempt,
    stage: 'route',
    event: {
      kind: 'route',
      attempt,
      queue: route.queue,
      how: route.how,
      reason: route.reason,
      ...(input.delayMs ? { delayMs: input.delayMs } : {}),
    },
  });
  return { queue: route.queue, reason: route.reason };
}

/** Adds the mission's one finalize job (a deterministic id, so a second add is a no-op). */
export async function enqueueFinalize(
  ctx: { readonly queues: QueueSet; readonly secret: string | undefined },
  missionId: string,
): Promise<void> {
  await ctx.queues.get(QUEUES.mission).add(JOBS.finalize, withSignature({ missionId }, ctx.secret), {
    jobId: finalizeJobId(missionId),
    ...RETENTION,
    attempts: FINALIZE_ATTEMPTS,
  });
}
