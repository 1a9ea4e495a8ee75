import { createHmac } from 'node:crypto';

/**
 * Webhooks (`notify:` in a mission): which events a hook wants, the JSON body a receiver gets (a
 * stable schema, `version: 1`), and its signature. Pure; shared/queue/notify.ts queues a delivery,
 * workers/stages/notify.ts makes it.
 */

export const NOTIFY_EVENTS = [
  'mission.finished',
  'task.failed',
  'task.needs_input',
  'task.awaiting_approval',
  'task.completed',
] as const;
export type NotifyEvent = (typeof NOTIFY_EVENTS)[number];

/** What a hook gets when it names no events: everything that may need a person. */
export const DEFAULT_NOTIFY_EVENTS: readonly NotifyEvent[] = [
  'mission.finished',
  'task.failed',
  'task.needs_input',
  'task.awaiting_approval',
];

export interface NotifyHook {
  readonly url: string;
  readonly events: readonly NotifyEvent[];
}

/** The header a receiver checks the body against, as GitHub signs its webhooks (`X-Hub-Signature-256`). */
export const SIGNATURE_HEADER = 'X-Flotilla-Signature-256';
/** The delivery's id: the same on every retry of one event, so a receiver can de-duplicate. */
export const DELIVERY_HEADER = 'X-Flotilla-Delivery';
export const EVENT_HEADER = 'X-Flotilla-Event';

export interface NotifyTask {
  readonly id: string;
  readonly title?: string;
  readonly status: string;
  readonly attempts: number;
  readonly error: string | null;
  readonly questions?: unknown;
  readonly heldAt?: string;
}

export interface NotifyBody {
  readonly version: 1;
  /** The delivery id (also in the X-Flotilla-Delivery header). */
  readonly id: string;
  readonly event: NotifyEvent;
  readonly at: string;
  readonly mission: {
    readonly id: string;
    readonly goal: string;
    readonly status: string;
    readonly branch: string;
    readonly workspace?: string;
    readonly costUsd?: number;
  };
  /** The task the event is about; null for mission events. */
  readonly task: NotifyTask | null;
  /** mission.finished: the summary `flotilla run` prints. */
  readonly summary?: string;
}

/** One thing that happened, as the code that saw it reports it. */
export interface NotifyOccurrence {
  readonly event: NotifyEvent;
  /** Names the occurrence, so that reporting it twice (a replayed job) queues it once. */
  readonly key: string;
  readonly mission: NotifyBody['mission'];
  readonly task?: NotifyTask;
  readonly summary?: string;
}

/** The hooks of a mission that want this event, with their index (part of the delivery id). */
export function hooksFor(
  hooks: readonly NotifyHook[] | undefined,
  event: NotifyEvent,
): { hook: NotifyHook; index: number }[] {
  return (hooks ?? []).flatMap((hook, index) => (hook.events.includes(event) ? [{ hook, index }] : []));
}

/** The delivery id of one occurrence for one hook: no `:` (a BullMQ job id), deterministic. */
export function deliveryId(missionId: string, index: number, key: string): string {
  return `${missionId}.notify.${index}.${key.replace(/[^A-Za-z0-9._-]/g, '_')}`;
}

export function notifyBody(occurrence: NotifyOccurrence, id: string, at: string): NotifyBody {
  return {
    version: 1,
    id,
    event: occurrence.event,
    at,
    mission: occurrence.mission,
    task: occurrence.task ?? null,
    ...(occurrence.summary !== undefined ? { summary: occurrence.summary } : {}),
  };
}

/** `sha256=<hex>` of the body's exact bytes with the secret; a receiver recomputes and compares. */
export function signBody(body: string, secret: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}
