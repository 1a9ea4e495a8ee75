import type { Job } from 'bullmq';
import { spawnedCli } from '../../shared/audit.js';
import type { FinalizeJobData } from '../../shared/contracts.js';
import type { HostContext } from '../context.js';
import { assertSigned } from '../job-guard.js';
import { formatSummary } from './summary.js';

/**
 * Runs once per mission (deterministic job id) after the last task settled: writes the summary
 * and tells everyone who follows the mission's events.
 */
export async function finalizeMission(
  ctx: HostContext,
  job: Job<FinalizeJobData>,
): Promise<{ status: string }> {
  assertSigned(ctx, job);
  const { missionId } = job.data;
  const status = await ctx.store.status(missionId);
  const { meta } = await ctx.store.getMission(missionId);
  const audit = await ctx.store.getAudit(missionId);
  // CLI processes that really ran: a budget refusal or a route row spawned nothing.
  const spawned = audit.filter((entry) => spawnedCli(entry.event)).length;
  const summary = formatSummary(status, { repo: meta.repo, spawned });
  await ctx.store.setMetaField(missionId, 'summary', summary);
  await ctx.store.setMetaField(missionId, 'spawned', String(spawned));
  await ctx.store.audit(missionId, {
    at: new Date().toISOString(),
    taskId: '',
    attempt: 0,
    stage: 'mission',
    event: { kind: 'mission', action: 'finished', status: status.status },
  });
  await ctx.store.emit({ missionId, type: 'mission', status: status.status, message: summary });
  ctx.missions.delete(missionId);
  await ctx.store.publishControl({ type: 'finished', missionId });
  ctx.logger.info({ missionId, status: status.status }, 'mission finished');
  return { status: status.status };
}
