import { type AuditEvent, renderAuditEvent } from '../shared/audit.js';
import { entryContentHash, genesisHash } from '../shared/audit-chain.js';
import { canonicalJson } from '../shared/canonical-json.js';
import type {
  AuditEntry,
  MissionEvent,
  MissionStatus,
  MissionStatusJson,
  TaskState,
  TaskStatus,
} from '../shared/contracts.js';
import { FlotillaError } from '../shared/errors.js';
import type { MissionSpec } from '../shared/mission.js';
import type { Receipt } from '../shared/receipt.js';
import type { RedisClient } from '../shared/redis.js';
import { signPayload, verifyPayload } from '../shared/signing.js';
import { controlChannel, handbackKey, lockKey, missionIndexKey, missionKeys } from './keys.js';
import { type HostInfo, listHosts, type RoutableHost, routableHosts } from './registry.js';
import {
  APPEND_AUDIT_SCRIPT,
  CANCEL_SCRIPT,
  LUA_CODES,
  type LuaCode,
  MARK_SCRIPT,
  SETTLE_SCRIPT,
} from './scripts.js';
import { fromStored, statusJson, toStored } from './task-state.js';

/** An audit entry as a stage writes it: the event, without its rendered message. */
export type AuditInput = Omit<AuditEntry, 'message' | 'event'> & { readonly event: AuditEvent };

export type SettleAction = 'approve' | 'retry' | 'fail' | 'cancel' | 'pause' | 'answer';

export interface SettleOutcome {
  applied: boolean;
  released: string[];
  skipped: string[];
  settled: boolean;
  missionStatus: MissionStatus;
  taskStatus: TaskStatus;
  attempts: number;
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

const EVENTS_MAXLEN = 20_000;
/** A critic job is handed back for seconds, not hours; its counter outlives it by far. */
const HANDBACK_TTL_MS = 3_600_000;

/**
 * Mission state in Redis: the spec (signed when a secret is set), task states, the dependency
 * graph, an event stream and the audit trail. Transitions that hosts may race on are Lua scripts.
 */
export class MissionStore {
  constructor(
    private readonly redis: RedisClient,
    readonly prefix: string,
    private readonly secret?: string,
  ) {}

