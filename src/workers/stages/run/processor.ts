import type { Job } from 'bullmq';
import { dispatchTaskId, type RunJobData, type RunResult } from '../../../shared/contracts.js';
import { FlotillaError } from '../../../shared/errors.js';
import { runTimeoutMs, type TaskSpec } from '../../../shared/mission.js';
import { promptTooLarge, resolveModel } from '../../agent/invocation.js';
import { dispatchPaths } from '../../agent/invoke.js';
import { tail } from '../../agent/spawn.js';
import type { CheckoutLease } from '../../workspace/checkout-pool.js';
import { isRepoUrl, openRepoCache } from '../../workspace/repo-cache.js';
import { attemptKey } from '../../workspace/stage-checkout.js';
import { invokeOnHost, recordOrigin } from '../agent-run.js';
import { runSetup } from '../checkout.js';
import { type HostCli, type HostContext, missionRecord } from '../context.js';
import { assertSigned, giveBack, handBack, MISSION_CANCELLED } from '../job-guard.js';
import { assertLockHeld } from '../lock-fence.js';
import { recordStage } from '../record.js';
import { applyReply, decideReply, NO_CLI_GIVE_BACK_MS, otherCliCanServe } from '../reply.js';
import { takeSlots } from '../slots.js';
import { checkpointIntervalMs, mayHaveCheckpoint } from './checkpoint-plan.js';
import { dropCheckpoint, startCheckpoints, type WipState } from './checkpoints.js';
import { chooseCli } from './choose-cli.js';
import { finishRun } from './finish.js';
import { bestWaiting, releasedByApproval, shouldHold, untilReleased } from './hold-fetch.js';
import { assemblePrompt } from './prompt.js';
import { gatherPromptFacts } from './prompt-input.js';
import { leaseRunCheckout } from './resume-run.js';
import { setupFailed } from './setup-failure.js';

/**
 * The run stage: prompt → CLI → result → write scope → commit → push, on a checkout of its own.
 * It returns a verdict for the gate and throws only for infrastructure faults (a shutdown or a
 * lost lock hands the job to another host). A rate limit or a login problem is not an attempt.
 */
export async function runAttempt(
  ctx: HostContext,
  job: Job<RunJobData>,
  token: string | undefined,
  signal: AbortSignal | undefined,
): Promise<RunResult> {
  assertSigned(ctx, job);
  const { missionId, taskId, attempt } = job.data;
  const startedAt = Date.now();
  const { spec, meta } = await missionRecord(ctx, missionId);
  const task = spec.tasks.find((t) => t.id === taskId);
  if (!task) throw new FlotillaError('internal', `mission ${missionId} has no task ${taskId}`);
  const base = { cli: '', host: ctx.hostId, resultStatus: 'unknown' as const, summary: '', durationMs: 0 };
  if (await ctx.store.isCancelled(missionId))
    return { ...base, outcome: 'cancelled', summary: 'mission cancelled' };
  const overBudget = await budgetSpent(ctx, missionId, spec.budgetUsd);
  if (overBudget) {
    // The gate stops retries once the budget is spent; this stops the attempts it did not start
    // (a dependent released by an approval, a retry enqueued while another task spent the rest).
    const error = `${overBudget}; attempt ${attempt} not started`;
    await recordStage(ctx, { missionId, taskId, attempt }, 'run', {
      event: { kind: 'run-refused', reason: error },
    });
    return { ...base, outcome: 'failed', fatal: true, summary: error, error };
  }
  const chosen = chooseCli(ctx, job.data, task);
  // Pinned to a CLI this host lacks, or all of its CLIs for the queue are cooling down.
  if (!chosen) return giveBack(job, token, NO_CLI_GIVE_BACK_MS);

  const release = takeSlots(ctx, chosen.adapter.cli);
  // Fetched for a slot another job took a moment before: another host may have one now.
  if (!release) return handBack(ctx, job, token);
  let lease: CheckoutLease | undefined;
  // Set once the work is pushed: the checkout is then parked for this attempt's verify on this host.
  let parkAt: string | undefined;
  try {
    const marked = await ctx.store.mark(missionId, taskId, attempt, 'running', {
      cli: chosen.adapter.cli,
      host: ctx.hostId,
      startedAt: new Date().toISOString(),
      error: null,
    });
    if (!marked)
      return {
        ...base,
        cli: chosen.adapter.cli,
        outcome: 'failed',
        summary: 'stale attempt',
        error: 'stale',
      };
    await ctx.store.emit({
      missionId,
      taskId,
      attempt,
      type: 'task',
      status: 'running',
      message: `running on ${ctx.hostId} with ${chosen.adapter.displayName}`,
    });
    const cache = await openRepoCache({ repo: meta.repo, cacheDir: ctx.cacheDir });
    const log = ctx.logger.child({ missionId, taskId, attempt, host: ctx.hostId, cli: chosen.adapter.cli });
    const intervalMs = checkpointIntervalMs(spec);
    const checkout = await leaseRunCheckout(ctx, {
      job,
      cache,
      task,
      cli: chosen.adapter.cli,
      intervalMs,
      signal,
      log,
    });
    lease = checkout.lease;
    // A delivery after the first may find its attempt's checkpoint ref (resumed from or not): it
    // goes once the attempt has its result.
    const wip: WipState = { exists: mayHaveCheckpoint(job, intervalMs) };
    const setup = await runSetup(ctx, checkout.lease, checkout.baseCommit, task, signal);
    if (setup.failure) {
      const failed = { ...setup, failure: setup.failure };
      const ended = await setupFailed(ctx, {
        missionId,
        taskId,
        attempt,
        cli: chosen.adapter.cli,
        setup: failed,
        startedAt,
      });
      await dropCheckpoint(ctx, { job, token, dir: checkout.dir, wip, log });
      return ended;
    }
    // `return await` inside try: a bare `return` runs the finally (an awaited lease release)
    // while a rejected promise goes unobserved, and Node ends the host on the unhandled rejection.
    const result = await runInCheckout(ctx, {
      job,
      token,
      signal,
      task,
      cli: chosen,
      dir: checkout.dir,
      baseCommit: checkout.baseCommit,
      ...(isRepoUrl(meta.repo) ? {} : { localRepo: meta.repo }),
      startedAt,
      setupLog: setup.ran ? setup.log : undefined,
      checkpoints: { intervalMs, wip, ...(checkout.resumed ? { resumedTree: checkout.resumed.tree } : {}) },
    });
    await dropCheckpoint(ctx, { job, token, dir: checkout.dir, wip, log });
    if (result.outcome === 'done' && result.commit) {
      parkAt = result.commit;
      await holdForDependents(ctx, job, spec.tasks, task).catch((error: Error) =>
        log.debug({ err: error.message }, 'holding the queue for dependents failed'),
      );
    }
    return result;
  } finally {
    release();
    if (lease && parkAt) lease.park(attemptKey(missionId, taskId, attempt), parkAt);
    else await lease?.release();
  }
}

