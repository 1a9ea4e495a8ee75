import type { Job } from 'bullmq';
import { spawnedCli } from '../../../shared/audit.js';
import { type DeliveryStatus, type FinalizeJobData, integrationBranch } from '../../../shared/contracts.js';
import { enqueueDeliver } from '../../../shared/queue/enqueue.js';
import { type Receipt, signReceipt } from '../../../shared/receipt.js';
import { deleteMissionCheckpoints } from '../../workspace/checkpoint.js';
import { openRepoCache } from '../../workspace/repo-cache.js';
import type { HostContext } from '../context.js';
import { assertSigned } from '../job-guard.js';
import { notifyFinished } from '../notify/occurrences.js';
import { announceEnd, SUMMARY_BEFORE_DELIVERY } from './announce.js';
import { type MissionEnd, readMissionEnd, receiptBody } from './collect-receipt.js';
import { runOnFinish } from './on-finish.js';
import { formatDeliveryLines, formatSummary } from './summary.js';

/**
 * Runs once per mission (deterministic job id) after the last task settled: writes the summary and
 * the receipt, and tells everyone who follows the mission's events. A mission with `deliver:` is
 * handed to its delivery job instead (stages/deliver/), which tells the end once delivery settled,
 * so the summary a follower prints says where the work went.
 */
export async function finalizeMission(
  ctx: HostContext,
  job: Job<FinalizeJobData>,
): Promise<{ status: string }> {
  assertSigned(ctx, job);
  const { missionId } = job.data;
  const status = await ctx.store.status(missionId);
  // A re-delivered finalize (its host died after this line) writes the entry again; the receipt
  // is then built over both, so it still matches the trail it signs.
  await ctx.store.audit(missionId, {
    at: new Date().toISOString(),
    taskId: '',
    attempt: 0,
    stage: 'mission',
    event: { kind: 'mission', action: 'finished', status: status.status },
  });
  // One read of the finished trail serves the summary and the receipt (it can be tens of MB).
  const end = await readMissionEnd(ctx.store, missionId);
  const { meta } = end.record;
  const audit = end.audit;
  // CLI processes that really ran (a budget refusal or a route row spawned nothing), and on how many hosts.
  const runs = audit.filter((entry) => spawnedCli(entry.event));
  const spawned = runs.length;
  const hosts = new Set(runs.map((entry) => entry.host).filter(Boolean)).size;
  const summary = formatSummary(status, { repo: meta.repo, spawned, hosts });
  await ctx.store.setMetaField(missionId, 'spawned', String(spawned));
  await writeReceipt(ctx, end);
  // Best effort: a leftover checkpoint ref is clutter in the user's repository, not a failure.
  await deleteMissionCheckpoints(
    await openRepoCache({ repo: meta.repo, cacheDir: ctx.cacheDir }),
    missionId,
  ).catch((error: unknown) =>
    ctx.logger.warn({ missionId, err: error }, 'could not delete leftover checkpoint refs'),
  );
  const told = (text: string) => missionEnded(ctx, missionId, text);
  const deliver = end.record.spec.deliver;
  if (!deliver) {
    await announceEnd(ctx, missionId, status.status, summary, told);
    return { status: status.status };
  }
  await ctx.store.setMetaField(missionId, SUMMARY_BEFORE_DELIVERY, summary);
  const wanted = (deliver.when as readonly string[]).includes(status.status);
  if (!wanted) {
    const delivery = skippedDelivery(missionId, status.status, deliver.when);
    await ctx.store.setDelivery(missionId, delivery);
    await ctx.store.audit(missionId, {
      at: delivery.at,
      taskId: '',
      attempt: 0,
      stage: 'delivery',
      host: ctx.hostId,
      event: { kind: 'delivery', action: 'skipped', reason: delivery.error ?? '' },
    });
    const lines = formatDeliveryLines(delivery, { missionId, repo: meta.repo });
    await announceEnd(ctx, missionId, status.status, [summary, ...lines].join('\n'), told);
    return { status: status.status };
  }
  // A replayed finalize keeps what a delivery that already ran recorded.
  if (!end.record.meta.delivery) await ctx.store.setDelivery(missionId, pendingDelivery(missionId));
  await enqueueDeliver(ctx, missionId, ctx.config.deliverBackoffMs);
  await ctx.store.emit({
    missionId,
    type: 'log',
    message: `mission ${status.status}: delivering ${integrationBranch(missionId)}${deliver.pullRequest ? ' and its pull request' : ''}`,
  });
  return { status: status.status };
}

function pendingDelivery(missionId: string): DeliveryStatus {
  return {
    state: 'pending',
    remote: null,
    branch: integrationBranch(missionId),
    pushedCommit: null,
    pullRequest: null,
    tries: 0,
    error: null,
    at: new Date().toISOString(),
  };
}

function skippedDelivery(missionId: string, status: string, when: readonly string[]): DeliveryStatus {
  return {
    ...pendingDelivery(missionId),
    state: 'skipped',
    error: `the mission is ${status}, and deliver.when is [${when.join(', ')}]`,
  };
}

/** Builds the receipt over the finished trail, signs it when the host has a key, and stores it. */
async function writeReceipt(ctx: HostContext, end: MissionEnd): Promise<void> {
  const missionId = end.record.meta.id;
  const cache = await openRepoCache({ repo: end.record.meta.repo, cacheDir: ctx.cacheDir });
  const branch = integrationBranch(missionId);
  await cache.fetch([branch]);
  const tip = await cache.remoteCommit(branch);
  const body = receiptBody(end, tip);
  const receipt: Receipt = ctx.signingKey ? signReceipt(body, ctx.signingKey) : { ...body, signature: null };
  if (!ctx.signingKey) {
    ctx.logger.warn(
      { missionId },
      'FLOTILLA_SIGNING_KEY is not set: the mission receipt is not signed (to sign receipts, point it at an Ed25519 private key file: docs/RECEIPTS.md)',
    );
  }
  await ctx.store.setReceipt(missionId, receipt);
}

/** Who hears of the mission's end besides its followers: the finished webhook, then `on_finish`. */
export async function missionEnded(ctx: HostContext, missionId: string, summary: string): Promise<void> {
  await notifyFinished(ctx, missionId, summary);
  await runOnFinish(ctx, missionId, summary);
}
