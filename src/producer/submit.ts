import type { Logger } from '../shared/logger.js';
import type { MissionSpec } from '../shared/mission.js';
import type { PrepareWorkspace } from '../shared/prepare-workspace.js';
import { enqueueAttempts } from '../shared/queue/enqueue.js';
import { runPriorities } from '../shared/queue/priority.js';
import type { QueueSet } from '../shared/queue/queues.js';
import { rememberCredential } from '../shared/remembered-credentials.js';
import type { MissionStore } from '../shared/store/mission-store.js';
import { splitUrlCredential } from '../shared/url-credentials.js';
import { newMissionId } from './mission-id.js';

export interface SubmitContext {
  readonly store: MissionStore;
  readonly queues: QueueSet;
  readonly secret: string | undefined;
  readonly logger: Logger;
  readonly prepareWorkspace: PrepareWorkspace;
}

/** Where the docs say how hosts get a repository's credential without a URL carrying it. */
const CREDENTIAL_DOCS = 'docs/OPERATING.md, "Private repositories"';

/**
 * A credential in the workspace URL leaves it here, before anything is stored, shown or logged:
 * this process keeps it in memory for its own git (shared/remembered-credentials.ts), and the
 * mission names the repository without it. Returns the one line of warning a person gets.
 */
function takeWorkspaceCredential(workspace: string): { workspace: string; warning?: string } {
  const { url, credential } = splitUrlCredential(workspace);
  if (!credential) return { workspace };
  rememberCredential(url, credential);
  const what = credential.password === '' ? 'the token' : 'the password';
  return {
    workspace: url,
    warning: `workspace ${url}: ${what} in its URL was removed before the mission was stored or shown; this process uses it in memory (its own git, and the hosts of \`flotilla run\`), other worker hosts need a git credential helper or GIT_ASKPASS for this repository (${CREDENTIAL_DOCS})`,
  };
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
  const taken = takeWorkspaceCredential(valid.workspace);
  // Once, here: the priorities travel in the (signed) spec, so a release costs no extra read.
  const priorities = runPriorities(valid.tasks);
  const spec: MissionSpec = {
    ...valid,
    workspace: taken.workspace,
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
  const warnings = taken.warning ? [taken.warning] : [];
  for (const note of [...warnings, ...workspace.notes]) {
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
  return { id, branch: workspace.branch, repo: workspace.repo, notes: workspace.notes, warnings };
}
