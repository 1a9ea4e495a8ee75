import {
  PRIORITY_AGE_MS,
  PRIORITY_LEVELS,
  PRIORITY_SCORE_SCALE,
  TOP_PRIORITY,
} from '../../shared/queue/priority.js';
import type { QueueSet } from '../../shared/queue/queues.js';
import type { RedisClient } from '../../shared/redis.js';

/** How many of the oldest jobs of each level one pass looks at; the rest wait for the next pass. */
const AGE_BATCH = 50;

export interface AgeContext {
  readonly redis: RedisClient;
  readonly queues: QueueSet;
  readonly hostId: string;
}

/**
 * Lifts run jobs that waited `ageMs` at a lower priority level to the top level, at the back of
 * it, so a side task cannot be overtaken for ever by other missions' critical paths (fairness on a
 * shared queue, queue/priority.ts). Only a job that another mission's jobs are ahead of is lifted:
 * within one mission, waiting behind its own longer chains is the order working, and a mission is
 * finite, so its side tasks come when its critical path is done (lifting them there turned the
 * order of a mission of 10–30 s tasks back into FIFO). One round trip counts the jobs below the
 * top level in every queue; only a queue that has some is looked at further, by one host per pass
 * (a lock key): the oldest jobs of each level by score range (FIFO within a level), their add
 * times in one round trip, and only the aged ones are touched. Returns the ids lifted.
 */
export async function agePriorities(
  ctx: AgeContext,
  queueNames: readonly string[],
  options: { now?: number; ageMs?: number; intervalMs: number },
): Promise<string[]> {
  const now = options.now ?? Date.now();
  const ageMs = options.ageMs ?? PRIORITY_AGE_MS;
  const lifted: string[] = [];
  if (queueNames.length === 0) return lifted;
  // Most passes find nothing below the top level: one round trip for all queues says so.
  const counts = ctx.redis.pipeline();
  for (const name of queueNames) {
    counts.zcount(
      ctx.queues.get(name).toKey('prioritized'),
      (TOP_PRIORITY + 1) * PRIORITY_SCORE_SCALE,
      '+inf',
    );
  }
  const below = ((await counts.exec()) ?? []).map(([, value]) => Number(value));
  for (const [index, name] of queueNames.entries()) {
    if (!below[index]) continue;
    const queue = ctx.queues.get(name);
    const lock = await ctx.redis.set(
      queue.toKey('age-lock'),
      ctx.hostId,
      'PX',
      Math.max(1, options.intervalMs - 100),
      'NX',
    );
    if (lock !== 'OK') continue;
    const ranges = ctx.redis.pipeline();
    for (let level = TOP_PRIORITY; level <= PRIORITY_LEVELS; level++) {
      const low = level * PRIORITY_SCORE_SCALE;
      ranges.zrangebyscore(
        queue.toKey('prioritized'),
        low,
        low + PRIORITY_SCORE_SCALE - 1,
        'LIMIT',
        0,
        AGE_BATCH,
      );
    }
    const levels = ((await ranges.exec()) ?? []).map(([, value]) => (value as string[] | null) ?? []);
    const ids = levels.slice(1).flat();
    if (ids.length === 0) continue;
    const stamps = ctx.redis.pipeline();
    for (const id of ids) stamps.hget(queue.toKey(id), 'timestamp');
    const added = ((await stamps.exec()) ?? []).map(([, value]) => Number(value));
    const overtaken = overtakenByOthers(levels);
    for (const [i, id] of ids.entries()) {
      if (!(now - (added[i] ?? now) >= ageMs) || !overtaken.has(id)) continue;
      const job = await queue.getJob(id);
      // Gone since the read: nothing to lift. One taken since keeps its place (the script only
      // re-adds a job it finds waiting).
      if (!job) continue;
      await job.changePriority({ priority: TOP_PRIORITY });
      lifted.push(id);
    }
  }
  return lifted;
}

/** The mission of a run job, from its id (`<mission>.<task>.a<n>.run`, attemptJobId()). */
function missionOfJob(id: string): string {
  const dot = id.indexOf('.');
  return dot < 0 ? id : id.slice(0, dot);
}

/**
 * The jobs below the top level that wait behind another mission's job: `levels[k]` holds the
 * oldest job ids of level `TOP_PRIORITY + k`, which are served before every job of a later level.
 * Pure; tested by table.
 */
export function overtakenByOthers(levels: readonly (readonly string[])[]): Set<string> {
  const overtaken = new Set<string>();
  const ahead = new Set<string>();
  for (const ids of levels) {
    const missions = new Set(ids.map(missionOfJob));
    for (const id of ids) {
      const mine = missionOfJob(id);
      if ([...ahead].some((mission) => mission !== mine)) overtaken.add(id);
    }
    for (const mission of missions) ahead.add(mission);
  }
  return overtaken;
}
