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
