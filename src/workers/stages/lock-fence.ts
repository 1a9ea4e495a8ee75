import type { Job } from 'bullmq';
import { FlotillaError } from '../../shared/errors.js';

/**
 * The fence before a host publishes an attempt's work (commit, push): it must still hold the run
 * job's BullMQ lock. A host whose lock expired (its event loop stalled, Redis was out of reach)
 * may find its job already re-delivered to another host; publishing now would race that host's
 * push to the same attempt branch. Extending the lock is the check (BullMQ's script compares the
 * token) and buys the time the commit and push take. The gate closes the rest of the window: it
 * merges only the commit the completed run job returned (workspace/integrate.ts), and only the
 * lock holder can complete a job.
 */
export async function assertLockHeld(job: Job, token: string | undefined, lockMs: number): Promise<void> {
  // No token: a processor called outside a BullMQ worker (a script, a test), nothing to fence.
  if (token === undefined) return;
  const held = await job.extendLock(token, lockMs);
  if (held !== 1) {
    throw new FlotillaError(
      'internal',
      `lock lost: job ${job.id} moved to another host; this host's work is not committed or pushed`,
    );
  }
}
