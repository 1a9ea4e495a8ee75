/**
 * A delivery try and what it comes to, recorded the same way whoever ran it (the delivery job on a
 * host, `flotilla deliver <id>`): the status JSON's `delivery`, an audit entry for a failure, and —
 * once the delivery settled — the summary's delivery lines. The first settling tells the mission's
 * end (announceEnd); a later one (`flotilla deliver` after a failure) rewrites the summary and says
 * so on the mission's event stream.
 */
import type { DeliveryStatus } from '../../../shared/contracts.js';
import { integrationBranch } from '../../../shared/contracts.js';
import { announceEnd, SUMMARY_BEFORE_DELIVERY } from '../finalize/announce.js';
import { formatDeliveryLines } from '../finalize/summary.js';
import { type DeliverContext, type DeliveryOutcome, deliverOnce } from './deliver.js';
import { DeliveryError } from './delivery-error.js';
import type { PushResult } from './push.js';
import { withoutCredentials } from './remote-url.js';

export interface TryOptions {
  /** No automatic try follows this one: a failure is final (until `flotilla deliver`). */
  readonly lastTry: boolean;
  /** When the next automatic try starts, for a failure that is retried. */
  readonly nextTryInMs?: number;
  /** The hosts' cache of mission specs, which forget the mission once its end is told. */
  readonly missions?: Map<string, unknown>;
  /** What else hears of the mission's end when this try tells it (the finished webhook). */
  readonly onEnd?: (summary: string) => Promise<void>;
}

export async function tryDelivery(
  ctx: DeliverContext,
  missionId: string,
  options: TryOptions,
): Promise<DeliveryStatus> {
  const before = (await ctx.store.getMission(missionId)).meta.delivery;
  const tries = (before?.tries ?? 0) + 1;
  const branch = integrationBranch(missionId);
  let outcome: DeliveryOutcome;
  const progress: { push?: PushResult } = {};
  try {
    outcome = await deliverOnce(ctx, missionId, progress);
  } catch (error) {
    const failure =
      error instanceof DeliveryError
        ? error
        : new DeliveryError(withoutCredentials((error as Error).message), true);
    const willRetry = failure.retryable && !options.lastTry;
    const delivery: DeliveryStatus = {
      state: willRetry ? 'retrying' : 'failed',
      remote: progress.push?.remote ?? before?.remote ?? null,
      branch,
      pushedCommit: progress.push?.commit ?? before?.pushedCommit ?? null,
      pullRequest: before?.pullRequest ?? null,
      tries,
      error: failure.message,
      ...(willRetry && options.nextTryInMs !== undefined
        ? { nextTryAt: new Date(Date.now() + options.nextTryInMs).toISOString() }
        : {}),
      at: new Date().toISOString(),
    };
    await ctx.store.audit(missionId, {
      at: delivery.at,
      taskId: '',
      attempt: 0,
      stage: 'delivery',
      host: ctx.host,
      event: { kind: 'delivery', action: 'failed', reason: failure.message, willRetry, tries },
    });
    ctx.logger.warn({ missionId, tries, willRetry }, `delivery failed: ${failure.message}`);
    await ctx.store.setDelivery(missionId, delivery);
    if (!willRetry) await settle(ctx, missionId, delivery, options);
    return delivery;
  }
  const delivery: DeliveryStatus = {
    state: 'delivered',
    remote: outcome.push.remote,
    branch,
    pushedCommit: outcome.push.commit,
    pullRequest: outcome.pullRequest,
    tries,
    error: outcome.notes.length > 0 ? outcome.notes.join('; ') : null,
    at: new Date().toISOString(),
  };
  await ctx.store.setDelivery(missionId, delivery);
  ctx.logger.info(
    { missionId, remote: delivery.remote, pullRequest: delivery.pullRequest?.url },
    'mission delivered',
  );
  await settle(ctx, missionId, delivery, options);
  return delivery;
}

/** The summary with the delivery's lines; the mission's end told if it was not yet. */
export async function settle(
  ctx: DeliverContext,
  missionId: string,
  delivery: DeliveryStatus,
  options: Pick<TryOptions, 'missions' | 'onEnd'> = {},
): Promise<void> {
  const { meta } = await ctx.store.getMission(missionId);
  const base = (await ctx.store.getMetaField(missionId, SUMMARY_BEFORE_DELIVERY)) ?? '';
  const lines = formatDeliveryLines(delivery, { missionId, repo: meta.repo });
  const summary = [base, ...lines].filter(Boolean).join('\n');
  if ((await ctx.store.getMetaField(missionId, 'summary')) === null) {
    await announceEnd(
      { ...ctx, ...(options.missions ? { missions: options.missions } : {}) },
      missionId,
      meta.status,
      summary,
      options.onEnd,
    );
    return;
  }
  await ctx.store.setMetaField(missionId, 'summary', summary);
  await ctx.store.emit({ missionId, type: 'log', message: lines.join(' ') });
}