  async createMission(input: {
    id: string;
    spec: MissionSpec;
    repo: string;
    baseCommit: string;
    roots: readonly string[];
    now: string;
  }): Promise<void> {
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
      // Tasks not yet completed, failed, skipped or cancelled; the Lua scripts keep it (store-scripts.ts).
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
      },
    };
  }

  /**
   * The mission's facts without its spec: the spec of a 10,000-task mission is megabytes and never
   * changes, so a reader that already holds it (the board) asks only for these.
   */
  async getMissionMeta(id: string): Promise<Omit<MissionMeta, 'repo' | 'baseCommit'> | null> {
    const [rawId, goal, status, createdAt, finishedAt, cancelled, costUsd] = await this.redis.hmget(
      missionKeys(this.prefix, id).meta,
      'id',
      'goal',
      'status',
      'createdAt',
      'finishedAt',
      'cancelled',
      'costUsd',
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
    };
  }

  /** The id of the newest event on the mission's stream ('0' if none): it changes whenever a task does. */
  async lastEventId(id: string): Promise<string> {
    const reply = await this.redis.xrevrange(missionKeys(this.prefix, id).events, '+', '-', 'COUNT', 1);
    return reply[0]?.[0] ?? '0';
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

  /**
   * The per-release bookkeeping of a batch of attempts in one round trip (queue/enqueue.ts): each
   * route recorded on its task (MARK, patch only), whether each attempt's job (`jobKey`, a BullMQ
   * job hash) already exists, and the mission's cancel flag.
   */
  async prepareRelease(
    id: string,
    attempts: readonly { taskId: string; attempt: number; route: string; jobKey: string }[],
  ): Promise<{ cancelled: boolean; existing: boolean[] }> {
    const keys = missionKeys(this.prefix, id);
    const round = this.redis.pipeline().hget(keys.meta, 'cancelled');
    for (const item of attempts) {
      const patch = JSON.stringify({ route: item.route });
      round.eval(MARK_SCRIPT, 2, keys.meta, keys.tasks, item.taskId, String(item.attempt), '', patch);
      round.exists(item.jobKey);
    }
    const replies = (await round.exec()) ?? [];
    for (const [error] of replies) if (error) throw error;
    return {
      cancelled: replies[0]?.[1] === '1',
      existing: attempts.map((_, i) => replies[2 + 2 * i]?.[1] === 1),
    };
  }

  /** running / verifying / reviewing for the current attempt only; `null` patches fields alone. */
  async mark(
    id: string,
    taskId: string,
    attempt: number,
    status: TaskStatus | null,
    patch: Partial<TaskState> = {},
  ): Promise<boolean> {
    const keys = missionKeys(this.prefix, id);
    const applied = await this.redis.eval(
      MARK_SCRIPT,
      2,
      keys.meta,
      keys.tasks,
      taskId,
      String(attempt),
      status ?? '',
      JSON.stringify(toStored(patch)),
    );
    return applied === 1;
  }

  async settle(
    id: string,
    taskId: string,
    attempt: number,
    action: SettleAction,
    patch: Partial<TaskState>,
    now: string,
    /** The transition's audit entry (its task is `taskId`), appended only if the transition applies. */
    audit?: AuditInput,
  ): Promise<SettleOutcome> {
    const keys = missionKeys(this.prefix, id);
    const entry = audit ? this.chainArgs(id, audit) : ['', '', ''];
    const raw = (await this.redis.eval(
      SETTLE_SCRIPT,
      5,
      keys.meta,
      keys.tasks,
      keys.graph,
      keys.audit,
      keys.auditIndex,
      taskId,
      String(attempt),
      action,
      JSON.stringify(toStored(patch)),
      now,
      ...entry,
    )) as [LuaCode, number, number, MissionStatus, TaskStatus, number, string[], string[]];
    const [code, applied, settled, missionStatus, taskStatus, attempts, released, skipped] = raw;
    if (code === LUA_CODES.unknownTask)
      throw new FlotillaError('internal', `settle ${id}/${taskId}: unknown task`);
    return {
      applied: applied === 1,
      released: released ?? [],
      skipped: skipped ?? [],
      settled: settled === 1,
      missionStatus,
      taskStatus,
      attempts: Number(attempts),
    };
  }

  async cancel(
    id: string,
    now: string,
  ): Promise<{ cancelled: string[]; running: string[]; settled: boolean }> {
    const keys = missionKeys(this.prefix, id);
    const [code, settled, cancelled, running] = (await this.redis.eval(
      CANCEL_SCRIPT,
      2,
      keys.meta,
      keys.tasks,
      now,
    )) as [LuaCode, number, string[], string[]];
    if (code === LUA_CODES.unknownMission) throw new FlotillaError('mission/not-found', `no mission '${id}'`);
    return { cancelled: cancelled ?? [], running: running ?? [], settled: settled === 1 };
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

  async emit(event: Omit<MissionEvent, 'at'> & { at?: string }): Promise<void> {
    const full: MissionEvent = { at: event.at ?? new Date().toISOString(), ...event };
    await this.redis.xadd(
      missionKeys(this.prefix, event.missionId).events,
      'MAXLEN',
      '~',
      String(EVENTS_MAXLEN),
      '*',
      'event',
      JSON.stringify(full),
    );
  }

  /** Events after `lastId` (exclusive), waiting up to blockMs for new ones. */
  async readEvents(
    id: string,
    lastId: string,
    blockMs: number,
  ): Promise<{ id: string; event: MissionEvent }[]> {
    const key = missionKeys(this.prefix, id).events;
    const reply = (
      blockMs > 0
        ? await this.redis.xread('COUNT', 500, 'BLOCK', blockMs, 'STREAMS', key, lastId)
        : await this.redis.xread('COUNT', 500, 'STREAMS', key, lastId)
    ) as [string, [string, string[]][]][] | null;
    if (!reply) return [];
    const entries = reply[0]?.[1] ?? [];
    return entries.map(([entryId, fields]) => ({
      id: entryId,
      event: JSON.parse(fields[1] ?? '{}') as MissionEvent,
    }));
  }

  /**
   * Appends an entry to the mission's hash-chained trail (shared/audit-chain.ts) and indexes it
   * under its task: one script links, pushes and indexes it, the one round trip a plain RPUSH took.
   * Its message is the rendering of its event. Returns the entry's number in the chain.
   */
  async audit(id: string, entry: AuditInput): Promise<number> {
    const keys = missionKeys(this.prefix, id);
    const n = await this.redis.eval(
      APPEND_AUDIT_SCRIPT,
      3,
      keys.meta,
      keys.audit,
      keys.auditIndex,
      entry.taskId,
      ...this.chainArgs(id, entry),
    );
    return Number(n);
  }

  /** An entry as audit-append.lua takes it: canonical JSON, its content hash, the genesis hash. */
  private chainArgs(id: string, entry: AuditInput): [string, string, string] {
    const { chain: _ignored, ...rest } = entry as AuditInput & { chain?: unknown };
    const content: AuditEntry = { ...rest, message: renderAuditEvent(entry.event) };
    return [canonicalJson(content), entryContentHash(content), genesisHash(id)];
  }

  /**
   * One task's audit entries, oldest first, read by their positions: the board's task detail
   * reads this on a click, and the whole trail of a 10,000-task mission is tens of megabytes.
   * A mission written before the index existed is read whole and filtered.
   */
  async getTaskAudit(id: string, taskId: string): Promise<AuditEntry[]> {
    const keys = missionKeys(this.prefix, id);
    const [positions, indexed] = await Promise.all([
      this.redis.hget(keys.auditIndex, taskId),
      this.redis.exists(keys.auditIndex),
    ]);
    if (positions === null) {
      if (indexed === 1) return [];
      return (await this.getAudit(id)).filter((entry) => entry.taskId === taskId);
    }
    const pipeline = this.redis.pipeline();
    for (const at of positions.split(',')) pipeline.lindex(keys.audit, Number(at));
    const replies = (await pipeline.exec()) ?? [];
    return replies
      .map(([, raw]) => (typeof raw === 'string' ? (JSON.parse(raw) as AuditEntry) : null))
      .filter((entry): entry is AuditEntry => entry !== null);
  }

  async getAudit(id: string): Promise<AuditEntry[]> {
    const raw = await this.redis.lrange(missionKeys(this.prefix, id).audit, 0, -1);
    return raw.map((json) => JSON.parse(json) as AuditEntry);
  }
  /** The receipt finalize wrote (flotilla receipt <id>), or null before the mission finished. */
  async getReceipt(id: string): Promise<Receipt | null> {
    const raw = await this.redis.hget(missionKeys(this.prefix, id).meta, 'receipt');
    return raw ? (JSON.parse(raw) as Receipt) : null;
  }

  async setReceipt(id: string, receipt: Receipt): Promise<void> {
    await this.redis.hset(missionKeys(this.prefix, id).meta, 'receipt', JSON.stringify(receipt));
  }

  /** The trail's head as the append script left it: its last hash and how many entries it wrote. */
  async getAuditHead(id: string): Promise<{ count: number; head: string | null }> {
    const [count, head] = await this.redis.hmget(
      missionKeys(this.prefix, id).meta,
      'auditCount',
      'auditHead',
    );
    return { count: Number(count ?? 0), head: head ?? null };
  }

  /**
   * Counts one more hand-back of a critic job, beside the job (not in its signed data); the
   * count expires after HANDBACK_TTL_MS so a forgotten one costs nothing.
   */
  async countHandback(jobId: string): Promise<number> {
    const key = handbackKey(this.prefix, jobId);
    const [[, count] = [null, 0]] = ((await this.redis
      .multi()
      .incr(key)
      .pexpire(key, HANDBACK_TTL_MS)
      .exec()) ?? []) as [Error | null, number][];
    return Number(count);
  }

  /**
   * Tells every host about a mission: `cancel` kills its running CLIs, `finished` drops its spec,
   * `unpark` frees the checkout a host parked for an attempt whose next stage runs elsewhere.
   */
  async publishControl(message: {
    type: 'cancel' | 'finished' | 'unpark';
    missionId: string;
    /** For `unpark`: the attempt (`<mission>/<task>/<attempt>`) whose parked checkout is free. */
    key?: string;
  }): Promise<void> {
    await this.redis.publish(controlChannel(this.prefix), JSON.stringify(message));
  }

  /** Takes a named lock for `ms` if nobody holds it (the sweep: one host at a time). */
  async tryLock(name: string, owner: string, ms: number): Promise<boolean> {
    return (await this.redis.set(lockKey(this.prefix, name), owner, 'PX', ms, 'NX')) === 'OK';
  }

  /** Every live host's registry entry, as `flotilla hosts` and the board show them. */
  async hosts(): Promise<HostInfo[]> {
    return listHosts(this.redis, this.prefix);
  }

  /** Which of these BullMQ job hashes exist, in one round trip (the sweep's lost-job probe). */
  async jobsExist(jobKeys: readonly string[]): Promise<boolean[]> {
    if (jobKeys.length === 0) return [];
    const probe = this.redis.pipeline();
    for (const key of jobKeys) probe.exists(key);
    const replies = (await probe.exec()) ?? [];
    return jobKeys.map((_, i) => replies[i]?.[1] === 1);
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

  /** The live hosts' routing view (advertised CLIs less disabled and cooling ones). */
  async liveHosts(): Promise<RoutableHost[]> {
    return routableHosts(await listHosts(this.redis, this.prefix));
  }

  async listMissions(limit = 50): Promise<string[]> {
    return this.redis.zrevrange(missionIndexKey(this.prefix), 0, limit - 1);
  }

  async status(id: string): Promise<MissionStatusJson> {
    const [{ meta, spec }, states] = await Promise.all([this.getMission(id), this.getTasks(id)]);
    return statusJson(id, meta, spec, states);
  }
}
