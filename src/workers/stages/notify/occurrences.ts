import type { MissionStatusJson, TaskStatus } from '../../../shared/contracts.js';
import type { NotifyEvent, NotifyOccurrence } from '../../../shared/notify.js';
import { enqueueNotifications } from '../../../shared/queue/notify.js';
import type { SettleOutcome } from '../../../shared/store/mission-store.js';
import { type HostContext, missionRecord } from '../context.js';

/** The task statuses a settled attempt can be told by (`notify:`). */
const SETTLED_EVENTS: Partial<Record<TaskStatus, NotifyEvent>> = {
  failed: 'task.failed',
  completed: 'task.completed',
  needs_input: 'task.needs_input',
  awaiting_approval: 'task.awaiting_approval',
};

/**
 * Tells the mission's webhooks about an attempt that settled where one wants to hear of it. Called
 * after the transition whether or not it applied: a replay reports the same occurrence, which is
 * queued once (its delivery id), so a host that died between the two loses no notification. A
 * failure to queue is logged, never the gate's failure.
 */
export async function notifySettled(
  ctx: HostContext,
  ref: { missionId: string; taskId: string; attempt: number },
  outcome: Pick<SettleOutcome, 'taskStatus' | 'attempts'>,
): Promise<void> {
  const event = SETTLED_EVENTS[outcome.taskStatus];
  // A later attempt's state is not this attempt's to report.
  if (!event || outcome.attempts !== ref.attempt) return;
  await notify(ctx, ref.missionId, (status) => {
    const task = status.tasks.find((t) => t.id === ref.taskId);
    if (!task) return null;
    return {
      event,
      key: `${event}.${ref.taskId}.a${ref.attempt}`,
      mission: missionFacts(status),
      task: {
        id: task.id,
        ...(task.title ? { title: task.title } : {}),
        status: task.status,
        attempts: task.attempts,
        error: task.error,
        ...(task.questions !== undefined ? { questions: task.questions } : {}),
        ...(task.heldAt ? { heldAt: task.heldAt } : {}),
      },
    };
  });
}

/** mission.finished, with the summary, once per mission (finalize). */
export async function notifyFinished(ctx: HostContext, missionId: string, summary: string): Promise<void> {
  await notify(ctx, missionId, (status) => ({
    event: 'mission.finished',
    key: 'mission.finished',
    mission: missionFacts(status),
    summary,
  }));
}

async function notify(
  ctx: HostContext,
  missionId: string,
  occurrence: (status: MissionStatusJson) => NotifyOccurrence | null,
): Promise<void> {
  try {
    const { spec } = await missionRecord(ctx, missionId);
    if (!spec.notify?.length) return;
    const found = occurrence(await ctx.store.status(missionId));
    if (found) await enqueueNotifications(ctx, missionId, spec, found);
  } catch (error) {
    ctx.logger.warn({ missionId, err: (error as Error).message }, 'queueing a webhook notification failed');
  }
}

function missionFacts(status: MissionStatusJson): NotifyOccurrence['mission'] {
  return {
    id: status.id,
    goal: status.goal,
    status: status.status,
    branch: status.branch,
    ...(status.workspace ? { workspace: status.workspace } : {}),
    ...(status.costUsd ? { costUsd: status.costUsd } : {}),
  };
}
