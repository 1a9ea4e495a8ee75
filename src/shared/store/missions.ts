import type { DeliveryStatus, MissionStatus, MissionStatusJson, TaskState } from '../contracts.js';
import { FlotillaError } from '../errors.js';
import type { MissionSpec } from '../mission.js';
import type { RedisClient } from '../redis.js';
import { signPayload, verifyPayload } from '../signing.js';
import { missionIndexKey, missionKeys } from './keys.js';
import { fromStored, statusJson } from './task-state.js';

/** What submit gives to create a mission: its spec, workspace and the tasks that start at once. */
export interface NewMission {
  id: string;
  spec: MissionSpec;
  repo: string;
  baseCommit: string;
  roots: readonly string[];
  now: string;
}

export interface MissionMeta {
  id: string;
  goal: string;
  status: MissionStatus;
  createdAt: string;
  finishedAt: string | null;
  repo: string;
  baseCommit: string;
  cancelled: boolean;
  costUsd: number;
  /** Where the delivery stands (`deliver:`); null before the mission ended or without `deliver:`. */
  delivery: DeliveryStatus | null;
}

/** One mission as `missionRows` reads it: goal, status, createdAt, finishedAt, costUsd (null if gone). */
export interface MissionRowRaw {
  readonly id: string;
  readonly meta: (string | null)[] | null;
  readonly tasks: Readonly<Record<string, string>>;
}

export interface MissionRecord {
  meta: MissionMeta;
  spec: MissionSpec;
}

/**
 * A mission's record in Redis: the spec (signed when a secret is set), its facts, the task states
 * and the dependency graph, the index of missions, and the status JSON built from them. The
 * transitions of task state are transitions.ts's.
 */
