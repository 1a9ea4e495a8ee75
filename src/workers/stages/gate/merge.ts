/**
 * The gate's merge step: an approved attempt's work goes into the mission's integration branch,
 * batched with the other gates of this host that wait for the same branch (workspace/integrate.ts).
 */
import { attemptRef, type RunResult, type StageJobData } from '../../../shared/contracts.js';
import { FlotillaError } from '../../../shared/errors.js';
import { type IntegrateResult, integrateAttempt } from '../../workspace/integrate.js';
import { openRepoCache } from '../../workspace/repo-cache.js';
import type { HostContext } from '../context.js';

export async function mergeApproved(
  ctx: Pick<HostContext, 'cacheDir'>,
  repo: string,
  job: Pick<StageJobData, 'missionId' | 'taskId' | 'attempt'>,
  run: RunResult,
): Promise<IntegrateResult> {
  const { missionId, taskId, attempt } = job;
  // A run result from before work and dispatch files were two commits has the work in `commit`.
  const workCommit = run.workCommit ?? run.commit;
  if (!workCommit) {
    throw new FlotillaError('internal', `${missionId}: approved attempt ${taskId}/a${attempt} has no commit`);
  }
  const cache = await openRepoCache({ repo, cacheDir: ctx.cacheDir });
  return integrateAttempt({
    cache,
    missionId,
    attemptId: `${taskId}/a${attempt}`,
    ref: run.branch ?? attemptRef(missionId, taskId, attempt),
    workCommit,
    message: `flotilla: merge ${taskId} (attempt ${attempt})`,
  });
}
