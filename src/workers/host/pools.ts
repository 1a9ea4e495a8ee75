import { type Job, type Telemetry, Worker } from 'bullmq';
import type { Config } from '../../shared/config.js';
import type { Logger } from '../../shared/logger.js';
import type { RedisClient } from '../../shared/redis.js';
import type { Semaphore } from '../../shared/semaphore.js';
import { planFetching, type QueueState } from './fetch-plan.js';

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

/** How a queue is served: a fixed concurrency, or on demand from the host's free slots (fetch-plan.ts). */
export type Serving =
  | { readonly concurrency: number; readonly takesSlots?: boolean }
  | { readonly onDemand: true };

/** The slots a host's on-demand queues are planned from, and which CLIs can run each queue now. */
export interface Capacity {
  readonly hostSlots: Semaphore;
  readonly cliSlots: ReadonlyMap<string, Semaphore>;
  clisFor(queue: string): readonly string[];
}

export interface Pools {
  /** One BullMQ worker per queue this host serves. */
  readonly workers: Map<string, Worker>;
  /** The jobs running on this host, each with the worker that holds it. */
  readonly active: Map<string, Worker>;
  /** Serves `queue` as `serving` says; a queue already served is left as it is. */
  serve(queue: string, processor: Processor, serving: Serving): void;
  /** Stops serving `queue`: its worker closes once its running jobs end. */
  unserve(queue: string): void;
  /**
   * Remakes the fetch plan of the on-demand queues: called by the slots' semaphores on every take
   * and give-back, and when the CLIs a queue can use change.
   */
  replan(): void;
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
  /** The slots the on-demand queues are planned from (read at each plan: the host makes them after the pools). */
  readonly capacity: () => Capacity;
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
  /** Jobs inside each queue's processor now; the on-demand queues and the slot-taking ones. */
  const inProcessor = new Map<string, number>();
  const onDemand = new Set<string>();
  const slotQueues = new Set<string>();
  const holds = new Map<string, number>();
  const count = (queue: string, by: number) => {
    inProcessor.set(queue, (inProcessor.get(queue) ?? 0) + by);
    if (slotQueues.has(queue)) replan();
  };
  const serve = (queue: string, processor: Processor, serving: Serving) => {
    if (workers.has(queue)) return;
    const planned = 'onDemand' in serving;
    if (planned) onDemand.add(queue);
    if (planned || serving.takesSlots) slotQueues.add(queue);
    workers.set(
      queue,
      track(
        new Worker(
          queue,
          async (job, token, signal) => {
            count(queue, 1);
            try {
              return await processor(job, token, signal);
            } catch (error) {
              // A job handed back (moveToDelayed + DelayedError, moveToWait + WaitingError) ends
              // neither completed nor failed, so no event would drop it: without this, `running`
              // in the registry only grows.
              const name = (error as Error).name;
              if (name === 'DelayedError' || name === 'WaitingError') active.delete(job.id ?? '');
              throw error;
            } finally {
              count(queue, -1);
            }
          },
          // An on-demand queue starts stopped: the first plan, below, says what it may fetch.
          { ...workerOptions, concurrency: planned ? 1 : serving.concurrency, autorun: !planned },
        ),
      ),
    );
    if (planned) replan();
  };
  const unserve = (queue: string) => {
    const worker = workers.get(queue);
    if (!worker) return;
    workers.delete(queue);
    onDemand.delete(queue);
    slotQueues.delete(queue);
    void worker.close();
  };
  /** Applies a plan: the worker's concurrency, then a pause or a resume when fetching changes. */
  function replan() {
    const capacity = options.capacity();
    const slotJobs = [...slotQueues].reduce((sum, queue) => sum + (inProcessor.get(queue) ?? 0), 0);
    const queues: QueueState[] = [...onDemand].map((queue) => ({
      queue,
      clis: capacity.clisFor(queue),
      inProcessor: inProcessor.get(queue) ?? 0,
      held: (holds.get(queue) ?? 0) > 0,
    }));
    const plan = planFetching({
      hostFree: capacity.hostSlots.free,
      hostTaken: capacity.hostSlots.size - capacity.hostSlots.free,
      cliFree: new Map([...capacity.cliSlots].map(([cli, slots]) => [cli, slots.free])),
      slotJobs,
      queues,
    });
    for (const [queue, fetch] of plan) {
      const worker = workers.get(queue);
      if (!worker || worker.closing) continue;
      worker.concurrency = fetch.concurrency;
      // Both set BullMQ's flag before their first await, so the next fetch already sees it.
      if (!fetch.fetch && !worker.isPaused()) void worker.pause(true);
      else if (fetch.fetch && (worker.isPaused() || !worker.isRunning())) void worker.resume();
    }
  }
  // Only dispatch queues are held (run/hold-fetch.ts), and they are planned: a hold is one more
  // input to the plan, which pauses the queue before the job that asks completes.
  const hold = async (queue: string) => {
    if (!onDemand.has(queue)) return () => {};
    holds.set(queue, (holds.get(queue) ?? 0) + 1);
    replan();
    let given = false;
    return () => {
      if (given) return;
      given = true;
      holds.set(queue, (holds.get(queue) ?? 1) - 1);
      replan();
    };
  };
  return { workers, active, serve, unserve, hold, replan };
}