export class Missions {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    private readonly secret?: string,
  ) {}

  async createMission(input: NewMission): Promise<void> {
    const keys = missionKeys(this.prefix, input.id);
    const specJson = JSON.stringify(input.spec);
    const tasks: Record<string, string> = {};
    const graph: Record<string, string> = {};
    // Built in one pass each: looking them up per task made a 10,000-task submit spend 2.5 s here.
    const roots = new Set(input.roots);
    const dependentsOf = new Map(input.spec.tasks.map((task) => [task.id, [] as string[]]));
    for (const task of input.spec.tasks) {
      for (const dep of new Set(task.dependsOn)) dependentsOf.get(dep)?.push(task.id);
    }
    for (const task of input.spec.tasks) {
      const root = roots.has(task.id);
      const state: TaskState = {
        status: root ? 'queued' : 'pending',
        attempts: root ? 1 : 0,
        cli: null,
        host: null,
        score: null,
        error: null,
      };
      tasks[task.id] = JSON.stringify(state);
      graph[task.id] = JSON.stringify({ deps: task.dependsOn, dependents: dependentsOf.get(task.id) ?? [] });
    }
    const meta: Record<string, string> = {
      id: input.id,
      goal: input.spec.goal,
      status: 'running',
      createdAt: input.now,
      repo: input.repo,
      baseCommit: input.baseCommit,
      spec: specJson,
      costUsd: '0',
      // Tasks not yet completed, failed, skipped or cancelled; the Lua scripts keep it (scripts.ts).
      open: String(input.spec.tasks.length),
    };
    if (this.secret) meta.sig = signPayload({ id: input.id, spec: specJson, repo: input.repo }, this.secret);
    const created = await this.redis.hsetnx(keys.meta, 'id', input.id);
    if (created === 0) throw new FlotillaError('internal', `mission ${input.id} already exists`);
    await this.redis
      .multi()
      .hset(keys.meta, meta)
      .hset(keys.tasks, tasks)
      .hset(keys.graph, graph)
      .zadd(missionIndexKey(this.prefix), Date.parse(input.now), input.id)
      .exec();
  }

  async missionExists(id: string): Promise<boolean> {
    return (await this.redis.exists(missionKeys(this.prefix, id).meta)) === 1;
  }

  /** The mission's spec and facts; refuses a spec whose signature does not match the secret. */
  async getMission(id: string): Promise<MissionRecord> {
    const raw = await this.redis.hgetall(missionKeys(this.prefix, id).meta);
    if (!raw.spec || !raw.id) throw new FlotillaError('mission/not-found', `no mission '${id}'`);
    if (
      this.secret &&
      !verifyPayload({ id: raw.id, spec: raw.spec, repo: raw.repo, sig: raw.sig }, this.secret)
    ) {
      throw new FlotillaError(
        'job/unsigned',
        `mission ${id}: spec signature missing or wrong; refusing to run it`,
      );
    }
    return {
      spec: JSON.parse(raw.spec) as MissionSpec,
      meta: {
        id: raw.id,
        goal: raw.goal ?? '',
        status: (raw.status ?? 'running') as MissionStatus,
        createdAt: raw.createdAt ?? '',
        finishedAt: raw.finishedAt ?? null,
        repo: raw.repo ?? '',
        baseCommit: raw.baseCommit ?? '',
        cancelled: raw.cancelled === '1',
        costUsd: Number(raw.costUsd ?? 0),
        delivery: raw.delivery ? (JSON.parse(raw.delivery) as DeliveryStatus) : null,
      },
    };
  }

  /**
   * The mission's facts without its spec: the spec of a 10,000-task mission is megabytes and never
   * changes, so a reader that already holds it (the board) asks only for these.
   */
  async getMissionMeta(id: string): Promise<Omit<MissionMeta, 'repo' | 'baseCommit'> | null> {
    const [rawId, goal, status, createdAt, finishedAt, cancelled, costUsd, delivery] = await this.redis.hmget(
      missionKeys(this.prefix, id).meta,
      'id',
      'goal',
      'status',
      'createdAt',
      'finishedAt',
      'cancelled',
      'costUsd',
      'delivery',
    );
    if (!rawId) return null;
    return {
      id: rawId,
      goal: goal ?? '',
      status: (status ?? 'running') as MissionStatus,
      createdAt: createdAt ?? '',
      finishedAt: finishedAt ?? null,
      cancelled: cancelled === '1',
      costUsd: Number(costUsd ?? 0),
      delivery: delivery ? (JSON.parse(delivery) as DeliveryStatus) : null,
    };
  }

  async getTasks(id: string): Promise<Record<string, TaskState>> {
    const raw = await this.redis.hgetall(missionKeys(this.prefix, id).tasks);
    const out: Record<string, TaskState> = {};
    for (const [taskId, json] of Object.entries(raw)) out[taskId] = fromStored(json);
    return out;
  }

  async getTask(id: string, taskId: string): Promise<TaskState | null> {
    const raw = await this.redis.hget(missionKeys(this.prefix, id).tasks, taskId);
    return raw ? fromStored(raw) : null;
  }

  /** Several tasks' states in one round trip, in the order asked; null for an unknown id. */
  async getTaskStates(id: string, taskIds: readonly string[]): Promise<(TaskState | null)[]> {
    if (taskIds.length === 0) return [];
    const raw = await this.redis.hmget(missionKeys(this.prefix, id).tasks, ...taskIds);
    return raw.map((json) => (json ? fromStored(json) : null));
  }

  async isCancelled(id: string): Promise<boolean> {
    return (await this.redis.hget(missionKeys(this.prefix, id).meta, 'cancelled')) === '1';
  }

  async addCost(id: string, usd: number): Promise<number> {
    if (!usd) return Number((await this.redis.hget(missionKeys(this.prefix, id).meta, 'costUsd')) ?? 0);
    return Number(await this.redis.hincrbyfloat(missionKeys(this.prefix, id).meta, 'costUsd', usd));
  }

  async setMetaField(id: string, field: string, value: string): Promise<void> {
    await this.redis.hset(missionKeys(this.prefix, id).meta, field, value);
  }

  async getMetaField(id: string, field: string): Promise<string | null> {
    return this.redis.hget(missionKeys(this.prefix, id).meta, field);
  }

  /** Records where the mission's delivery stands (the status JSON's `delivery`). */
  async setDelivery(id: string, delivery: DeliveryStatus): Promise<void> {
    await this.setMetaField(id, 'delivery', JSON.stringify(delivery));
  }

  /**
   * The newest missions' list fields and raw task states, in one pipelined round trip (the board's
   * list page and every metrics scrape); the spec is not read.
   */
  async missionRows(limit: number): Promise<MissionRowRaw[]> {
    const ids = await this.listMissions(limit);
    if (ids.length === 0) return [];
    const pipeline = this.redis.pipeline();
    for (const id of ids) {
      const keys = missionKeys(this.prefix, id);
      pipeline.hmget(keys.meta, 'goal', 'status', 'createdAt', 'finishedAt', 'costUsd');
      pipeline.hgetall(keys.tasks);
    }
    const replies = (await pipeline.exec()) ?? [];
    return ids.map((id, i) => {
      const [metaError, meta] = replies[i * 2] ?? [];
      const [tasksError, tasks] = replies[i * 2 + 1] ?? [];
      const ok = !metaError && !tasksError && Array.isArray(meta);
      return {
        id,
        meta: ok ? (meta as unknown[]).map((v) => (typeof v === 'string' ? v : null)) : null,
        tasks: ok && tasks && typeof tasks === 'object' ? (tasks as Record<string, string>) : {},
      };
    });
  }

  async listMissions(limit = 50): Promise<string[]> {
    return this.redis.zrevrange(missionIndexKey(this.prefix), 0, limit - 1);
  }

  async status(id: string): Promise<MissionStatusJson> {
    const [{ meta, spec }, states] = await Promise.all([this.getMission(id), this.getTasks(id)]);
    return statusJson(id, meta, spec, states);
  }
}
