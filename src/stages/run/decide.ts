import type { ReplyClass } from '../../agent/reply-class.js';

/**
 * What a run does with a reply that is not the agent's fault, a pure function of the reply's
 * class and whether another live host could take the task.
 */

/** A rate-limited CLI rests this long when its adapter names no cooldown_ms. */
export const DEFAULT_COOLDOWN_MS = 60_000;
/**
 * A rate-limited job comes back to the queue after at most this long: soon enough for another
 * host (or another CLI) to take it, not so soon that the cooling host spins on it.
 */
export const RATE_LIMIT_GIVE_BACK_MS = 5_000;
/** A job whose CLI cannot log in here goes back at once for a host that can serve it. */
export const AUTH_GIVE_BACK_MS = 1_000;
/** A job pinned to a CLI this host lacks (or whose CLIs are all cooling) waits this long. */
export const NO_CLI_GIVE_BACK_MS = 2_000;

export type ReplyAction =
  | { readonly action: 'none' }
  /** Rate limit: the CLI cools down, the attempt is not counted, the job goes back to the queue. */
  | { readonly action: 'cool-down'; readonly cooldownMs: number; readonly giveBackMs: number }
  /** Not logged in here but another host can serve: this host stops advertising the CLI. */
  | { readonly action: 'hand-over'; readonly giveBackMs: number }
  /** Not logged in and no live host can serve the task: it fails now with the CLI's own words. */
  | { readonly action: 'fail'; readonly error: string };

export function decideReply(
  reply: ReplyClass,
  facts: { readonly cliName: string; readonly cooldownMs?: number; readonly otherHostCanServe: boolean },
): ReplyAction {
  if (!reply) return { action: 'none' };
  if (reply.kind === 'rate-limit') {
    const cooldownMs = facts.cooldownMs ?? DEFAULT_COOLDOWN_MS;
    return { action: 'cool-down', cooldownMs, giveBackMs: Math.min(cooldownMs, RATE_LIMIT_GIVE_BACK_MS) };
  }
  if (facts.otherHostCanServe) return { action: 'hand-over', giveBackMs: AUTH_GIVE_BACK_MS };
  return { action: 'fail', error: `${facts.cliName}: ${reply.message}` };
}
