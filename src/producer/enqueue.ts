import { Job } from 'bullmq';
import { attemptJobId, QUEUES } from '../shared/contracts.js';
import type { Logger } from '../shared/logger.js';
import type { TaskSpec } from '../shared/mission.js';
import type { MissionStore } from '../shared/mission-store.js';
import type { QueueSet } from '../shared/queues.js';
import { listHosts, routableHosts } from '../shared/registry.js';
import { buildAttemptFlow } from './build-flow.js';
import { routeTask } from './route.js';

export interface EnqueueContext {
  readonly store: MissionStore;
  readonly queues: QueueSet;
  readonly secret?: string;
  readonly logger: Logger;
}

/**
 * Adds one attempt's flow, routed by the live registry at this moment. Idempotent: if the
 * attempt's gate job exists (a re-delivered gate already added it), nothing is added again.
 */
export async function enqueueAttempt(
  ctx: EnqueueContext,
  input: { missionId: string; task: TaskSpec; attempt: number; delayMs?: number },
): Promise<{ queue: string; reason: string }> {
  const { missionId, task, attempt } = input;
  const gateId = attemptJobId(missionId, task.id, attempt, 'gate');
  const hosts = routableHosts(await listHosts(ctx.store.redis, ctx.store.prefix));
  const route = routeTask(task, hosts);
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
      priority: task.priority,
      secret: ctx.secret,
    }),
  );
  ctx.logger.debug({ missionId, taskId: task.id, attempt, queue: route.queue }, route.reason);
  await ctx.store.audit(missionId, {
    at: new Date().toISOString(),
    taskId: task.id,
    attempt,
    stage: 'route',
    message: `attempt ${attempt} → ${route.queue}: ${route.reason}${input.delayMs ? ` (starts in ${Math.round(input.delayMs / 1000)}s)` : ''}`,
  });
  return { queue: route.queue, reason: route.reason };
}
