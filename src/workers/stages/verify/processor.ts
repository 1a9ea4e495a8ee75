import type { Job } from 'bullmq';
import type { CriterionResult, RunResult, StageJobData, VerifyResult } from '../../../shared/contracts.js';
import { FlotillaError } from '../../../shared/errors.js';
import { spawnProcess, tail } from '../../agent/spawn.js';
import { openRepoCache } from '../../workspace/repo-cache.js';
import { attemptKey, leaseAtCommit } from '../../workspace/stage-checkout.js';
import { announceUnparked, poolPlace, runSetup } from '../checkout.js';
import { type HostContext, missionRecord } from '../context.js';
import { assertSigned } from '../job-guard.js';
import { enterStage, recordStage } from '../record.js';

/** One criterion may take at most this long; the task's timeout caps it further. */
const CRITERION_TIMEOUT_MS = 5 * 60_000;

/** The value a child returned, or undefined when it failed (its failure was ignored for us). */
export async function childValue<T>(job: Job): Promise<T | undefined> {
  const values = Object.values(await job.getChildrenValues()) as T[];
  return values[0];
}

/**
 * What a stage passes up when the stage below it failed as infrastructure (its BullMQ attempts
 * ran out): a failed run, so the gate retries the task with the failure as context.
 */
export function lostRun(failure: string): VerifyResult {
  const run: RunResult = {
    outcome: 'failed',
    cli: '',
    host: '',
    resultStatus: 'unknown',
    summary: '',
    error: `infrastructure: ${failure}`,
    durationMs: 0,
  };
  return { run, ran: false, passed: false, criteria: [] };
}

export async function ignoredChildFailure(job: Job): Promise<string | undefined> {
  const failures = Object.values(await job.getIgnoredChildrenFailures());
  return failures[0] ? String(failures[0]) : undefined;
}

/**
 * Exit criteria are the one place a shell belongs: they are the mission author's own commands,
 * run with `bash -c` in a checkout of the attempt's branch, each with a timeout.
 */
export async function verifyAttempt(
  ctx: HostContext,
  job: Job<StageJobData>,
  signal?: AbortSignal,
): Promise<VerifyResult> {
  assertSigned(ctx, job);
  const { missionId, taskId, attempt } = job.data;
  const run = await childValue<RunResult>(job);
  if (!run) return lostRun((await ignoredChildFailure(job)) ?? 'the run job failed');
  if (run.outcome !== 'done' || !run.branch) return { run, ran: false, passed: false, criteria: [] };
  const { spec, meta } = await missionRecord(ctx, missionId);
  const task = spec.tasks.find((t) => t.id === taskId);
  if (!task) throw new FlotillaError('internal', `mission ${missionId} has no task ${taskId}`);
  await enterStage(
    ctx,
    { missionId, taskId, attempt },
    'verifying',
    `verifying ${task.exitCriteria.length} exit criteria`,
  );
  const cache = await openRepoCache({ repo: meta.repo, cacheDir: ctx.cacheDir });
  const key = attemptKey(missionId, taskId, attempt);
  // On the host that ran the attempt this is the run's own checkout, parked for us: no fetch, no checkout.
  const checkout = await leaseAtCommit({
    cache,
    place: poolPlace(ctx),
    key,
    branch: run.branch,
    commit: run.commit,
    setup: task.setup,
    signal,
  });
  if (!checkout.claimed) await announceUnparked(ctx, missionId, key);
  const criteria: CriterionResult[] = [];
  let setupLog = '';
  let parkForCritic = false;
  try {
    const setup = await runSetup(ctx, checkout.lease, checkout.commit, task, signal);
    setupLog = setup.log;
    if (setup.failure) {
      // A failed setup fails the attempt like a failed criterion, and the criteria are not run.
      criteria.push({
        command: `setup: ${setup.failure.command}`,
        exitCode: setup.failure.exitCode,
        timedOut: setup.failure.timedOut,
        tail: setup.failure.tail,
      });
    } else {
      for (const command of task.exitCriteria) {
        criteria.push(await runCriterion(ctx, command, checkout.dir, task.timeoutMs, signal));
      }
    }
    parkForCritic = task.critic && !signal?.aborted && criteria.every(criterionPassed);
  } finally {
    if (parkForCritic) checkout.lease.park(key, checkout.commit);
    else await checkout.lease.release();
  }
  if (signal?.aborted) throw new Error(`verify stopped: ${String(signal.reason ?? 'aborted')}`);
  const passed = criteria.every(criterionPassed);
  await recordStage(ctx, { missionId, taskId, attempt }, 'verify', {
    event: {
      kind: 'verify',
      passed,
      criteria: criteria.map((c) => ({
        command: c.command,
        exitCode: c.exitCode,
        timedOut: c.timedOut,
        tail: c.tail,
      })),
      inRunCheckout: checkout.claimed,
    },
    files: {
      ...(setupLog ? { 'setup.txt': setupLog } : {}),
      'criteria.txt': criteria
        .map(
          (c) =>
            `$ ${c.command}\n# exit ${c.exitCode ?? 'none'}${c.timedOut ? ' (timed out)' : ''}\n${c.tail}\n`,
        )
        .join('\n'),
    },
  });
  return { run, ran: true, passed, criteria };
}

const criterionPassed = (c: CriterionResult) => c.exitCode === 0 && !c.timedOut;

async function runCriterion(
  ctx: HostContext,
  command: string,
  cwd: string,
  taskTimeoutMs: number,
  signal: AbortSignal | undefined,
): Promise<CriterionResult> {
  const outcome = await spawnProcess({
    command: 'bash',
    args: ['-c', command],
    cwd,
    timeoutMs: Math.min(CRITERION_TIMEOUT_MS, taskTimeoutMs),
    signal,
    groups: ctx.cliGroups,
  });
  const output = [outcome.stdout, outcome.stderr].filter((s) => s.trim()).join('\n');
  return { command, exitCode: outcome.exitCode, timedOut: outcome.timedOut, tail: tail(output, 1_500) };
}
