import type { Worker } from 'bullmq';
import type { Logger } from '../../shared/logger.js';
import type { QueueSet } from '../../shared/queue/queues.js';
import type { RedisClient } from '../../shared/redis.js';

/** The reason a host's running CLIs are stopped with, so their jobs count as infrastructure faults. */
export const SHUTDOWN = 'host shutting down';

/** After the grace period, how long BullMQ's close may take before the host leaves without it. */
const CLOSE_AFTER_GRACE_MS = 3_000;

export interface CloseOutcome {
  /** Jobs still running when the grace period ended: their CLIs were killed, BullMQ re-delivers them. */
  readonly abandoned: readonly string[];
  /** False when Redis could not be reached at the end: the host left without unregistering. */
  readonly redisReachable: boolean;
}

export interface CloseParts {
  readonly workers: () => readonly Worker[];
  readonly activeJobs: () => readonly string[];
  readonly timers: readonly NodeJS.Timeout[];
  readonly graceMs: number;
  readonly logger: Logger;
  /** SIGKILL to every CLI process group still recorded (agent/cli-groups.ts). */
  readonly killLeftovers: () => Promise<unknown>;
  readonly redis: RedisClient;
  readonly subscriber: RedisClient;
  readonly queues: QueueSet;
  readonly unregister: () => Promise<unknown>;
}

/**
 * A host's two-stage close (DESIGN.md §3, docs/RECOVERY.md "A host shuts down"): the first call
 * stops taking jobs and gives running CLIs the grace period; `force` (a second signal) stops them
 * at once. Calls share one promise. It ends within the grace period plus a few seconds whatever
 * Redis does: BullMQ's own close needs Redis, so past the grace it is given `CLOSE_AFTER_GRACE_MS`
 * and then left; the jobs it held go back to their queues by BullMQ's stalled check on another
 * host once their locks expire.
 */
export function createClose(parts: CloseParts): (options?: { force?: boolean }) => Promise<CloseOutcome> {
  let closing: Promise<CloseOutcome> | undefined;
  let forced = false;
  return (options = {}) => {
    if (options.force && !forced) {
      forced = true;
      for (const worker of parts.workers()) worker.cancelAllJobs(SHUTDOWN);
    }
    closing ??= (async () => {
      for (const timer of parts.timers) clearInterval(timer);
      const graceful = Promise.all(parts.workers().map((w) => w.close()));
      const timer = new Promise((resolve) => setTimeout(resolve, forced ? 0 : parts.graceMs).unref());
      const finished = await Promise.race([graceful.then(() => true), timer.then(() => false)]);
      const abandoned = finished ? [] : [...parts.activeJobs()];
      if (!finished) {
        parts.logger.warn('grace period over: stopping running CLIs so their jobs move to another host');
        for (const worker of parts.workers()) worker.cancelAllJobs(SHUTDOWN);
        await settleWithin(Promise.all(parts.workers().map((w) => w.close(true))), CLOSE_AFTER_GRACE_MS);
        // Whatever still runs (a CLI that ignored SIGTERM) is killed before this process goes.
        await parts.killLeftovers();
      }
      const redisReachable = parts.redis.status === 'ready';
      if (redisReachable) {
        await settleWithin(parts.unregister(), CLOSE_AFTER_GRACE_MS);
        await settleWithin(parts.subscriber.quit(), CLOSE_AFTER_GRACE_MS);
        await settleWithin(parts.queues.close(), CLOSE_AFTER_GRACE_MS);
        await settleWithin(parts.redis.quit(), CLOSE_AFTER_GRACE_MS);
      }
      // quit() would wait in ioredis' offline queue for a Redis that is gone: drop the sockets.
      parts.subscriber.disconnect();
      parts.redis.disconnect();
      return { abandoned, redisReachable };
    })();
    return closing;
  };
}

/** Waits for `work` at most `ms`; never rejects (shutdown goes on whatever one step does). */
async function settleWithin(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    work.catch(() => undefined),
    new Promise((resolve) => {
      timer = setTimeout(resolve, ms);
    }),
  ]);
  clearTimeout(timer);
}

/**
 * What a stopped worker says and its exit code: 0 for a clean stop, and for a second signal (the
 * operator asked to abandon the running CLIs); otherwise one line saying what was left behind —
 * 3 when Redis was out of reach, 1 when the grace period ended with jobs still running. Abandoned
 * jobs run again on another host once BullMQ's stalled check sees their locks expire.
 */
export function describeStop(outcome: CloseOutcome, forced: boolean): { code: 0 | 1 | 3; line?: string } {
  const jobs = outcome.abandoned.length;
  const left =
    jobs > 0
      ? `abandoned ${jobs} running job(s) to BullMQ's stalled-job recovery (${outcome.abandoned.join(', ')})`
      : 'no job was running';
  if (!outcome.redisReachable) {
    return {
      code: 3,
      line: `flotilla worker: stopped with Redis unreachable; ${left}; this host was not unregistered`,
    };
  }
  if (jobs > 0 && !forced) return { code: 1, line: `flotilla worker: grace period over; ${left}` };
  return { code: 0 };
}
