import type { Job } from 'bullmq';
import type { CriticResult, StageJobData, VerifyResult } from '../../../shared/contracts.js';
import { FlotillaError } from '../../../shared/errors.js';
import { runTimeoutMs } from '../../../shared/mission.js';
import { pickReviewer } from '../../../shared/queue/match.js';
import { printedTooMuch } from '../../agent/collect-result.js';
import { resolveModel } from '../../agent/invocation.js';
import { dispatchPaths } from '../../agent/invoke.js';
import { tail } from '../../agent/spawn.js';
import { diffAgainstIntegration } from '../../workspace/attempt-checkout.js';
import type { CheckoutLease } from '../../workspace/checkout-pool.js';
import { openRepoCache } from '../../workspace/repo-cache.js';
import { attemptKey, leaseAtCommit } from '../../workspace/stage-checkout.js';
import { invokeOnHost, recordOrigin } from '../agent-run.js';
import { announceUnparked, poolPlace } from '../checkout.js';
import { type HostContext, missionRecord, usableClis } from '../context.js';
import { assertSigned, giveBack, handBack, MISSION_CANCELLED } from '../job-guard.js';
import { enterStage, recordStage } from '../record.js';
import { applyReply, decideReply, otherCliCanServe, RATE_LIMIT_GIVE_BACK_MS } from '../reply.js';
import { acquireSlots, takeSlots } from '../slots.js';
import { childValue, ignoredChildFailure, lostRun } from '../verify/processor.js';
import { buildReviewPrompt } from './review-prompt.js';
import { parseVerdict } from './verdict.js';

/**
 * How often a critic job is handed back so a host with another CLI can review, before self-review.
 * Every host serves the critic queue and competes for a handed-back job, so with two hosts that
 * cannot review and one that can, a count of 5 let the wrong host win six times in a row about one
 * time in eleven; 40 rounds (about 20 s at 500 ms) make that vanishingly rare.
 */
const MAX_HANDBACKS = 40;
const HANDBACK_DELAY_MS = 500;

/**
 * Whether another live host has a reviewer other than the builder's CLI; with `withRoom`, one whose
 * last heartbeat also had a free slot (heartbeats lag, so hand-backs are counted: MAX_HANDBACKS).
 */
async function reviewerElsewhere(ctx: HostContext, builder: string, withRoom = false): Promise<boolean> {
  return (await ctx.store.liveHosts()).some(
    (h) =>
      h.hostId !== ctx.hostId &&
      (!withRoom || h.freeSlots > 0) &&
      h.clis.some((c) => c.cli !== builder && c.capabilities.includes('code_review')),
  );
}

/**
 * The critic: a reviewer on a CLI other than the builder's whenever the cluster has one. Every
 * host serves this queue; a host whose only reviewer is the builder's own CLI hands the job back
 * while another live host has a different code_review CLI.
 */
