import { Job } from 'bullmq';
import {
  type ApprovalJobData,
  attemptJobId,
  deliverJobId,
  finalizeJobId,
  JOBS,
  type PersonVerdict,
  QUEUES,
} from '../contracts.js';
import type { Requirements } from '../host-facts.js';
import type { Logger } from '../logger.js';
import type { TaskSpec } from '../mission.js';
import { withSignature } from '../signing.js';
import type { MissionStore } from '../store/mission-store.js';
import { buildAttemptFlow } from './build-flow.js';
import { type QueueSet, RETENTION } from './queues.js';
import { type Route, routeTask } from './route.js';

/** Finalize only reads and writes the mission's own records, so a few infrastructure retries suffice. */
const FINALIZE_ATTEMPTS = 5;

export interface EnqueueContext {
  readonly store: MissionStore;
  readonly queues: QueueSet;
  /** Signs every job added; required (undefined when unset) so no caller forgets to pass it. */
  readonly secret: string | undefined;
  readonly logger: Logger;
}

export interface AttemptToEnqueue {
  readonly task: TaskSpec;
  readonly attempt: number;
  readonly delayMs?: number;
  /** The CLI escalation moved the task to: the attempt is routed as if the task pinned it. */
  readonly cli?: string | null;
}

/** Attempts per round trip of bookkeeping and per BullMQ MULTI of flows. */
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
  requested: readonly AttemptToEnqueue[],
  options: { unlessCancelled?: boolean } = {},
): Promise<Route[]> {
  if (requested.length === 0) return [];
  const hosts = await ctx.store.liveHosts();
  const attempts = requested.map((item) =>
    item.cli && !item.task.cli ? { ...item, task: { ...item.task, cli: item.cli }, escalated: true } : item,
  );
  const routes = attempts.map((item) => {
    const routed = routeTask(item.task, hosts);
    // Routed like a pin, but the user pinned nothing: the reason says who chose the CLI.
    return 'escalated' in item ? { ...routed, reason: `escalated: ${routed.reason}` } : routed;
  });
  // Hosts serve a requirement's queues only once they know it: named before any of its jobs.
  const sets = new Map<string, Requirements>();
  attempts.forEach((item, i) => {
    const key = routes[i]?.requirementsKey;
    if (key && item.task.requires) sets.set(key, item.task.requires);
  });
  await ctx.store.registerRequirements(sets);
  const missionQueue = ctx.queues.get(QUEUES.mission);
  const fresh: { item: AttemptToEnqueue; route: Route }[] = [];
  // Batches bound one pipeline and one MULTI when a submit enqueues thousands of roots at once.
  for (let start = 0; start < attempts.length; start += FLOWS_PER_BATCH) {
    const batch = attempts.slice(start, start + FLOWS_PER_BATCH);
    const { cancelled, existing } = await ctx.store.prepareRelease(
      missionId,
      batch.map((item, i) => ({
        taskId: item.task.id,
        attempt: item.attempt,
        route: routes[start + i]?.reason ?? '',
        jobKey: missionQueue.toKey(attemptJobId(missionId, item.task.id, item.attempt, 'gate')),
      })),
    );
    if (options.unlessCancelled && cancelled) return [];
    const added = batch.flatMap((item, i) =>
      existing[i] ? [] : [{ item, route: routes[start + i] as Route }],
    );
    if (added.length === 0) continue;
    await ctx.queues.flows.addBulk(
      added.map(({ item, route }) =>
        buildAttemptFlow({
          missionId,
          taskId: item.task.id,
          attempt: item.attempt,
          queue: route.queue,
          capability: route.capability,
          ...(route.requirementsKey ? { requirementsKey: route.requirementsKey } : {}),
          cli: item.task.cli,
          delayMs: item.delayMs,
          priority: item.task.priority,
          secret: ctx.secret,
        }),
      ),
    );
    fresh.push(...added);
  }
  for (const { item, route } of fresh) {
    ctx.logger.debug(
      { missionId, taskId: item.task.id, attempt: item.attempt, queue: route.queue },
      route.reason,
    );
    if (route.how === 'waiting') {
      // Followers (`run`, `submit --wait`, `status --watch`) print this, so a task that no host can
      // serve is said out loud instead of sitting silently in a queue nobody consumes.
      await ctx.store.emit({
        missionId,
        taskId: item.task.id,
        attempt: item.attempt,
        type: 'task',
        status: 'waiting',
        message: route.reason,
      });
    }
    await ctx.store.audit(missionId, {
      at: new Date().toISOString(),
      taskId: item.task.id,
      attempt: item.attempt,
      stage: 'route',
      event: {
        kind: 'route',
        attempt: item.attempt,
        queue: route.queue,
        how: route.how,
        reason: route.reason,
        ...(item.delayMs ? { delayMs: item.delayMs } : {}),
      },
    });
  }
  return routes;
}

