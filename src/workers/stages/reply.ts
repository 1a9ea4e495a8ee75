/**
 * Replies that are not the agent's fault — a rate limit, a CLI that cannot log in — for the run and
 * the critic alike: what to do is a pure function of the reply's class and whether another CLI in
 * the cluster could take the job; applyReply() does the host's side of it.
 */

import type { Adapter } from '../../shared/adapter.js';
import type { ReplyClass } from '../agent/reply-class.js';
import type { HostContext } from './context.js';
import { recordStage } from './record.js';

/** A rate-limited CLI rests this long when its adapter names no cooldown_ms. */
export const DEFAULT_COOLDOWN_MS = 60_000;
/**
 * A rate-limited job comes back to the queue after at most this long: soon enough for another
 * host (or another CLI) to take it, not so soon that the cooling host spins on it.
 */
export const RATE_LIMIT_GIVE_BACK_MS = 5_000;
/** A job whose CLI cannot log in here goes back at once for a host that can serve it. */
export const AUTH_GIVE_BACK_MS = 1_000;
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
/** A job pinned to a CLI this host lacks (or whose CLIs are all cooling) waits this long. */
export const NO_CLI_GIVE_BACK_MS = 2_000;

/**
 * True when a live host other than this CLI here — another host, or another CLI on this one —
 * advertises `capability`: a CLI that cannot log in may then hand its job over.
 */
export async function otherCliCanServe(ctx: HostContext, capability: string, cli: string): Promise<boolean> {
  return (await ctx.store.liveHosts()).some((h) =>
    h.clis.some((c) => c.capabilities.includes(capability) && (h.hostId !== ctx.hostId || c.cli !== cli)),
  );
}

/**
 * The host's side of a cool-down, a hand-over or a failure: the CLI rests (or is withdrawn from
 * what this host advertises), and the audit trail says why. The stage then hands the job back or
 * fails it.
 */
export async function applyReply(
  ctx: HostContext,
  ref: { readonly missionId: string; readonly taskId: string; readonly attempt: number },
  stage: 'run' | 'critic',
  adapter: Adapter,
  reply: NonNullable<ReplyClass>,
  action: Exclude<ReplyAction, { action: 'none' }>,
): Promise<void> {
  const log = ctx.logger.child({ ...ref, host: ctx.hostId, cli: adapter.cli, stage });
  if (action.action === 'cool-down') {
    ctx.coolingUntil.set(adapter.cli, Date.now() + action.cooldownMs);
    log.warn({ cooldownMs: action.cooldownMs }, `${adapter.displayName} is rate limited: ${reply.message}`);
    await ctx.onAdvertisedChange();
    await recordStage(ctx, ref, stage, {
      cli: adapter.cli,
      event: { kind: 'rate-limited', cli: adapter.cli, reply: reply.message, cooldownMs: action.cooldownMs },
    });
    return;
  }
  ctx.disabled.set(adapter.cli, reply.message);
  log.error(`${adapter.displayName} is not usable on this host: ${reply.message}`);
  await ctx.onAdvertisedChange();
  await recordStage(ctx, ref, stage, {
    cli: adapter.cli,
    event: {
      kind: 'cli-unusable',
      cli: adapter.cli,
      cliName: adapter.displayName,
      reply: reply.message,
      handedOver: action.action === 'hand-over',
    },
  });
}
