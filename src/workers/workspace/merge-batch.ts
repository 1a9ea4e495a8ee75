/**
 * Group commit at the gate, the pure part: the merges one batch of approved attempts makes, and
 * the messages they carry. The IO around it (merge-tree, commit-tree, the compare-and-swap) is in
 * integrate-batch.ts.
 */

export interface MergeRequest {
  /** The attempt, e.g. `mean/a2`; names the request in the merge commit's trailer and in logs. */
  readonly attemptId: string;
  /** The attempt's work commit (its changes without flotilla's dispatch files). */
  readonly workCommit: string;
  readonly message: string;
}

export interface PlannedMerge {
  readonly workCommit: string;
  readonly message: string;
  /** Every request of the batch with this work commit (a job delivered twice asks twice). */
  readonly attemptIds: readonly string[];
}

/**
 * The merges of one batch, in arrival order, one per work commit (a job delivered twice asks
 * twice, and both deliveries get the one outcome). Whether the integration tip already holds a work
 * commit (a replayed gate after a publish) is the merge's to find: it merges to the tip's own tree.
 */
export function planBatch(requests: readonly MergeRequest[]): PlannedMerge[] {
  const merges = new Map<string, { message: string; attemptIds: string[] }>();
  for (const request of requests) {
    const planned = merges.get(request.workCommit);
    if (planned) planned.attemptIds.push(request.attemptId);
    else merges.set(request.workCommit, { message: request.message, attemptIds: [request.attemptId] });
  }
  return [...merges].map(([workCommit, planned]) => ({ workCommit, ...planned }));
}

/** The trailer that names the attempt a merge commit integrated, for people reading `git log`. */
export const ATTEMPT_TRAILER = 'Flotilla-Attempt';

export function mergeCommitMessage(subject: string, missionId: string, attemptId: string): string {
  return `${subject}\n\n${ATTEMPT_TRAILER}: ${missionId}/${attemptId}\n`;
}

/**
 * The integration branch's compare-and-swap lost to another writer: `update-ref <ref> <new> <old>`
 * found another value or the ref locked for a moment, or a `--force-with-lease` push was refused as
 * stale. The batch is then planned again on the new tip. Anything else (a hook, permissions, a
 * name clash) is a real failure that retrying would only repeat.
 */
export function lostCompareAndSwap(stderr: string): boolean {
  if (/exists; cannot create|cannot process .* at the same time/i.test(stderr)) return false;
  return /is at [0-9a-f]+ but expected|stale info|non-fast-forward|fetch first|failed to update ref|cannot lock ref|unable to create '[^']*\.lock'|\.lock': File exists/i.test(
    stderr,
  );
}
