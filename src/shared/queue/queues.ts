import { FlowProducer, type JobsOptions, Queue, type Telemetry } from 'bullmq';
import type { RedisClient } from '../redis.js';

/**
 * Retention must outlive missions: removing a child releases its parent, and the audit needs
 * finished jobs for a while. Age-based, so a busy cluster does not drop a mission's jobs by count.
 */
export const RETENTION = {
  removeOnComplete: { age: 7 * 24 * 3600 },
  removeOnFail: { age: 14 * 24 * 3600 },
} as const;

/** BullMQ's own attempts are for infrastructure faults (a host crash, a lost lock), not task attempts. */
export const INFRA_ATTEMPTS: JobsOptions = {
  attempts: 3,
  backoff: { type: 'exponential', delay: 2_000 },
};

/**
 * BullMQ re-emits the shared connection's errors on every Queue and FlowProducer; one without a
 * listener prints each reconnect attempt as a stack trace on stderr (hundreds a minute while Redis
 * is down). The connection's owner already listens on the ioredis client and decides what a lost
 * Redis means, and commands still reject to their callers, so these copies are dropped.
 */
function ignoreConnectionError(): void {}

export class QueueSet {
  private readonly queues = new Map<string, Queue>();
  readonly flows: FlowProducer;

  constructor(
    /** The connection every queue of the set shares; a host reads queue keys with it too. */
    readonly connection: RedisClient,
    readonly prefix: string,
    private readonly telemetry?: Telemetry,
  ) {
    this.flows = new FlowProducer({ connection, prefix, ...(telemetry ? { telemetry } : {}) });
    this.flows.on('error', ignoreConnectionError);
  }

  get(name: string): Queue {
    let queue = this.queues.get(name);
    if (!queue) {
      queue = new Queue(name, {
        connection: this.connection,
        prefix: this.prefix,
        ...(this.telemetry ? { telemetry: this.telemetry } : {}),
      });
      queue.on('error', ignoreConnectionError);
      this.queues.set(name, queue);
    }
    return queue;
  }

  async close(): Promise<void> {
    await Promise.all([...this.queues.values()].map((q) => q.close()));
    await this.flows.close();
    this.queues.clear();
  }
}
