/**
 * What the run, verify and critic stages share about warm checkouts: where this host's pool lives,
 * and running a task's setup in a checkout (the author's commands, `bash -c`, like criteria).
 */

import type { TaskSpec } from '../../shared/mission.js';
import { spawnProcess } from '../agent/spawn.js';
import type { CheckoutLease } from '../workspace/checkout-pool.js';
import type { PoolPlace } from '../workspace/stage-checkout.js';
import { ensureSetup, type SetupOutcome } from '../workspace/warm-checkout.js';
import type { HostContext } from './context.js';

/** Setup commands may take as long as a criterion; the task's timeout caps them further. */
const SETUP_TIMEOUT_MS = 10 * 60_000;

/**
 * A stage that could not continue in a parked checkout (it ran on another host, or the park was
 * over) says so, so the host holding one for this attempt frees it at once instead of after its
 * park time, while its own jobs wait for checkouts.
 */
export async function announceUnparked(ctx: HostContext, missionId: string, key: string): Promise<void> {
  await ctx.store.publishControl({ type: 'unpark', missionId, key }).catch(() => undefined);
}

export function poolPlace(ctx: HostContext): PoolPlace {
  return {
    root: ctx.checkoutRoot,
    keep: ctx.slots.size,
    onDiscard: (dir, reason) => ctx.logger.warn({ checkout: dir, reason }, 'warm checkout discarded'),
  };
}

export function runSetup(
  ctx: HostContext,
  lease: CheckoutLease,
  commit: string,
  task: TaskSpec,
  signal?: AbortSignal,
): Promise<SetupOutcome> {
  return ensureSetup({
    lease,
    commit,
    setup: task.setup,
    runCommand: async (command, cwd) => {
      const outcome = await spawnProcess({
        command: 'bash',
        args: ['-c', command],
        cwd,
        timeoutMs: Math.min(SETUP_TIMEOUT_MS, task.timeoutMs),
        signal,
        groups: ctx.cliGroups,
      });
      const output = [outcome.stdout, outcome.stderr].filter((s) => s.trim()).join('\n');
      return { exitCode: outcome.exitCode, timedOut: outcome.timedOut || outcome.cancelled, output };
    },
  });
}
