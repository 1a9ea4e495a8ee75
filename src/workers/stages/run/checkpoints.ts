import type { Job } from 'bullmq';
import { checkpointRef, type RunJobData } from '../../../shared/contracts.js';
import type { Logger } from '../../../shared/logger.js';
import { checkpointWriter, deleteCheckpoint } from '../../workspace/checkpoint.js';
import type { HostContext } from '../context.js';
import { assertLockHeld } from '../lock-fence.js';
import { recordStage } from '../record.js';

/**
 * Checkpoints while a run's CLI works (docs/RECOVERY.md, "Checkpoints"): every interval, the
 * checkout's files go to the attempt's work-in-progress ref, so a host that dies loses at most
 * one interval of the agent's work. A checkpoint that fails is logged and recorded once, never
 * the attempt's failure; one that would be published after the job's lock was lost is not.
 */

/** Whether the attempt's work-in-progress ref exists in the mission repo, as far as this run knows. */
export interface WipState {
  exists: boolean;
}

export interface CheckpointsInput {
  readonly job: Job<RunJobData>;
  readonly token: string | undefined;
  readonly cli: string;
  readonly dir: string;
  /** The commit the attempt started from: every checkpoint's parent. */
  readonly baseCommit: string;
  /** 0: no checkpoints. */
  readonly intervalMs: number;
  /** The tree of the checkpoint this run resumed from, when it did. */
  readonly resumedTree?: string;
  readonly wip: WipState;
  readonly log: Logger;
}

export interface CheckpointTimer {
  /** Stops the timer and waits for a checkpoint in progress; resolves to how many this run saved. */
  stop(): Promise<number>;
}

export function startCheckpoints(ctx: HostContext, input: CheckpointsInput): CheckpointTimer {
  const { job, log, intervalMs } = input;
  if (intervalMs <= 0) return { stop: async () => 0 };
  const { missionId, taskId, attempt } = job.data;
  const ref = checkpointRef(missionId, taskId, attempt);
  let lockLost = false;
  const writer = checkpointWriter({
    dir: input.dir,
    ref,
    baseCommit: input.baseCommit,
    message: `flotilla checkpoint: ${taskId} attempt ${attempt}`,
    ...(input.resumedTree ? { previousTree: input.resumedTree } : {}),
    beforePublish: async () => {
      try {
        await assertLockHeld(job, input.token, ctx.config.lockMs);
      } catch (error) {
        lockLost = true;
        throw error;
      }
    },
  });
  let stopped = false;
  let saved = 0;
  let failureRecorded = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;

  const saveOnce = async (): Promise<void> => {
    const startedAt = Date.now();
    try {
      const outcome = await writer.save();
      if (outcome === 'unchanged') return;
      saved += 1;
      input.wip.exists = true;
      const durationMs = Date.now() - startedAt;
      log.info({ commit: outcome.commit, ref, durationMs }, 'checkpoint saved');
      await recordStage(ctx, job.data, 'run', {
        cli: input.cli,
        event: { kind: 'checkpoint', commit: outcome.commit, ref, durationMs },
      });
    } catch (error) {
      if (lockLost) {
        // The job may be running on another host by now: its checkpoints are the ones that count.
        stopped = true;
        log.warn('checkpoints stopped: the job lock was lost');
        return;
      }
      const reason = error instanceof Error ? error.message : String(error);
      log.warn({ err: reason }, 'checkpoint not saved; the run goes on');
      if (failureRecorded) return;
      failureRecorded = true;
      await recordStage(ctx, job.data, 'run', {
        cli: input.cli,
        event: { kind: 'checkpoint-failed', action: 'save', reason: reason.slice(0, 500) },
      }).catch(() => undefined);
    }
  };
  // One timer at a time, re-armed when a checkpoint ends: a slow push never overlaps the next.
  const arm = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = saveOnce().finally(() => {
        running = undefined;
        arm();
      });
    }, intervalMs);
    timer.unref();
  };
  arm();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
      return saved;
    },
  };
}

/**
 * The attempt ended with a result: its work-in-progress ref is of no more use (a retry is a new
 * attempt, with a ref of its own), so it goes, fenced like a publish so a host whose job moved on
 * never deletes the newer run's checkpoint. A failure only leaves the ref behind.
 */
export async function dropCheckpoint(
  ctx: HostContext,
  input: Pick<CheckpointsInput, 'job' | 'token' | 'dir' | 'wip' | 'log'>,
): Promise<void> {
  if (!input.wip.exists) return;
  const { missionId, taskId, attempt } = input.job.data;
  const ref = checkpointRef(missionId, taskId, attempt);
  try {
    await assertLockHeld(input.job, input.token, ctx.config.lockMs);
    await deleteCheckpoint(input.dir, ref);
    input.wip.exists = false;
  } catch (error) {
    input.log.warn(
      { err: error instanceof Error ? error.message : String(error), ref },
      'checkpoint ref not deleted',
    );
  }
}
