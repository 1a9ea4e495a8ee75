/**
 * Group commit at the gate, the pure part: which approved attempts of one batch still need a merge,
 * and what each request is told afterwards. The IO around it (merge-tree, commit-tree, the
 * compare-and-swap) is in integrate.ts.
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

export interface BatchPlan {
  /** Already in the integration branch: a replayed gate after a publish. Settled without a merge. */
  readonly alreadyIntegrated: readonly string[];
  /** Merged in this order, each as its own merge commit on top of the one before. */
  readonly merges: readonly PlannedMerge[];
}

/**
 * `unmerged` holds the work commits that are not ancestors of the integration tip (from
 * `git rev-list <work commits> ^<tip>`); every other request is integrated already.
 */
export function planBatch(requests: readonly MergeRequest[], unmerged: ReadonlySet<string>): BatchPlan {
  const alreadyIntegrated: string[] = [];
  const merges = new Map<string, { message: string; attemptIds: string[] }>();
  for (const request of requests) {
    if (!unmerged.has(request.workCommit)) {
      alreadyIntegrated.push(request.attemptId);
      continue;
    }
    const planned = merges.get(request.workCommit);
    if (planned) planned.attemptIds.push(request.attemptId);
    else merges.set(request.workCommit, { message: request.message, attemptIds: [request.attemptId] });
  }
  return {
    alreadyIntegrated,
    merges: [...merges].map(([workCommit, planned]) => ({ workCommit, ...planned })),
  };
}

/** The commits `git rev-list` printed, one oid a line. */
export function parseRevList(stdout: string): Set<string> {
  return new Set(
    stdout
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line !== ''),
  );
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
