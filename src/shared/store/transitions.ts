import type { MissionStatus, TaskState, TaskStatus } from '../contracts.js';
import { FlotillaError } from '../errors.js';
import type { RedisClient } from '../redis.js';
import { type AuditInput, chainArgs } from './audit-log.js';
import { missionKeys } from './keys.js';
import { CANCEL_SCRIPT, LUA_CODES, type LuaCode, MARK_SCRIPT, SETTLE_SCRIPT } from './scripts.js';
import { toStored } from './task-state.js';

export type SettleAction = 'approve' | 'retry' | 'fail' | 'skip' | 'cancel' | 'pause' | 'hold' | 'answer';

export interface SettleOutcome {
  applied: boolean;
  released: string[];
  skipped: string[];
  settled: boolean;
  missionStatus: MissionStatus;
  taskStatus: TaskStatus;
  attempts: number;
}

/** One attempt of a release batch: its route, and the BullMQ job hash that says it was added. */
export interface ReleaseItem {
  taskId: string;
  attempt: number;
  route: string;
  jobKey: string;
}

/**
 * The transitions of task state that hosts race on, each one Lua script (scripts.ts) over the
 * mission's keys, so a stale or repeated job cannot rewind a task or release a dependent twice.
 */
export class Transitions {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  /**
   * The per-release bookkeeping of a batch of attempts in one round trip (queue/enqueue.ts): each
   * route recorded on its task (MARK, patch only), whether each attempt's job (`jobKey`, a BullMQ
   * job hash) already exists, and the mission's cancel flag.
   */
  async prepareRelease(
    id: string,
    attempts: readonly ReleaseItem[],
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
    const entry = audit ? chainArgs(id, audit) : ['', '', ''];
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
}
