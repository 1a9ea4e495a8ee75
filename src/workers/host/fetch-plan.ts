/**
 * What a host may fetch now: a host takes a job only when it can start it.
 *
 * Each dispatch queue is served by a BullMQ worker whose concurrency is how many jobs it holds at
 * once. Served with the host's slot count, a host whose CLI runs one job at a time took every
 * waiting job of its capability and let them wait for that CLI, while another host with room sat
 * idle. So the host plans its fetching from its free slots: a queue fetches only while a host slot
 * and a slot of one of its CLIs are free, and holds at most the jobs it runs plus the ones it can
 * start. The plan is remade whenever a slot is taken or given back, a job enters or leaves a
 * processor, or a hold for dependents begins or ends. Pure; tested by table.
 */

export interface FetchState {
  /** Host slots free now. */
  readonly hostFree: number;
  /** Host slots taken now (by runs and reviews). */
  readonly hostTaken: number;
  /** Free slots of each CLI (its `max_concurrent`), by CLI name. */
  readonly cliFree: ReadonlyMap<string, number>;
  /**
   * Jobs inside a processor of a queue whose jobs take slots (dispatch and critic). Those that hold
   * no slot yet are about to take one: what is free is theirs first.
   */
  readonly slotJobs: number;
  readonly queues: readonly QueueState[];
}

export interface QueueState {
  readonly queue: string;
  /** The CLIs of this host that can run the queue's jobs now. */
  readonly clis: readonly string[];
  /** This queue's jobs inside its processor now. */
  readonly inProcessor: number;
  /** A hold for a run's dependents (run/hold-fetch.ts): nothing is fetched while it lasts. */
  readonly held: boolean;
}

export interface QueueFetch {
  /** Whether the queue's worker fetches at all. */
  readonly fetch: boolean;
  /** Its BullMQ concurrency: the jobs it holds plus the ones it may start (at least 1, BullMQ's floor). */
  readonly concurrency: number;
  /** Jobs this queue could start now. */
  readonly startable: number;
}

export function planFetching(state: FetchState): Map<string, QueueFetch> {
  const pending = Math.max(0, state.slotJobs - state.hostTaken);
  const plan = new Map<string, QueueFetch>();
  for (const queue of state.queues) {
    const cliFree = [...new Set(queue.clis)].reduce((sum, cli) => sum + (state.cliFree.get(cli) ?? 0), 0);
    const startable = Math.max(0, Math.min(state.hostFree, cliFree) - pending);
    plan.set(queue.queue, {
      fetch: !queue.held && startable > 0,
      concurrency: Math.max(1, queue.inProcessor + startable),
      startable,
    });
  }
  return plan;
}
