import type { HostContext } from '../context.js';

/**
 * The meta field holding the summary without its delivery lines: delivery (stages/deliver/) adds
 * them to it each time it settles, so a `flotilla deliver` that succeeds replaces the failure.
 */
export const SUMMARY_BEFORE_DELIVERY = 'summaryBeforeDelivery';

/**
 * The mission's end, told once: the summary written, then the `mission` event every follower
 * (`run`, `submit --wait`, `client.wait()`) ends on, then the hosts told to forget the mission.
 * Finalize calls it, or, for a mission with `deliver:`, the delivery job once delivery settled.
 */
export async function announceEnd(
  ctx: Pick<HostContext, 'store' | 'logger'> & { readonly missions?: Map<string, unknown> },
  missionId: string,
  status: string,
  summary: string,
  /** What else hears of the end (the `mission.finished` webhook, notify/occurrences.ts). */
  onEnd?: (summary: string) => Promise<void>,
): Promise<void> {
  await ctx.store.setMetaField(missionId, 'summary', summary);
  await ctx.store.emit({ missionId, type: 'mission', status, message: summary });
  await onEnd?.(summary);
  ctx.missions?.delete(missionId);
  await ctx.store.publishControl({ type: 'finished', missionId });
  ctx.logger.info({ missionId, status }, 'mission finished');
}
