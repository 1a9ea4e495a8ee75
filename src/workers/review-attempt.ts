import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { DelayedError, type Job } from 'bullmq';
import type { CriticResult, StageJobData, VerifyResult } from '../shared/contracts.js';
import { FlotillaError } from '../shared/errors.js';
import { listHosts, routableHosts } from '../shared/registry.js';
import { type HostContext, loadMission, usableClis } from './host-context.js';
import { assertSigned, MISSION_CANCELLED } from './job-guard.js';
import { pickReviewer } from './match.js';
import { buildInvocation, buildReviewPrompt, resolveModel } from './prompt.js';
import { spawnCli, tail } from './spawn-cli.js';
import { parseUsage } from './usage.js';
import { parseVerdict } from './verdict.js';
import { childValue, ignoredChildFailure, lostRun } from './verify-attempt.js';
import { checkoutForVerify, diffAgainstIntegration } from './workspace/attempt-checkout.js';
import { openRepoCache } from './workspace/repo-cache.js';

/**
 * How often a critic job is handed back so a host with another CLI can review, before self-review.
 * Every host serves the critic queue and competes for a handed-back job, so with two hosts that
 * cannot review and one that can, a count of 5 let the wrong host win six times in a row about one
 * time in eleven; 40 rounds (about 20 s at 500 ms) make that vanishingly rare.
 */
const MAX_HANDBACKS = 40;

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
  const { spec, meta } = await loadMission(ctx, missionId);
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
    const elsewhere = routableHosts(await listHosts(ctx.store.redis, ctx.store.prefix)).some(
      (h) =>
        h.hostId !== ctx.hostId &&
        h.clis.some((c) => c.cli !== builder && c.capabilities.includes('code_review')),
    );
    // The count lives beside the job, not in its (signed) data.
    const counter = `${ctx.store.prefix}:handbacks:${job.id}`;
    const handbacks = elsewhere ? await ctx.store.redis.incr(counter) : 0;
    if (elsewhere) await ctx.store.redis.pexpire(counter, 3_600_000);
    // A host with no CLI at all cannot self-review: it hands back for as long as another host can.
    const cannotReviewHere = !reviewer && usableClis(ctx).length === 0;
    if (elsewhere && (handbacks <= MAX_HANDBACKS || cannotReviewHere)) {
      await job.moveToDelayed(Date.now() + 500, token);
      throw new DelayedError();
    }
  }
  const adapter = reviewer ?? usableClis(ctx)[0]?.adapter;
  if (!adapter) return { verify, ran: false, error: 'no CLI on this host can review' };

  const release = await ctx.slots.acquire(signal);
  const cache = await openRepoCache({ repo: meta.repo, cacheDir: ctx.cacheDir });
  const checkout = await checkoutForVerify({
    cache,
    branch: verify.run.branch ?? '',
    workRoot: ctx.workRoot,
  });
  try {
    await ctx.store.mark(missionId, taskId, attempt, 'reviewing');
    await ctx.store.emit({
      missionId,
      taskId,
      attempt,
      type: 'task',
      status: 'reviewing',
      message: `reviewing with ${adapter.displayName}`,
    });
    const diff = await diffAgainstIntegration({ cache, missionId, branch: verify.run.branch ?? '' });
    const reviewId = `${taskId}-a${attempt}-review`;
    const resultPath = adapter.config.result_path.replaceAll('{task-id}', reviewId);
    const prompt = buildReviewPrompt({
      task,
      diff,
      criteria: verify.criteria,
      resultPath,
      minScore: task.minScore,
      attempt,
    });
    const promptPath = join('.planning', 'dispatch', `${reviewId}-PROMPT.md`);
    await mkdir(join(checkout.dir, '.planning', 'dispatch'), { recursive: true });
    await mkdir(dirname(join(checkout.dir, resultPath)), { recursive: true });
    await writeFile(join(checkout.dir, promptPath), prompt);
    const invocation = buildInvocation(adapter, {
      promptPath,
      promptText: prompt,
      model: resolveModel(adapter, 'check'),
    });
    const outcome = await spawnCli({
      command: invocation.command,
      args: invocation.args,
      stdin: invocation.stdin,
      cwd: checkout.dir,
      env: adapter.config.env,
      timeoutMs: Math.min(adapter.config.timeout_ms, task.timeoutMs),
      signal,
      groups: ctx.cliGroups,
    });
    const usage = adapter.config.usage_format
      ? parseUsage(adapter.config.usage_format, outcome.stdout)
      : null;
    const resultText =
      (await readFile(join(checkout.dir, resultPath), 'utf8').catch(() => null)) ??
      usage?.resultText ??
      outcome.stdout;
    const verdict = parseVerdict(resultText, task.minScore);
    if (usage?.costUsd) await ctx.store.addCost(missionId, usage.costUsd);
    const selfNote =
      reviewer?.selfReview || adapter.cli === builder
        ? ' (no other reviewer CLI in the cluster: self-review)'
        : '';
    await ctx.store.audit(missionId, {
      at: new Date().toISOString(),
      taskId,
      attempt,
      stage: 'critic',
      host: ctx.hostId,
      cli: adapter.cli,
      message: verdict
        ? `critic ${adapter.displayName}${selfNote}: score ${verdict.score}/10, ${verdict.verdict}${verdict.issues.length ? ` — ${verdict.issues.join('; ')}` : ''}`
        : `critic ${adapter.displayName}: no verdict could be read (exit ${outcome.exitCode})`,
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
    await checkout.cleanup();
  }
}
