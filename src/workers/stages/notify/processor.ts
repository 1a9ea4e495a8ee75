import type { Job } from 'bullmq';
import { DELIVERY_HEADER, EVENT_HEADER, SIGNATURE_HEADER, signBody } from '../../../shared/notify.js';
import type { NotifyJobData } from '../../../shared/queue/notify.js';
import { redactUrlCredentials } from '../../../shared/url-credentials.js';
import type { HostContext } from '../context.js';
import { assertSigned } from '../job-guard.js';

/** A receiver that takes longer than this to answer is retried later, like one that refused. */
const DELIVERY_TIMEOUT_MS = 10_000;

/**
 * One webhook delivery: the body queued when the event happened, POSTed as JSON with its delivery
 * id and event in headers, signed with FLOTILLA_WEBHOOK_SECRET when this host has it. Anything
 * but a 2xx answer throws, and BullMQ retries with backoff (shared/queue/notify.ts).
 */
export async function deliverNotification(
  ctx: HostContext,
  job: Job<NotifyJobData>,
): Promise<{ status: number }> {
  assertSigned(ctx, job);
  const { url, body, event } = job.data;
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': 'flotilla-webhook/1',
    [DELIVERY_HEADER]: String(job.id),
    [EVENT_HEADER]: event,
  };
  if (ctx.config.webhookSecret) headers[SIGNATURE_HEADER] = signBody(body, ctx.config.webhookSecret);
  const shown = redactUrlCredentials(url);
  let response: Response;
  try {
    response = await fetch(url, {
      method: 'POST',
      headers,
      body,
      redirect: 'manual',
      signal: AbortSignal.timeout(DELIVERY_TIMEOUT_MS),
    });
  } catch (error) {
    throw new Error(`webhook ${shown} could not be reached: ${(error as Error).message}`);
  }
  await response.body?.cancel();
  if (response.status < 200 || response.status >= 300) {
    throw new Error(`webhook ${shown} answered ${response.status} to ${event} (delivery ${job.id})`);
  }
  ctx.logger.debug({ delivery: job.id, event, status: response.status }, `webhook ${shown}: delivered`);
  return { status: response.status };
}