export async function reviewAttempt(
  ctx: HostContext,
  job: Job<StageJobData>,
  token: string | undefined,
  signal: AbortSignal | undefined,
): Promise<CriticResult> {
  assertSigned(ctx, job);
  const { missionId, taskId, attempt } = job.data;
  const verify = await childValue<VerifyResult>(job);
  if (!verify)
    return { verify: lostRun((await ignoredChildFailure(job)) ?? 'the verify job failed'), ran: false };
  const { spec, meta } = await missionRecord(ctx, missionId);
  const task = spec.tasks.find((t) => t.id === taskId);
  if (!task) throw new FlotillaError('internal', `mission ${missionId} has no task ${taskId}`);
  if (!verify.passed || !task.critic || (await ctx.store.isCancelled(missionId)))
    return { verify, ran: false };

  const builder = verify.run.cli;
  const reviewer = pickReviewer(
    builder,
    usableClis(ctx).map((c) => c.adapter),
  );
  if (!reviewer || reviewer.selfReview || !reviewer.config.capabilities.includes('code_review')) {
    // A reviewer that is only resting after a rate limit is waited for: no self-review meanwhile.
    const resting = restingReviewerMs(ctx, builder);
    if (resting > 0) return giveBack(job, token, Math.min(resting, RATE_LIMIT_GIVE_BACK_MS));
    const elsewhere = await reviewerElsewhere(ctx, builder);
    // The count lives beside the job, not in its (signed) data.
    const handbacks = elsewhere ? await ctx.store.countHandback(job.id ?? '') : 0;
    // A host with no CLI at all cannot self-review: it hands back for as long as another host can.
    const cannotReviewHere = !reviewer && usableClis(ctx).length === 0;
    if (elsewhere && (handbacks <= MAX_HANDBACKS || cannotReviewHere)) {
      return giveBack(job, token, HANDBACK_DELAY_MS);
    }
  }
  const adapter = reviewer ?? usableClis(ctx)[0]?.adapter;
  if (!adapter) return { verify, ran: false, error: 'no CLI on this host can review' };

  // Reviews count against the host's slots and the reviewer CLI's own max_concurrent, like runs.
  // None free: a host with room for a reviewer takes the review now; with none, it waits here.
  let release = takeSlots(ctx, adapter.cli);
  if (!release) {
    const room =
      (await reviewerElsewhere(ctx, builder, true)) &&
      (await ctx.store.countHandback(job.id ?? '')) <= MAX_HANDBACKS;
    if (room) return handBack(ctx, job, token);
    release = await acquireSlots(ctx, adapter.cli, signal);
  }
  let lease: CheckoutLease | undefined;
  try {
    const cache = await openRepoCache({ repo: meta.repo, cacheDir: ctx.cacheDir });
    // The checkout verify parked for us on this host, or a warm one at the pushed commit.
    const checkout = await leaseAtCommit({
      cache,
      place: poolPlace(ctx),
      key: attemptKey(missionId, taskId, attempt),
      branch: verify.run.branch ?? '',
      commit: verify.run.commit,
      // Not run for a review, but named so the reset keeps setup's outputs for later attempts.
      setup: task.setup,
      signal,
    });
    lease = checkout.lease;
    if (!checkout.claimed) await announceUnparked(ctx, missionId, attemptKey(missionId, taskId, attempt));
    await enterStage(
      ctx,
      { missionId, taskId, attempt },
      'reviewing',
      `reviewing with ${adapter.displayName}`,
    );
    const diff = await diffAgainstIntegration({ cache, missionId, branch: verify.run.branch ?? '' });
    const paths = dispatchPaths(adapter, `${taskId}-a${attempt}-review`);
    const prompt = buildReviewPrompt({
      task,
      diff,
      criteria: verify.criteria,
      resultPath: paths.resultPath,
      minScore: task.minScore,
      attempt,
    });
    const run = await invokeOnHost(ctx, {
      adapter,
      cwd: checkout.dir,
      paths,
      prompt,
      model: resolveModel(adapter, 'check'),
      timeoutMs: runTimeoutMs(task, adapter.config.timeout_ms),
      signal,
    });
    const escaped =
      run.origin &&
      (await recordOrigin(ctx, { missionId, taskId, attempt, stage: 'critic' }, adapter, run.origin));
    if (escaped) return { verify, ran: true, cli: adapter.cli, error: escaped };
    const { outcome, usage } = run;
    // A rate limit or a login problem says nothing about the work: the review is not counted
    // against the attempt, the job goes back (to another reviewer, or here once the CLI has rested).
    const reply = outcome.cancelled ? null : run.replyClass;
    const action = decideReply(reply, {
      cliName: adapter.displayName,
      ...(adapter.config.cooldown_ms !== undefined ? { cooldownMs: adapter.config.cooldown_ms } : {}),
      otherHostCanServe: reply?.kind === 'auth' && (await otherCliCanServe(ctx, 'code_review', adapter.cli)),
    });
    if (action.action !== 'none' && reply) {
      await applyReply(ctx, { missionId, taskId, attempt }, 'critic', adapter, reply, action);
      if (action.action === 'fail') return { verify, ran: false, cli: adapter.cli, error: action.error };
      return await giveBack(job, token, action.giveBackMs);
    }
    const resultText = run.resultFileText ?? run.answer;
    const verdict = parseVerdict(resultText, task.minScore);
    if (usage?.costUsd) await ctx.store.addCost(missionId, usage.costUsd);
    await recordStage(ctx, { missionId, taskId, attempt }, 'critic', {
      cli: adapter.cli,
      event: {
        kind: 'critic',
        cli: adapter.cli,
        cliName: adapter.displayName,
        score: verdict?.score ?? null,
        verdict: verdict?.verdict ?? null,
        issues: verdict?.issues ?? [],
        selfReview: reviewer?.selfReview === true || adapter.cli === builder,
        exitCode: outcome.exitCode,
      },
      files: {
        'review-prompt.md': prompt,
        'review.md': resultText,
        'review-stderr.txt': tail(outcome.stderr, 10_000),
      },
    });
    if (outcome.cancelled) {
      if (signal?.reason !== MISSION_CANCELLED)
        throw new Error(`review stopped: ${String(signal?.reason ?? 'aborted')}`);
      return { verify, ran: false, error: 'cancelled' };
    }
    if (!verdict && outcome.outputCapped !== undefined) {
      return {
        verify,
        ran: true,
        cli: adapter.cli,
        error: printedTooMuch(outcome.outputCapped, `the reviewer ${adapter.displayName}`),
      };
    }
    if (!verdict) {
      return {
        verify,
        ran: true,
        cli: adapter.cli,
        error: `the reviewer wrote no readable verdict (exit ${outcome.exitCode}): ${tail(outcome.stderr || resultText, 500)}`,
      };
    }
    return {
      verify,
      ran: true,
      cli: adapter.cli,
      verdict,
      ...(usage?.costUsd ? { costUsd: usage.costUsd } : {}),
    };
  } finally {
    release();
    await lease?.release();
  }
}

/** How long until a code_review CLI of this host other than the builder's ends its rate-limit rest; 0 when none rests. */
function restingReviewerMs(ctx: HostContext, builder: string, now = Date.now()): number {
  let soonest = 0;
  for (const { adapter } of ctx.clis) {
    if (adapter.cli === builder || ctx.disabled.has(adapter.cli)) continue;
    if (!adapter.config.capabilities.includes('code_review')) continue;
    const left = (ctx.coolingUntil.get(adapter.cli) ?? 0) - now;
    if (left > 0 && (soonest === 0 || left < soonest)) soonest = left;
  }
  return soonest;
}
