import { hostname, userInfo } from 'node:os';
import type { PersonVerdict } from '../shared/contracts.js';
import { FlotillaError } from '../shared/errors.js';
import { enqueueVerdict } from '../shared/queue/enqueue.js';
import type { QueueSet } from '../shared/queue/queues.js';
import type { MissionStore } from '../shared/store/mission-store.js';

export interface VerdictContext {
  readonly store: MissionStore;
  readonly queues: QueueSet;
  /** Signs the verdict's job as every job is signed (FLOTILLA_SECRET). */
  readonly secret: string | undefined;
}

export interface SentVerdict {
  readonly attempt: number;
  /** False when someone else's verdict for this attempt came first; `sent` is that one. */
  readonly counted: boolean;
  readonly sent: PersonVerdict;
}

/**
 * A person's verdict on a task held for approval (`approve: human`), from the CLI, the library or
 * the board: approved, the held attempt merges on a worker host and releases its dependents;
 * rejected, it is a failed attempt whose retry prompt carries `reject`. Refused (FlotillaError
 * 'usage') unless the task waits for one.
 */
export async function sendVerdict(
  ctx: VerdictContext,
  missionId: string,
  taskId: string,
  verdict: { readonly reject?: string; readonly by?: string },
): Promise<SentVerdict> {
  const { spec } = await ctx.store.getMission(missionId);
  const task = spec.tasks.find((t) => t.id === taskId);
  const state = await ctx.store.getTask(missionId, taskId);
  if (!task || !state) throw new FlotillaError('usage', `mission ${missionId} has no task '${taskId}'`);
  if (state.status !== 'awaiting_approval') {
    const why = task.approval ? '' : ' (it does not ask for one: approve: human)';
    throw new FlotillaError('usage', `task ${taskId} is ${state.status}, not waiting for approval${why}`);
  }
  const rejected = verdict.reject !== undefined;
  const { sent, added } = await enqueueVerdict(ctx, {
    missionId,
    taskId,
    attempt: state.attempts,
    verdict: rejected ? 'reject' : 'approve',
    by: verdict.by ?? defaultPerson(),
    ...(rejected ? { reason: verdict.reject } : {}),
    at: new Date().toISOString(),
  });
  return { attempt: state.attempts, counted: added, sent };
}

/** What a verdict that did not count says: whose came first for the attempt (`sent`), and when. */
export function alreadyDecided(taskId: string, sent: SentVerdict): string {
  const what = sent.sent.verdict === 'approve' ? 'approved' : 'rejected';
  return `${taskId} attempt ${sent.attempt} was already ${what} by ${sent.sent.by ?? 'someone'} at ${sent.sent.at}; that verdict counts`;
}

/** Who decides when nobody says: FLOTILLA_USER, else the login name and machine (`alice@laptop`). */
export function defaultPerson(): string {
  const named = process.env.FLOTILLA_USER?.trim();
  if (named) return named;
  let user = 'someone';
  try {
    user = userInfo().username;
  } catch {
    // No passwd entry (a container's arbitrary uid): the machine alone still says where.
  }
  return `${user}@${hostname()}`;
}
