import type { TaskSpec } from '../../../shared/mission.js';
import type { HostContext } from '../context.js';
import { type CliOffer, decideEscalation, type Escalation } from '../run/escalate.js';

/** What the task's state keeps between attempts: the escalation and every CLI it has run on. */
export type StoredEscalation = Escalation & { readonly tried: readonly string[] };

/**
 * The escalation for the retry after `attempt` failed on `failedCli`: reads the task's current
 * escalation and the live cluster's CLIs for the capability, and leaves the choice to the pure
 * decideEscalation. Null for a task without `escalate`.
 */
export async function escalateRetry(
  ctx: Pick<HostContext, 'store'>,
  input: { missionId: string; task: TaskSpec; attempt: number; failedCli: string | null; baseTier: string },
): Promise<StoredEscalation | null> {
  const steps = input.task.escalate ?? [];
  if (steps.length === 0) return null;
  const state = await ctx.store.getTask(input.missionId, input.task.id);
  const current = (state?.escalated ?? null) as StoredEscalation | null;
  // cjson stores an empty list as `{}`, so a list is only trusted when it is one.
  const before = Array.isArray(current?.tried) ? current.tried : [];
  const tried = [...new Set([...before, ...(input.failedCli ? [input.failedCli] : [])])];
  const hosts = await ctx.store.liveHosts();
  const offers = new Map<string, CliOffer & { order: number }>();
  for (const host of hosts) {
    for (const cli of host.clis) {
      if (cli.capabilities.includes(input.task.capability) && !offers.has(cli.cli)) {
        offers.set(cli.cli, {
          cli: cli.cli,
          order: cli.order,
          ...(cli.vendor ? { vendor: cli.vendor } : {}),
        });
      }
    }
  }
  const escalation = decideEscalation({
    steps,
    current,
    failedAttempt: input.attempt,
    baseTier: input.baseTier,
    failedCli: input.failedCli,
    usedClis: tried,
    offers: [...offers.values()].sort((a, b) => a.order - b.order),
    ...(input.task.cli ? { pinnedCli: input.task.cli } : {}),
  });
  return escalation ? { ...escalation, tried } : null;
}