interface RunInput {
  readonly job: Job<RunJobData>;
  readonly token: string | undefined;
  readonly signal: AbortSignal | undefined;
  readonly task: TaskSpec;
  readonly cli: HostCli;
  readonly dir: string;
  /** The integration commit the checkout started from. */
  readonly baseCommit: string;
  /** The mission repo when it is a local path. */
  readonly localRepo?: string;
  readonly startedAt: number;
  /** The output of setup when it ran for this attempt, for the audit trail. */
  readonly setupLog?: string | undefined;
  readonly checkpoints: {
    readonly intervalMs: number;
    readonly wip: WipState;
    /** Set when the checkout holds the checkpoint of an interrupted run of this attempt. */
    readonly resumedTree?: string;
  };
}

async function runInCheckout(ctx: HostContext, input: RunInput): Promise<RunResult> {
  const { job, task, dir } = input;
  const { adapter } = input.cli;
  const { missionId, taskId, attempt } = job.data;
  const { spec } = await missionRecord(ctx, missionId);
  const log = ctx.logger.child({ missionId, taskId, attempt, host: ctx.hostId, cli: adapter.cli });
  const failed = (summary: string, error: string, fatal = false): RunResult => ({
    outcome: 'failed',
    cli: adapter.cli,
    host: ctx.hostId,
    resultStatus: 'unknown',
    summary,
    error,
    ...(fatal ? { fatal } : {}),
    durationMs: Date.now() - input.startedAt,
  });

  const paths = dispatchPaths(adapter, dispatchTaskId(taskId, attempt));
  const facts = await gatherPromptFacts(ctx.store, { missionId, spec, task, attempt }, paths.resultPath);
  const interrupted = input.checkpoints.resumedTree !== undefined;
  const prompt = assemblePrompt(interrupted ? { ...facts.input, interrupted } : facts.input);
  if (promptTooLarge(adapter, prompt)) {
    const max = adapter.config.max_prompt_size ?? adapter.maxPromptSize;
    return failed(
      'prompt too large',
      `prompt of ${prompt.length} characters exceeds ${adapter.displayName}'s max_prompt_size (${max}); not sent truncated`,
      true,
    );
  }
  log.info(
    { command: adapter.config.invoke_command, delivery: adapter.config.prompt_delivery },
    'starting CLI',
  );
  const model = resolveModel(adapter, facts.modelTier);
  const checkpoints = startCheckpoints(ctx, {
    job,
    token: input.token,
    cli: adapter.cli,
    dir,
    baseCommit: input.baseCommit,
    intervalMs: input.checkpoints.intervalMs,
    wip: input.checkpoints.wip,
    log,
    ...(input.checkpoints.resumedTree ? { resumedTree: input.checkpoints.resumedTree } : {}),
  });
  const run = await invokeOnHost(
    ctx,
    {
      adapter,
      cwd: dir,
      paths,
      prompt,
      model,
      timeoutMs: runTimeoutMs(task, adapter.config.timeout_ms),
      signal: input.signal,
    },
    { missionId, taskId, attempt },
  ).finally(() => checkpoints.stop());
  if (run.invocation.note) log.info(run.invocation.note);
  const escaped =
    run.origin &&
    (await recordOrigin(ctx, { missionId, taskId, attempt, stage: 'run' }, adapter, run.origin, {
      'prompt.md': prompt,
      'stdout.txt': tail(run.outcome.stdout, 20_000),
    }));
  // Fatal, not retried: the next attempt would run the same CLI the same way, in the same place.
  if (escaped) return failed('wrote outside its checkout', escaped, true);

  const reply = run.replyClass;
  const action = decideReply(reply, {
    cliName: adapter.displayName,
    ...(adapter.config.cooldown_ms !== undefined ? { cooldownMs: adapter.config.cooldown_ms } : {}),
    otherHostCanServe:
      reply?.kind === 'auth' && (await otherCliCanServe(ctx, job.data.capability, adapter.cli)),
  });
  if (action.action !== 'none' && reply) {
    await applyReply(ctx, { missionId, taskId, attempt }, 'run', adapter, reply, action);
    if (action.action === 'fail') return failed(`${adapter.displayName} cannot run`, action.error, true);
    await ctx.store.mark(missionId, taskId, attempt, 'queued', {});
    return await giveBack(job, input.token, action.giveBackMs);
  }
  if (run.outcome.cancelled) {
    // Only a mission cancel ends the attempt; a shutdown or a lost lock hands the job to another host.
    if (input.signal?.reason !== MISSION_CANCELLED)
      throw new Error(`CLI stopped: ${String(input.signal?.reason ?? 'aborted')}`);
    // The CLI did run: the audit, and the summary's count of agent runs, say so.
    await recordStage(ctx, { missionId, taskId, attempt }, 'run', {
      cli: adapter.cli,
      event: {
        kind: 'run-cancelled',
        cli: adapter.cli,
        cliName: adapter.displayName,
        durationMs: Date.now() - input.startedAt,
      },
    });
    return {
      outcome: 'cancelled',
      cli: adapter.cli,
      host: ctx.hostId,
      resultStatus: 'unknown',
      summary: 'cancelled; the CLI was stopped',
      durationMs: Date.now() - input.startedAt,
    };
  }
  return finishRun(ctx, {
    missionId,
    task,
    attempt,
    adapter,
    dir,
    baseCommit: input.baseCommit,
    ...(input.localRepo ? { localRepo: input.localRepo } : {}),
    paths,
    prompt,
    run,
    ...(facts.allowedPaths ? { allowedPaths: facts.allowedPaths } : {}),
    costBefore: facts.costUsd,
    startedAt: input.startedAt,
    // A host whose job moved elsewhere meanwhile (lost lock) must not publish over the new run.
    beforePublish: () => assertLockHeld(job, input.token, ctx.config.lockMs),
    ran: {
      tier: facts.modelTier,
      ...(model ? { model } : {}),
      ...(input.cli.version ? { cliVersion: input.cli.version } : {}),
      ...(ctx.platform ? { platform: ctx.platform } : {}),
      ...(facts.escalation ? { escalation: facts.escalation } : {}),
    },
    ...(input.setupLog ? { setupLog: input.setupLog } : {}),
  });
}

