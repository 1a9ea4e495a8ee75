import type { AuditStage } from '../../shared/audit.js';
import type { TaskStatus } from '../../shared/contracts.js';
import type { AuditInput } from '../../shared/store/mission-store.js';
import type { HostContext } from './context.js';

/** The attempt a stage works on. */
export interface AttemptRef {
  readonly missionId: string;
  readonly taskId: string;
  readonly attempt: number;
}

/** An audit row of this host for one attempt: the time and the host are filled in here. */
export async function recordStage(
  ctx: Pick<HostContext, 'store' | 'hostId'>,
  ref: AttemptRef,
  stage: AuditStage,
  entry: Pick<AuditInput, 'event'> & Partial<Pick<AuditInput, 'cli' | 'files'>>,
): Promise<void> {
  await ctx.store.audit(ref.missionId, {
    at: new Date().toISOString(),
    taskId: ref.taskId,
    attempt: ref.attempt,
    stage,
    host: ctx.hostId,
    ...entry,
  });
}

/** A stage starting on the attempt: its status in mission state, and the event `run` and `status --watch` show. */
export async function enterStage(
  ctx: Pick<HostContext, 'store'>,
  ref: AttemptRef,
  status: TaskStatus,
  message: string,
): Promise<void> {
  await ctx.store.mark(ref.missionId, ref.taskId, ref.attempt, status);
  await ctx.store.emit({ ...ref, type: 'task', status, message });
}
