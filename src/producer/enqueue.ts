import { attemptJobId, QUEUES } from '../shared/contracts.js';
import { missionKeys } from '../shared/keys.js';
import type { Logger } from '../shared/logger.js';
import type { TaskSpec } from '../shared/mission.js';
import type { MissionStore } from '../shared/mission-store.js';
import type { QueueSet } from '../shared/queues.js';
import { listHosts, routableHosts } from '../shared/registry.js';
import { MARK_SCRIPT } from '../shared/store-scripts.js';
import { buildAttemptFlow } from './build-flow.js';
import { type Route, routeTask } from './route.js';

export interface EnqueueContext {
  readonly store: MissionStore;
  readonly queues: QueueSet;
  readonly secret?: string;
  readonly logger: Logger;
}

export interface AttemptToEnqueue {
  readonly task: TaskSpec;
  readonly attempt: number;
  readonly delayMs?: number;
}

/** Flows per BullMQ MULTI when a submit enqueues thousands of roots at once. */
const FLOWS_PER_BATCH = 500;

/**
 * Adds attempts' flows, routed by the live registry at this moment, on the path where a waiting
 * task is released: one registry read for the whole batch; then one round trip that records each
 * route on its task (the MARK script), checks whether its gate job already exists (a re-delivered
 * gate added it) and reads the cancel flag; then one MULTI with every new flow. The audit rows
 * come after all flows are in, since nothing waits for them. Idempotent: an attempt whose gate
 * job exists is not added again. With `unlessCancelled`, nothing is added to a cancelled mission.
 */
export async function enqueueAttempts(
  ctx: EnqueueContext,
  missionId: string,
  attempts: readonly AttemptToEnqueue[],
  options: { unlessCancelled?: boolean } = {},
): Promise<Route[]> {
  if (attempts.length === 0) return [];
  const hosts = routableHosts(await listHosts(ctx.store.redis, ctx.store.prefix));
  const routes = attempts.map((item) => routeTask(item.task, hosts));
  const keys = missionKeys(ctx.store.prefix, missionId);
  const missionQueue = ctx.queues.get(QUEUES.mission);
  const round = ctx.store.redis.pipeline().hget(keys.meta, 'cancelled');
  attempts.forEach((item, i) => {
    const patch = JSON.stringify({ route: routes[i]?.reason });
    round.eval(MARK_SCRIPT, 2, keys.meta, keys.tasks, item.task.id, String(item.attempt), '', patch);
    round.exists(missionQueue.toKey(attemptJobId(missionId, item.task.id, item.attempt, 'gate')));
  });
  const replies = (await round.exec()) ?? [];
  if (options.unlessCancelled && replies[0]?.[1] === '1') return [];
  const fresh = attempts.flatMap((item, i) =>
    replies[2 + 2 * i]?.[1] === 1 ? [] : [{ item, route: routes[i] as Route }],
  );
  for (let start = 0; start < fresh.length; start += FLOWS_PER_BATCH) {
    await ctx.queues.flows.addBulk(
      fresh.slice(start, start + FLOWS_PER_BATCH).map(({ item, route }) =>
        buildAttemptFlow({
          missionId,
          taskId: item.task.id,
          attempt: item.attempt,
          queue: route.queue,
          capability: route.capability,
          cli: item.task.cli,
          delayMs: item.delayMs,
          priority: item.task.priority,
          secret: ctx.secret,
        }),
      ),
    );
  }
  for (const { item, route } of fresh) {
    ctx.logger.debug(
      { missionId, taskId: item.task.id, attempt: item.attempt, queue: route.queue },
      route.reason,
    );
    await ctx.store.audit(missionId, {
      at: new Date().toISOString(),
      taskId: item.task.id,
      attempt: item.attempt,
      stage: 'route',
      message: `attempt ${item.attempt} → ${route.queue}: ${route.reason}${item.delayMs ? ` (starts in ${Math.round(item.delayMs / 1000)}s)` : ''}`,
    });
  }
  return routes;
}

/** One attempt's flow; see enqueueAttempts. */
export async function enqueueAttempt(
  ctx: EnqueueContext,
  input: { missionId: string; task: TaskSpec; attempt: number; delayMs?: number },
): Promise<{ queue: string; reason: string }> {
  const [route] = await enqueueAttempts(ctx, input.missionId, [input]);
  return { queue: route?.queue ?? '', reason: route?.reason ?? '' };
}
