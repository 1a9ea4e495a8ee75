import { QUEUES, type RunJobData } from '../../../shared/contracts.js';
import type { TaskSpec } from '../../../shared/mission.js';
import { matchCli } from '../../../shared/queue/match.js';
import { type HostCli, type HostContext, usableClis } from '../context.js';

/**
 * Chooses this host's CLI for a run job: the pinned one, the internal adapter for
 * dispatch.internal, or the seed's matching over the CLIs this host can use now.
 */
export function chooseCli(ctx: HostContext, data: RunJobData, task: TaskSpec): HostCli | null {
  const usable = usableClis(ctx);
  if (data.cli) return usable.find((c) => c.adapter.cli === data.cli) ?? null;
  if (`dispatch.${data.capability}` === QUEUES.internal || data.capability === 'internal') {
    return usable.find((c) => c.adapter.cli === ctx.internalCli) ?? null;
  }
  const servingQueue = usable.filter((c) => c.adapter.config.capabilities.includes(data.capability));
  const match = matchCli(
    { capability: task.capability, division: task.division, controlMode: task.controlMode },
    servingQueue.map((c) => c.adapter),
  );
  const chosen = match.adapter ?? servingQueue[0]?.adapter;
  return chosen ? (servingQueue.find((c) => c.adapter === chosen) ?? null) : null;
}
