import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Job } from 'bullmq';
import { attemptBranch, dispatchTaskId, type RunJobData, type RunResult } from '../shared/contracts.js';
import { FlotillaError } from '../shared/errors.js';
import { listHosts, routableHosts } from '../shared/registry.js';
import { readAgentSettings } from './agent-file.js';
import { chooseCli, giveBack } from './choose-cli.js';
import { type HostContext, loadMission } from './host-context.js';
import { assertSigned, MISSION_CANCELLED } from './job-guard.js';
import { assertLockHeld } from './lock-fence.js';
import {
  assemblePrompt,
  buildInvocation,
  continuationInput,
  promptTooLarge,
  resolveModel,
} from './prompt.js';
import { classifyReply } from './reply-patterns.js';
import { collectResult } from './result-parse.js';
import { spawnCli, tail } from './spawn-cli.js';
import { parseUsage } from './usage.js';
import { checkoutAttempt } from './workspace/attempt-checkout.js';
import { commitAttempt } from './workspace/commit.js';
import { openRepoCache } from './workspace/repo-cache.js';
import { snapshotChanges } from './workspace/snapshot-changes.js';
import { removeWorktree } from './workspace/worktree.js';
import { describeViolations, enforceWriteScope } from './workspace/write-scope.js';

const CAP = 2_000;

