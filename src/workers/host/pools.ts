import { type Job, type Telemetry, Worker } from 'bullmq';
import type { Config } from '../../shared/config.js';
import type { Logger } from '../../shared/logger.js';
import type { RedisClient } from '../../shared/redis.js';

/** A stage's processor as a pool calls it: the job, its lock token and its cancel signal. */
export type Processor = (
  job: Job,
  token: string | undefined,
  signal: AbortSignal | undefined,
) => Promise<unknown>;

/**
 * How long (s) an idle worker blocks waiting for a job before it asks again. A job added to the
 * queue wakes it at once (BullMQ's marker), so this sets only the idle cost: a host serves a
 * dozen queues, and BullMQ's default of 5 s made their polling a large share of a host's Redis
 * traffic. 10 s is the longest block BullMQ itself allows when delayed jobs are waiting.
 */
const IDLE_BLOCK_S = 10;

export interface Pools {
  /** One BullMQ worker per queue this host serves. */
  readonly workers: Map<string, Worker>;
  /** The jobs running on this host, each with the worker that holds it. */
  readonly active: Map<string, Worker>;
  /** Serves `queue` with up to `concurrency` jobs at once; a queue already served is left as it is. */
  serve(queue: string, processor: Processor, concurrency: number): void;
  /**
   * Stops this host fetching from `queue` (its running jobs go on) until every hold is given back
   * by the function returned: a finished run keeps its place for its dependents (run/hold-fetch.ts).
   */
  hold(queue: string): Promise<() => void>;
}

/** A host's worker pools, one per queue, and the jobs they are running. */
export function createPools(options: {
  readonly redis: RedisClient;
  readonly config: Config;
  readonly telemetry: Telemetry | undefined;
  readonly logger: Logger;
}): Pools {
  const { config, logger, telemetry } = options;
  const active = new Map<string, Worker>();
  const workers = new Map<string, Worker>();
  const workerOptions = {
    connection: options.redis,
    prefix: config.prefix,
    lockDuration: config.lockMs,
    lockRenewTime: config.lockRenewMs,
    drainDelay: IDLE_BLOCK_S,
    stalledInterval: config.stalledIntervalMs,
    maxStalledCount: 2,
    ...(telemetry ? { telemetry } : {}),
  };
  const track = (worker: Worker) => {
    worker.on('active', (job: Job) => active.set(job.id ?? '', worker));
    worker.on('completed', (job: Job) => active.delete(job.id ?? ''));
    worker.on('failed', (job: Job | undefined, error: Error) => {
      if (job) active.delete(job.id ?? '');
      if (error.name !== 'DelayedError') logger.warn({ jobId: job?.id, err: error.message }, 'job failed');
    });
    // A lost lock means another host may take the job: stop our CLI so two never work one attempt.
    worker.on('lockRenewalFailed', (ids: string[]) => {
      for (const id of ids) worker.cancelJob(id, 'lock lost');
    });
    worker.on('error', (error: Error) => logger.debug({ err: error.message }, 'worker error'));
    return worker;
  };
  const serve = (queue: string, processor: Processor, concurrency: number) => {
    if (workers.has(queue)) return;
    workers.set(
      queue,
      track(
        new Worker(
          queue,
          async (job, token, signal) => {
            try {
              return await processor(job, token, signal);
            } catch (error) {
              // A job handed back (moveToDelayed + DelayedError) ends neither completed nor failed,
              // so no event would drop it: without this, `running` in the registry only grows.
              if ((error as Error).name === 'DelayedError') active.delete(job.id ?? '');
              throw error;
            }
          },
          { ...workerOptions, concurrency },
        ),
      ),
    );
  };
  const holds = new Map<string, number>();
  const hold = async (queue: string) => {
    const worker = workers.get(queue);
    if (!worker) return () => {};
    const count = (holds.get(queue) ?? 0) + 1;
    holds.set(queue, count);
    // Paused before the job that asks completes, so its completion fetches no next job.
    if (count === 1) await worker.pause(true);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      const left = (holds.get(queue) ?? 1) - 1;
      holds.set(queue, left);
      if (left === 0) void worker.resume();
    };
  };
  return { workers, active, serve, hold };
}
