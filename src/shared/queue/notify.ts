import { JOBS, QUEUES } from '../contracts.js';
import type { MissionSpec } from '../mission.js';
import { deliveryId, hooksFor, type NotifyOccurrence, notifyBody } from '../notify.js';
import { withSignature } from '../signing.js';
import { type QueueSet, RETENTION } from './queues.js';

/** A receiver down for a while still gets the event: 1 s, 2 s, 4 s … about 17 minutes in all. */
const DELIVERY_ATTEMPTS = 11;
const FIRST_RETRY_MS = 1_000;

/** What a webhook delivery job carries: the body as sent, fixed when the event happened. */
export interface NotifyJobData {
  readonly missionId: string;
  readonly index: number;
  readonly key: string;
  readonly url: string;
  readonly event: string;
  readonly body: string;
  sig?: string;
}

/**
 * Queues one delivery per hook of the mission that wants the occurrence. The job id is the
 * delivery id, so an occurrence reported twice (a replayed gate, a re-delivered finalize) is
 * queued once, and every retry of a delivery carries the same id and body: at least once, with an
 * id a receiver de-duplicates on.
 */
export async function enqueueNotifications(
  ctx: { readonly queues: QueueSet; readonly secret: string | undefined },
  missionId: string,
  spec: Pick<MissionSpec, 'notify'>,
  occurrence: NotifyOccurrence,
  now = new Date().toISOString(),
): Promise<number> {
  const hooks = hooksFor(spec.notify, occurrence.event);
  for (const { hook, index } of hooks) {
    const id = deliveryId(missionId, index, occurrence.key);
    const body = JSON.stringify(notifyBody(occurrence, id, now));
    const data: NotifyJobData = {
      missionId,
      index,
      key: occurrence.key,
      url: hook.url,
      event: occurrence.event,
      body,
    };
    await ctx.queues.get(QUEUES.notify).add(JOBS.notify, withSignature({ ...data }, ctx.secret), {
      jobId: id,
      ...RETENTION,
      attempts: DELIVERY_ATTEMPTS,
      backoff: { type: 'exponential', delay: FIRST_RETRY_MS },
    });
  }
  return hooks.length;
}
