import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import type { IServerAdapter } from '@bull-board/api/typings/app';
import { ExpressAdapter } from '@bull-board/express';
import { Queue } from 'bullmq';
import { CAPABILITIES } from '../shared/capabilities.js';
import { dispatchQueue, QUEUES } from '../shared/contracts.js';
import { requirementQueue } from '../shared/host-facts.js';
import type { RedisClient } from '../shared/redis.js';
import { requirementSetsKey } from '../shared/store/keys.js';
import { listHosts } from '../shared/store/registry.js';

/**
 * Every flotilla queue: the fixed ones, each vocabulary capability, whatever live hosts add, and
 * the variants of verify, critic and the live capabilities for each requirement set tasks named.
 */
export function boardQueueNames(
  extraCapabilities: readonly string[] = [],
  requirementKeys: readonly string[] = [],
): string[] {
  const fixed = [QUEUES.mission, QUEUES.verify, QUEUES.critic, QUEUES.internal, QUEUES.notify];
  const capabilities = [...CAPABILITIES, ...[...extraCapabilities].sort()];
  const variants = [...requirementKeys]
    .sort()
    .flatMap((key) =>
      [QUEUES.verify, QUEUES.critic, ...[...extraCapabilities].sort().map(dispatchQueue)].map((queue) =>
        requirementQueue(queue, key),
      ),
    );
  return [...new Set([...fixed, ...capabilities.map(dispatchQueue), ...variants])];
}

/** Adapters may add capability terms; a host advertising one should show its queue without a restart. */
const REFRESH_MS = 15_000;

/**
 * The board's BullMQ Queue objects (sharing the board's connection) and the Bull Board mounted
 * over them. Queues only read and, when not read-only, act on jobs; they never take work.
 */
export class BoardQueues {
  private readonly queues = new Map<string, Queue>();
  private readonly board: ReturnType<typeof createBullBoard>;
  readonly serverAdapter = new ExpressAdapter();
  private refreshedAt = 0;
  private refreshing: Promise<void> | undefined;

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    private readonly readOnly: boolean,
    basePath: string,
  ) {
    this.serverAdapter.setBasePath(basePath);
    // Bull Board derives some board-wide flags from the queues it starts with, so it starts with all.
    const initial = boardQueueNames().map((name) => this.adapterFor(name));
    this.board = createBullBoard({
      queues: initial,
      // @bull-board/express pins its own copy of @bull-board/api (9.10.1 beside our 9.10.2); the
      // two BaseAdapter declarations differ only in private members, and the router is the same.
      serverAdapter: this.serverAdapter as unknown as IServerAdapter,
      options: { uiConfig: { boardTitle: 'flotilla queues', miscLinks: [{ text: 'Missions', url: '/' }] } },
    });
  }

  private adapterFor(name: string): BullMQAdapter {
    const queue = new Queue(name, { connection: this.redis, prefix: this.prefix });
    // BullMQ re-emits the shared connection's errors on every queue, and one without a listener
    // prints a stack trace per queue per reconnect while Redis is down; requests still fail (503).
    queue.on('error', () => {});
    this.queues.set(name, queue);
    return new BullMQAdapter(queue, { readOnlyMode: this.readOnly, allowRetries: !this.readOnly });
  }

  private add(name: string): void {
    if (!this.queues.has(name)) this.board.addQueue(this.adapterFor(name));
  }

  names(): string[] {
    return [...this.queues.keys()];
  }

  /** Adds queues for capabilities live hosts advertise; at most once per REFRESH_MS. */
  refresh(now = Date.now()): Promise<void> {
    if (now - this.refreshedAt < REFRESH_MS) return Promise.resolve();
    this.refreshing ??= Promise.all([
      listHosts(this.redis, this.prefix),
      this.redis.hkeys(requirementSetsKey(this.prefix)),
    ])
      .then(([hosts, keys]) => {
        const extra = hosts.flatMap((h) => h.clis.flatMap((c) => c.capabilities));
        for (const name of boardQueueNames(extra, keys)) this.add(name);
        this.refreshedAt = Date.now();
      })
      .finally(() => {
        this.refreshing = undefined;
      });
    return this.refreshing;
  }

  async counts(): Promise<{ queue: string; counts: Record<string, number> }[]> {
    return Promise.all(
      [...this.queues].map(async ([name, queue]) => ({ queue: name, counts: await queue.getJobCounts() })),
    );
  }

  async close(): Promise<void> {
    await Promise.all([...this.queues.values()].map((q) => q.close()));
    this.queues.clear();
  }
}
