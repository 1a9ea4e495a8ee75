import type { Logger } from '../shared/logger.js';
import type { MissionSpec } from '../shared/mission.js';
import type { PrepareWorkspace } from '../shared/prepare-workspace.js';
import { enqueueAttempts } from '../shared/queue/enqueue.js';
import { runPriorities } from '../shared/queue/priority.js';
import type { QueueSet } from '../shared/queue/queues.js';
import type { MissionStore } from '../shared/store/mission-store.js';
import { newMissionId } from './mission-id.js';

export interface SubmitContext {
  readonly store: MissionStore;
  readonly queues: QueueSet;
  readonly secret: string | undefined;
  readonly logger: Logger;
  readonly prepareWorkspace: PrepareWorkspace;
}

/**
 * Stores a validated mission and enqueues its root tasks. Validation happens before this is
 * called, so an invalid mission never reaches Redis.
 */
export async function submitValidMission(
  ctx: SubmitContext,
  valid: MissionSpec,
  id = newMissionId(valid.goal),
) {
  // Once, here: the priorities travel in the (signed) spec, so a release costs no extra read.
  const priorities = runPriorities(valid.tasks);
  const spec: MissionSpec = {
    ...valid,
    tasks: valid.tasks.map((task) => ({ ...task, priority: priorities.get(task.id) })),
  };
  const workspace = await ctx.prepareWorkspace({ workspace: spec.workspace, base: spec.base, missionId: id });
  const roots = spec.tasks.filter((task) => task.dependsOn.length === 0).map((task) => task.id);
  const now = new Date().toISOString();
  await ctx.store.createMission({
    id,
    spec,
    repo: workspace.repo,
    baseCommit: workspace.baseCommit,
    roots,
    now,
  });
  await ctx.store.emit({ missionId: id, type: 'submitted', message: `mission submitted: ${spec.goal}` });
  await ctx.store.audit(id, {
    at: now,
    taskId: '',
    attempt: 0,
    stage: 'mission',
    event: {
      kind: 'mission',
      action: 'submitted',
      tasks: spec.tasks.length,
      repo: workspace.repo,
      baseCommit: workspace.baseCommit,
      branch: workspace.branch,
    },
  });
  for (const note of workspace.notes) {
    await ctx.store.audit(id, {
      at: now,
      taskId: '',
      attempt: 0,
      stage: 'mission',
      event: { kind: 'mission', action: 'workspace', note },
    });
  }
  const rootTasks = spec.tasks.filter((task) => task.dependsOn.length === 0);
  await enqueueAttempts(
    ctx,
    id,
    rootTasks.map((task) => ({ task, attempt: 1 })),
  );
  ctx.logger.info({ missionId: id, tasks: spec.tasks.length }, 'mission submitted');
  return { id, branch: workspace.branch, repo: workspace.repo, notes: workspace.notes };
}
