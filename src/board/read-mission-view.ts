import type { DeliveryStatus, MissionStatus, TaskState } from '../shared/contracts.js';
import { FlotillaError } from '../shared/errors.js';
import type { TaskSpec } from '../shared/mission.js';
import type { MissionStore } from '../shared/store/mission-store.js';
import type { HostInfo } from '../shared/store/registry.js';
import { buildOverview, type Overview } from './mission-overview.js';
import { depthsOf, topologicalOrder } from './task-dag.js';

/**
 * What the mission page reads, and the two caches that keep a 10,000-task page cheap. The spec
 * never changes once submitted, so its task list (and the depths computed from it) is parsed once
 * per mission, not on every request: it is megabytes at that size. The live part (task states,
 * hosts) is read again only when the mission's event stream has moved on, or after LIVE_MAX_AGE_MS
 * (hosts and the elapsed time change without events).
 */

/** How many missions' specs the board keeps parsed: a 10,000-task spec is some 20 MB in memory. */
const SPEC_CACHE_SIZE = 4;
/** How long one read of the live state serves every viewer while no event arrives. */
const LIVE_MAX_AGE_MS = 5_000;
/**
 * How long one read serves even when events arrive: a 10,000-task mission's states take a few
 * hundred milliseconds to read and parse on a busy machine, so a busy mission is read at most
 * this often however many pages poll it.
 */
const LIVE_MIN_AGE_MS = 1_500;

export interface MissionShape {
  readonly id: string;
  readonly goal: string;
  readonly createdAt: string;
  readonly tasks: readonly TaskSpec[];
  readonly byId: ReadonlyMap<string, TaskSpec>;
  readonly depths: ReadonlyMap<string, number>;
  /** Dependency order, kept: the graph never changes, and sorting 10,000 tasks is not free. */
  readonly order: readonly string[];
}

export interface LiveMission {
  readonly shape: MissionShape;
  readonly status: MissionStatus;
  readonly finishedAt: string | null;
  /** Where the mission's delivery stands (`deliver:`), once it ended; null without one. */
  readonly delivery: DeliveryStatus | null;
  readonly states: Readonly<Record<string, TaskState>>;
  readonly hosts: readonly HostInfo[];
  readonly overview: Overview;
  /** The event stream's newest id when this was read. */
  readonly eventId: string;
  readonly readAt: number;
}

export function shapeOf(
  id: string,
  goal: string,
  createdAt: string,
  tasks: readonly TaskSpec[],
): MissionShape {
  return {
    id,
    goal,
    createdAt,
    tasks,
    byId: new Map(tasks.map((t) => [t.id, t])),
    depths: depthsOf(tasks),
    order: topologicalOrder(tasks),
  };
}

/** The live view from what was read; pure, so tests build one without Redis. */
export function liveMissionOf(input: {
  readonly shape: MissionShape;
  readonly meta: {
    status: MissionStatus;
    createdAt: string;
    finishedAt: string | null;
    costUsd: number;
    delivery?: DeliveryStatus | null;
  };
  readonly states: Readonly<Record<string, TaskState>>;
  readonly hosts: readonly HostInfo[];
  readonly eventId: string;
  readonly now: number;
}): LiveMission {
  const { shape, meta, states, hosts, now } = input;
  const overview = buildOverview({
    tasks: shape.tasks,
    states,
    createdAt: meta.createdAt,
    finishedAt: meta.finishedAt,
    costUsd: meta.costUsd,
    // A finished mission needs no host; nothing of it waits for one.
    hosts: meta.status === 'running' ? hosts : null,
    now,
    order: shape.order,
  });
  return {
    shape,
    status: meta.status,
    finishedAt: meta.finishedAt,
    delivery: meta.delivery ?? null,
    states,
    hosts,
    overview,
    eventId: input.eventId,
    readAt: now,
  };
}

export class MissionViewReader {
  private readonly shapes = new Map<string, MissionShape>();
  private readonly live = new Map<string, LiveMission>();

  constructor(
    private readonly store: MissionStore,
    private readonly clock: () => number = Date.now,
  ) {}

  async shape(id: string): Promise<MissionShape> {
    const cached = this.shapes.get(id);
    const meta = await this.store.getMissionMeta(id);
    if (!meta) throw new FlotillaError('mission/not-found', `no mission '${id}'`);
    // A mission id reused after its keys were deleted is a different mission.
    if (cached && cached.createdAt === meta.createdAt) return cached;
    const { spec } = await this.store.getMission(id);
    const shape = shapeOf(id, meta.goal, meta.createdAt, spec.tasks);
    this.shapes.delete(id);
    this.shapes.set(id, shape);
    for (const old of this.shapes.keys()) {
      if (this.shapes.size <= SPEC_CACHE_SIZE) break;
      this.shapes.delete(old);
      this.live.delete(old);
    }
    return shape;
  }

  /** The mission's live state; reused while its event stream has not moved and it is fresh. */
  async read(id: string): Promise<LiveMission> {
    const [shape, eventId] = await Promise.all([this.shape(id), this.store.lastEventId(id)]);
    const now = this.clock();
    const known = this.live.get(id);
    const age = known ? now - known.readAt : Number.POSITIVE_INFINITY;
    if (
      known?.shape === shape &&
      (age < LIVE_MIN_AGE_MS || (known.eventId === eventId && age < LIVE_MAX_AGE_MS))
    )
      return known;
    const [meta, states, hosts] = await Promise.all([
      this.store.getMissionMeta(id),
      this.store.getTasks(id),
      this.store.hosts(),
    ]);
    if (!meta) throw new FlotillaError('mission/not-found', `no mission '${id}'`);
    const live = liveMissionOf({ shape, meta, states, hosts, eventId, now });
    this.live.set(id, live);
    return live;
  }
}