/** One attempt's flow; see enqueueAttempts. */
export async function enqueueAttempt(
  ctx: EnqueueContext,
  input: { missionId: string; task: TaskSpec; attempt: number; delayMs?: number; cli?: string | null },
): Promise<{ queue: string; reason: string }> {
  const [route] = await enqueueAttempts(ctx, input.missionId, [input]);
  return { queue: route?.queue ?? '', reason: route?.reason ?? '' };
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

/**
 * A person's verdict on a held attempt (`flotilla approve`, the board), or the timeout that stands
 * in for one: a job on the mission queue that any host's gate worker takes, since merging needs a
 * host with the repository. One person's verdict per attempt (its id): the first one added is the
 * one that counts, and the job reports which that was. A verdict that failed for good (its merge
 * kept failing) may be sent again.
 */
export async function enqueueVerdict(
  ctx: { readonly queues: QueueSet; readonly secret: string | undefined },
  data: ApprovalJobData,
  delayMs = 0,
): Promise<{ sent: PersonVerdict; added: boolean }> {
  const stage = data.verdict === 'timeout' ? JOBS.approvalTimeout : JOBS.approval;
  const queue = ctx.queues.get(QUEUES.mission);
  const jobId = attemptJobId(data.missionId, data.taskId, data.attempt, stage);
  const existing = await Job.fromId<ApprovalJobData>(queue, jobId);
  if (existing && (await existing.isFailed())) await existing.remove();
  else if (existing) return { sent: existing.data, added: false };
  await queue.add(stage, withSignature({ ...data }, ctx.secret), {
    jobId,
    ...RETENTION,
    attempts: 5,
    backoff: { type: 'exponential', delay: 1_000 },
    ...(delayMs > 0 ? { delay: delayMs } : {}),
  });
  // Two people at once: BullMQ keeps the first job of an id, so read back which one that is.
  const stored = await Job.fromId<ApprovalJobData>(queue, jobId);
  const sent = stored?.data ?? data;
  return { sent, added: sent.at === data.at && sent.by === data.by && sent.verdict === data.verdict };
}

/**
 * Automatic tries of a mission's delivery (`deliver:`) before it is reported failed for good; each
 * waits twice as long as the one before (the host's FLOTILLA_DELIVER_BACKOFF_MS first).
 * `flotilla deliver <id>` tries again after that.
 */
export const DELIVER_TRIES = 5;

/** Adds the mission's one delivery job (a deterministic id, so a replayed finalize adds no second). */
export async function enqueueDeliver(
  ctx: { readonly queues: QueueSet; readonly secret: string | undefined },
  missionId: string,
  backoffMs: number,
): Promise<void> {
  await ctx.queues.get(QUEUES.mission).add(JOBS.deliver, withSignature({ missionId }, ctx.secret), {
    jobId: deliverJobId(missionId),
    ...RETENTION,
    attempts: DELIVER_TRIES,
    backoff: { type: 'exponential', delay: backoffMs },
  });
}
