/**
 * The run stage's decisions about checkpoints (docs/RECOVERY.md, "Checkpoints"), pure: how often
 * to save one, whether a delivery may find one, and whether what it found is one to resume from.
 */
import { DEFAULT_CHECKPOINT_MS, type MissionSpec } from '../../../shared/mission.js';
import type { FoundCheckpoint } from '../../workspace/resume-checkpoint.js';

/** The mission's checkpoint_interval in ms; 0 when checkpoints are off. */
export function checkpointIntervalMs(spec: Pick<MissionSpec, 'checkpointMs'>): number {
  return spec.checkpointMs ?? DEFAULT_CHECKPOINT_MS;
}

/**
 * Only a delivery that is not the run job's first can find a checkpoint of its attempt: the job
 * came back after its host crashed or lost the lock (BullMQ's stalled-job re-delivery), after a
 * rate limit handed it back, or as BullMQ's retry of an infrastructure fault. The first delivery,
 * the usual case, spends nothing on looking.
 */
export function mayHaveCheckpoint(
  delivery: { readonly attemptsStarted?: number },
  intervalMs: number,
): boolean {
  return intervalMs > 0 && (delivery.attemptsStarted ?? 0) > 1;
}

export type ResumeDecision =
  | {
      readonly resume: true;
      readonly checkpoint: { readonly commit: string; readonly baseCommit: string };
      /** The checkpoint's tree: the resumed run saves no checkpoint of the same files again. */
      readonly tree: string;
    }
  | { readonly resume: false; readonly ignored?: string };

/**
 * A checkpoint flotilla wrote has exactly one parent, the commit its run started from; the
 * resumed run starts there too, so its attempt's commit is relative to the same base. Anything
 * else on the ref (a merge, a root commit pushed by hand) is not resumed from.
 */
export function decideResume(found: FoundCheckpoint | null): ResumeDecision {
  if (!found) return { resume: false };
  const [base] = found.parents;
  if (found.parents.length !== 1 || !base) {
    return {
      resume: false,
      ignored: `${found.commit.slice(0, 12)} has ${found.parents.length} parents, not the one base a checkpoint has`,
    };
  }
  return { resume: true, checkpoint: { commit: found.commit, baseCommit: base }, tree: found.tree };
}
