import type { HostContext } from './context.js';

/**
 * A host slot and the CLI's own `max_concurrent` slot, taken together and given back by one
 * function. If the second wait is aborted, the first slot is given back before the error leaves.
 */
export async function acquireSlots(
  ctx: Pick<HostContext, 'slots' | 'cliSlots'>,
  cli: string,
  signal: AbortSignal | undefined,
): Promise<() => void> {
  const releaseHost = await ctx.slots.acquire(signal);
  let releaseCli: () => void;
  try {
    releaseCli = (await ctx.cliSlots.get(cli)?.acquire(signal)) ?? (() => {});
  } catch (error) {
    releaseHost();
    throw error;
  }
  return () => {
    releaseCli();
    releaseHost();
  };
}

/**
 * A host slot and the CLI's slot now, or null when either is taken: a host fetches a job only when
 * it can start it (host/fetch-plan.ts), and a job that finds its slot gone meanwhile goes back to
 * its queue for another host instead of waiting here.
 */
export function takeSlots(ctx: Pick<HostContext, 'slots' | 'cliSlots'>, cli: string): (() => void) | null {
  const releaseHost = ctx.slots.tryAcquire();
  if (!releaseHost) return null;
  const cliSlots = ctx.cliSlots.get(cli);
  const releaseCli = cliSlots ? cliSlots.tryAcquire() : () => {};
  if (!releaseCli) {
    releaseHost();
    return null;
  }
  return () => {
    releaseCli();
    releaseHost();
  };
}