export async function runAttempt(
  ctx: HostContext,
  job: Job<RunJobData>,
  token: string | undefined,
  signal: AbortSignal | undefined,
): Promise<RunResult> {
  assertSigned(ctx, job);
  const { missionId, taskId, attempt } = job.data;
  const started = Date.now();
  const { spec, meta } = await loadMission(ctx, missionId);
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
    await ctx.store.audit(missionId, {
      at: new Date().toISOString(),
      taskId,
      attempt,
      stage: 'run',
      host: ctx.hostId,
      message: error,
    });
    return { ...base, outcome: 'failed', fatal: true, summary: error, error };
  }

  const chosen = chooseCli(ctx, job.data, task);
  if (!chosen) {
    // Pinned to a CLI this host lacks, or all of its CLIs for the queue are cooling down.
    return giveBack(job, token, 2_000);
  }
  const adapter = chosen.adapter;
  const log = ctx.logger.child({ missionId, taskId, attempt, host: ctx.hostId, cli: adapter.cli });
  const release = await ctx.slots.acquire(signal);
  const releaseCli = await (ctx.cliSlots.get(adapter.cli)?.acquire(signal) ?? Promise.resolve(() => {}));
  let checkoutDir: string | undefined;
  try {
    const marked = await ctx.store.mark(missionId, taskId, attempt, 'running', {
      cli: adapter.cli,
      host: ctx.hostId,
      startedAt: new Date().toISOString(),
      error: null,
    });
    if (!marked)
      return { ...base, cli: adapter.cli, outcome: 'failed', summary: 'stale attempt', error: 'stale' };
    await ctx.store.emit({
      missionId,
      taskId,
      attempt,
      type: 'task',
      status: 'running',
      message: `running on ${ctx.hostId} with ${adapter.displayName}`,
    });

    const cache = await openRepoCache({ repo: meta.repo, cacheDir: ctx.cacheDir });
    const checkout = await checkoutAttempt({ cache, missionId, taskId, attempt, workRoot: ctx.workRoot });
    checkoutDir = checkout.dir;
    // The task's own state and only its dependencies' handoffs, in one round trip: reading every
    // task's state made each run O(tasks).
    const [state, ...depStates] = await ctx.store.getTaskStates(missionId, [taskId, ...task.dependsOn]);
    const states = Object.fromEntries(task.dependsOn.map((dep, i) => [dep, depStates[i]]));
    const dtid = dispatchTaskId(taskId, attempt);
    const resultPath = adapter.config.result_path.replaceAll('{task-id}', dtid);
    const personality = task.agent ? (spec.agents[task.agent] ?? '') : '';
    const agent = readAgentSettings(personality);
    // agent-dispatch checks writes against the agent's allowed_paths; the task's own list wins.
    const allowedPaths = task.allowedPaths ?? agent.allowedPaths;
    const prompt = assemblePrompt({
      personality,
      missionGoal: spec.goal,
      task: allowedPaths === task.allowedPaths ? task : { ...task, allowedPaths },
      handoff: task.dependsOn.map((dep) => {
        const h = states[dep]?.handoff;
        const title = spec.tasks.find((t) => t.id === dep)?.title ?? dep;
        return {
          taskId: dep,
          title,
          summary: h?.summary ?? '',
          outputs: h?.outputs ?? '',
          findings: h?.findings ?? '',
        };
      }),
      controlMode: task.controlMode,
      resultPath,
      ...(attempt > 1 && state?.feedback
        ? { retry: { attempt: attempt - 1, maxAttempts: task.maxAttempts, feedback: state.feedback } }
        : {}),
      ...(state?.answers?.length
        ? {
            continuation: continuationInput(
              state.asked ?? [JSON.stringify(state.questions ?? [])],
              state.answers,
            ),
          }
        : {}),
    });
    if (promptTooLarge(adapter, prompt)) {
      return {
        ...base,
        cli: adapter.cli,
        outcome: 'failed',
        fatal: true,
        durationMs: Date.now() - started,
        summary: 'prompt too large',
        error: `prompt of ${prompt.length} characters exceeds ${adapter.displayName}'s max_prompt_size (${adapter.config.max_prompt_size ?? adapter.maxPromptSize}); not sent truncated`,
      };
    }
    const promptPath = join('.planning', 'dispatch', `${dtid}-PROMPT.md`);
    await mkdir(join(checkout.dir, '.planning', 'dispatch'), { recursive: true });
    await mkdir(dirname(join(checkout.dir, resultPath)), { recursive: true });
    await writeFile(join(checkout.dir, promptPath), prompt);

    const invocation = buildInvocation(adapter, {
      promptPath,
      promptText: prompt,
      model: resolveModel(adapter, agent.modelTier),
    });
    if (invocation.note) log.info(invocation.note);
    log.info({ command: invocation.command, delivery: invocation.delivery }, 'starting CLI');
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
    // A CLI that wraps its answer in JSON says what went wrong in that answer; matching the
    // unwrapped text keeps the CLI's own words (`Not logged in · Please run /login`) as the task's
    // error instead of a whole JSON line.
    const reply = `${usage?.resultText ?? outcome.stdout}\n${outcome.stderr}`;
    const classified = outcome.exitCode === 0 ? null : classifyReply(adapter, reply, outcome.spawnError);
    if (classified?.kind === 'rate-limit') {
      const cooldown = adapter.config.cooldown_ms ?? 60_000;
      ctx.coolingUntil.set(adapter.cli, Date.now() + cooldown);
      log.warn({ cooldownMs: cooldown }, `${adapter.displayName} is rate limited: ${classified.message}`);
      await ctx.onAdvertisedChange();
      await ctx.store.audit(missionId, {
        at: new Date().toISOString(),
        taskId,
        attempt,
        stage: 'run',
        host: ctx.hostId,
        cli: adapter.cli,
        message: `rate limited (attempt not counted, back to the queue): ${classified.message}`,
      });
      await ctx.store.mark(missionId, taskId, attempt, 'queued', {});
      // `return await` inside try: a bare `return` runs the finally (an awaited worktree removal)
      // while giveBack's promise rejects unobserved, and Node ends the host on the unhandled rejection.
      return await giveBack(job, token, Math.min(cooldown, 5_000));
    }
    if (classified?.kind === 'auth') {
      ctx.disabled.set(adapter.cli, classified.message);
      log.error(`${adapter.displayName} is not usable on this host: ${classified.message}`);
      await ctx.onAdvertisedChange();
      const others = routableHosts(await listHosts(ctx.store.redis, ctx.store.prefix)).some((h) =>
        h.clis.some(
          (c) =>
            c.capabilities.includes(job.data.capability) &&
            (h.hostId !== ctx.hostId || c.cli !== adapter.cli),
        ),
      );
      await ctx.store.audit(missionId, {
        at: new Date().toISOString(),
        taskId,
        attempt,
        stage: 'run',
        host: ctx.hostId,
        cli: adapter.cli,
        message: `${adapter.displayName}: ${classified.message}${others ? ' (another host will take the task)' : ' (no live host can serve the task)'}`,
      });
      if (others) {
        await ctx.store.mark(missionId, taskId, attempt, 'queued', {});
        return await giveBack(job, token, 1_000);
      }
      return {
        ...base,
        cli: adapter.cli,
        outcome: 'failed',
        fatal: true,
        durationMs: Date.now() - started,
        summary: `${adapter.displayName} cannot run`,
        error: `${adapter.displayName}: ${classified.message}`,
      };
    }
    if (outcome.cancelled) {
      // Only a mission cancel ends the attempt; a shutdown or a lost lock hands the job to another host.
      if (signal?.reason !== MISSION_CANCELLED)
        throw new Error(`CLI stopped: ${String(signal?.reason ?? 'aborted')}`);
      return {
        ...base,
        cli: adapter.cli,
        outcome: 'cancelled',
        summary: 'cancelled; the CLI was stopped',
        durationMs: Date.now() - started,
      };
    }

    const resultFile = join(checkout.dir, resultPath);
    const resultFileText = await readFile(resultFile, 'utf8').catch(() => null);
    const changedFiles = await snapshotChanges(checkout.dir);
    const collected = collectResult({
      exitCode: outcome.exitCode,
      timedOut: outcome.timedOut,
      stdout: usage?.resultText ?? outcome.stdout,
      stderr: outcome.stderr,
      resultFileText,
      changedFiles,
    });
    if (resultFileText === null && collected.source === 'stdout') {
      await writeFile(resultFile, collected.text);
    }
    const readOnly = task.controlMode === 'advisory' || task.controlMode === 'surgical';
    const scope = await enforceWriteScope({
      dir: checkout.dir,
      allowedPaths: allowedPaths ? [...allowedPaths] : undefined,
      readOnly,
    });
    let summary = collected.summary;
    if (scope.violations.length > 0) {
      summary = `${summary}\nWrite violation rolled back: ${describeViolations(scope.violations)}`.trim();
      log.warn({ violations: scope.violations }, 'write violation rolled back');
    }
    const success = collected.outcome === 'done';
    if (success) await archiveDispatchFiles(checkout.dir, [promptPath, resultPath]);
    const branch = attemptBranch(missionId, taskId, attempt);
    // A host whose job moved elsewhere meanwhile (lost lock) must not publish over the new run.
    await assertLockHeld(job, token, ctx.config.lockMs);
    const committed = await commitAttempt({
      dir: checkout.dir,
      branch,
      message: `flotilla: ${taskId} attempt ${attempt} (${adapter.cli})\n\n${summary.slice(0, 500)}`,
    });
    const costUsd = usage?.costUsd;
    if (costUsd) {
      await ctx.store.addCost(missionId, costUsd);
      await ctx.store.mark(missionId, taskId, attempt, null, { costUsd: (state?.costUsd ?? 0) + costUsd });
    }
    await ctx.store.audit(missionId, {
      at: new Date().toISOString(),
      taskId,
      attempt,
      stage: 'run',
      host: ctx.hostId,
      cli: adapter.cli,
      message: `${adapter.displayName} exited ${outcome.exitCode ?? 'by signal'}${outcome.timedOut ? ' (timed out)' : ''} after ${Math.round(outcome.durationMs / 1000)}s; result ${collected.status} from ${collected.source}${collected.warnings.length ? `; ${collected.warnings.join('; ')}` : ''}${scope.violations.length ? `; rolled back ${scope.violations.length} file(s) outside scope` : ''}`,
      files: {
        'prompt.md': prompt,
        'result.md': collected.text,
        'stdout.txt': tail(outcome.stdout, 20_000),
        'stderr.txt': tail(outcome.stderr, 20_000),
      },
    });
    // collectResult's own line comes first (the agent's Errors, a timeout without a result): the
    // gate quotes it in the task's error and feeds it into the next prompt.
    const error =
      collected.outcome === 'failed'
        ? [
            collected.error ?? `result ${collected.status}`,
            collected.warnings.join('; '),
            tail(outcome.stderr, 1_000),
          ]
            .filter(Boolean)
            .join('\n')
        : undefined;
    return {
      outcome: collected.outcome,
      cli: adapter.cli,
      host: ctx.hostId,
      branch,
      commit: committed.commit ?? undefined,
      resultStatus: collected.status,
      summary: summary.slice(0, CAP),
      outputs: collected.outputs.join(', ').slice(0, CAP),
      findings: collected.findings.slice(0, CAP),
      ...(error ? { error: error.slice(0, CAP) } : {}),
      ...(costUsd ? { costUsd } : {}),
      ...(collected.questions ? { questions: collected.questions } : {}),
      durationMs: Date.now() - started,
    } as RunResult;
  } finally {
    releaseCli();
    release();
    if (checkoutDir) await removeWorktree(checkoutDir);
  }
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

/** On success PROMPT and RESULT move to the archive folder with a timestamp prefix (cli-dispatch cleanup). */
async function archiveDispatchFiles(dir: string, files: readonly string[]): Promise<void> {
  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  const archive = join(dir, '.planning', 'dispatch', 'archive');
  await mkdir(archive, { recursive: true });
  for (const file of files) {
    const name = file.split('/').pop() ?? file;
    await rename(join(dir, file), join(archive, `${stamp}-${name}`)).catch(() => undefined);
  }
}