/** The reason no new attempt may start, or null while the mission's budget_usd is not spent. */
async function budgetSpent(
  ctx: HostContext,
  missionId: string,
  budgetUsd: number | undefined,
): Promise<string | null> {
  if (budgetUsd === undefined) return null;
  // Read fresh: the cached mission record holds the cost at the time it was first loaded.
  const spent = await ctx.store.addCost(missionId, 0);
  return spent >= budgetUsd ? `budget of $${budgetUsd} spent ($${spent.toFixed(2)})` : null;
}

/**
 * A run that passed, whose approval would release a dependent that outranks every job waiting:
 * this host stops fetching from the run's queue until the gate has released it, so the slot this
 * run frees goes to the dependent and not to a side task (run/hold-fetch.ts). Not awaited beyond
 * the decision: the run job completes at once, and its verify and gate go on.
 */
async function holdForDependents(
  ctx: HostContext,
  job: Job<RunJobData>,
  tasks: readonly TaskSpec[],
  task: TaskSpec,
): Promise<void> {
  if (!ctx.holdFetching || task.critic) return;
  const { missionId, taskId, attempt } = job.data;
  const released = await releasedByApproval(ctx, missionId, tasks, taskId);
  if (released.length === 0) return;
  const waiting = await bestWaiting(ctx.queues.connection, ctx.queues.get(job.queueName));
  if (!shouldHold({ critic: task.critic, released: released.map((r) => r.priority), bestWaiting: waiting }))
    return;
  const release = await ctx.holdFetching(job.queueName);
  void untilReleased(
    ctx,
    { missionId, taskId, attempt },
    released.map((r) => r.id),
  ).finally(release);
}
