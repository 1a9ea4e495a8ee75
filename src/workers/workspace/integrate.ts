/**
 * The gate's merge, without a checkout: `git merge-tree --write-tree` merges
 * an approved attempt's work commit into the integration branch's tip, `git commit-tree` records
 * it, and a compare-and-swap publishes the new tip — `update-ref <ref> <new> <old>` in the mission
 * repo itself when it is local, `push --force-with-lease=<ref>:<old>` from the host's cache when it
 * is a URL. Nothing is checked out, so a merge costs what the attempt changed, not the size of the
 * tree.
 *
 * Group commit: the gates of one host that wait for the same integration branch are merged as one
 * batch (each still its own merge commit on top of the one before) and published once. Hosts race
 * optimistically; a batch whose compare-and-swap lost is planned again on the new tip.
 */
import { FlotillaError } from '../../shared/errors.js';
import { type IntegrateAttemptOptions, type IntegrateResult, integrateBatch } from './integrate-batch.js';

export type { IntegrateAttemptOptions, IntegrateResult } from './integrate-batch.js';
export { IntegrationContended } from './integrate-batch.js';

/**
 * At most this many merges in one batch. A batch is one compare-and-swap, so a lost race redoes all
 * of it, and each of its gates waits for the last merge: two git processes a merge (merge-tree,
 * commit-tree) keep 32 of them well inside a job's 30 s lock even on a slow, busy machine.
 */
export const MAX_BATCH = 32;

interface Waiting {
  readonly options: IntegrateAttemptOptions;
  resolve(result: IntegrateResult): void;
  reject(error: unknown): void;
}

interface Lane {
  readonly waiting: Waiting[];
  draining: boolean;
}

/** One lane per mission repo and integration branch in this process; see integrateAttempt. */
const lanes = new Map<string, Lane>();

/**
 * Merges one approved attempt; resolves once the batch holding it is published. Idempotent: when
 * the work commit is already in the integration branch (a gate replayed after publishing, before it
 * settled), nothing is merged again.
 */
export function integrateAttempt(options: IntegrateAttemptOptions): Promise<IntegrateResult> {
  const key = `${options.cache.repo}\0${options.missionId}`;
  let lane = lanes.get(key);
  if (!lane) {
    lane = { waiting: [], draining: false };
    lanes.set(key, lane);
  }
  const joined = lane;
  return new Promise<IntegrateResult>((resolve, reject) => {
    joined.waiting.push({ options, resolve, reject });
    if (!joined.draining) void drain(key, joined);
  });
}

async function drain(key: string, lane: Lane): Promise<void> {
  lane.draining = true;
  try {
    // Requests made in the same turn of the event loop (gates woken by one Redis reply) form one
    // batch; gates arriving while a batch merges wait for the next one.
    await new Promise((done) => setImmediate(done));
    while (lane.waiting.length > 0) await settleBatch(lane.waiting.splice(0, MAX_BATCH));
  } finally {
    lane.draining = false;
    if (lanes.get(key) === lane && lane.waiting.length === 0) lanes.delete(key);
  }
}

async function settleBatch(batch: readonly Waiting[]): Promise<void> {
  try {
    const results = await integrateBatch(batch.map((waiting) => waiting.options));
    for (const waiting of batch) {
      const result = results.get(waiting.options.attemptId);
      if (result instanceof Error || result === undefined) {
        waiting.reject(
          result ?? new FlotillaError('internal', `no merge result for ${waiting.options.attemptId}`),
        );
      } else waiting.resolve(result);
    }
  } catch (error) {
    // One bad request (its ref missing from the mission repo, say) must not fail the others:
    // each is tried alone, and only the one at fault fails.
    if (batch.length === 1) {
      batch[0]?.reject(error);
      return;
    }
    for (const waiting of batch) await settleBatch([waiting]);
  }
}
