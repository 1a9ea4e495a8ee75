import { mkdir, rename, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Adapter } from '../../../shared/adapter.js';
import { attemptRef, type RunResult } from '../../../shared/contracts.js';
import type { TaskSpec } from '../../../shared/mission.js';
import { collectResult } from '../../agent/collect-result.js';
import type { AgentRun, DispatchPaths } from '../../agent/invoke.js';
import { outputTail, tail } from '../../agent/spawn.js';
import { commitAttempt } from '../../workspace/commit.js';
import { agentChanges, changedPaths } from '../../workspace/snapshot-changes.js';
import { describeRefusal, type RefusedPath } from '../../workspace/verify-path.js';
import { noteLeftIgnored, readLeasedWorktree } from '../../workspace/warm-checkout.js';
import { deleteUntracked, describeViolations, enforceWriteScope } from '../../workspace/write-scope.js';
import type { HostContext } from '../context.js';
import { recordStage } from '../record.js';

/** Run results travel in BullMQ's job return values, so their texts are capped (the audit keeps all). */
const RESULT_TEXT_CAP = 2_000;
/** Audit copies of a CLI's stdout and stderr keep their last this many characters. */
const AUDIT_OUTPUT_CHARS = 20_000;

export interface FinishInput {
  readonly missionId: string;
  readonly task: TaskSpec;
  readonly attempt: number;
  readonly adapter: Adapter;
  readonly dir: string;
  /** The integration commit the checkout started from; commits the agent made are folded into one. */
  readonly baseCommit?: string;
  /** The mission repo when it is a local path: the attempt is written into it without a push. */
  readonly localRepo?: string;
  readonly paths: DispatchPaths;
  readonly prompt: string;
  readonly run: AgentRun;
  readonly allowedPaths?: readonly string[];
  /** What the task had spent before this attempt. */
  readonly costBefore: number;
  readonly startedAt: number;
  /** Throws when this host may no longer publish the attempt's work (stages/lock-fence.ts). */
  readonly beforePublish?: () => Promise<void>;
  /** How the CLI was run, for the audit and the receipt: tier, model flag, version, escalation. */
  readonly ran: { tier: string; model?: string; cliVersion?: string; escalation?: string };
  /** The output of the task's setup when it ran for this attempt. */
  readonly setupLog?: string;
}

/**
 * After the CLI exited normally: collect its result, roll back writes outside the scope, commit
 * the attempt on its ref, record cost and the audit row, and return the run's verdict.
 */
export async function finishRun(ctx: HostContext, input: FinishInput): Promise<RunResult> {
  const { missionId, task, attempt, adapter, dir, paths, run } = input;
  const resultFile = join(dir, paths.resultPath);
  // The one walk of the checkout per attempt: the result, the write scope and the commit all use it.
  const worktree = await readLeasedWorktree(dir);
  const collected = collectResult({
    exitCode: run.outcome.exitCode,
    timedOut: run.outcome.timedOut,
    ...(run.outcome.outputCapped !== undefined ? { outputCapped: run.outcome.outputCapped } : {}),
    stdout: run.answer,
    stderr: run.outcome.stderr,
    resultFileText: run.resultFileText,
    changedFiles: changedPaths(worktree),
  });
  if (run.resultFileText === null && collected.source === 'stdout')
    await writeFile(resultFile, collected.text);
  const scope = await enforceWriteScope({
    dir,
    changes: agentChanges(worktree),
    allowedPaths: input.allowedPaths ? [...input.allowedPaths] : undefined,
    readOnly: task.controlMode === 'advisory' || task.controlMode === 'surgical',
  });
  let summary = collected.summary;
  if (scope.violations.length > 0) {
    summary = `${summary}\nWrite violation rolled back: ${describeViolations(scope.violations)}`.trim();
    ctx.logger.warn(
      { missionId, taskId: task.id, attempt, violations: scope.violations },
      'write violation rolled back',
    );
  }
  if (collected.outcome === 'done') await archiveDispatchFiles(dir, [paths.promptPath, paths.resultPath]);
  const branch = attemptRef(missionId, task.id, attempt);
  await input.beforePublish?.();
  const committed = await commitAttempt({
    dir,
    ref: branch,
    worktree,
    ...(input.localRepo ? { localRepo: input.localRepo } : {}),
    ...(input.baseCommit ? { baseCommit: input.baseCommit } : {}),
    message: `flotilla: ${task.id} attempt ${attempt} (${adapter.cli})\n\n${summary.slice(0, 500)}`,
  });
  // Paths git refuses (`.GIT/hooks/…`, `git~1/…`) were left out of the commits: the attempt fails
  // naming each, and the checkout loses them, as it is at the commit the ref names.
  const refused = committed.refused;
  const refusals = refused.map((r) => describeRefusal(r.path, r.refusal));
  if (refused.length > 0) {
    for (const path of refused) await deleteUntracked(resolve(dir), path.path);
    ctx.logger.warn(
      { missionId, taskId: task.id, attempt, refused: refused.map((r) => r.path) },
      'paths git refuses were not committed',
    );
  }
  const outcome = refused.length > 0 ? 'failed' : collected.outcome;
  // The verify that continues in this checkout cleans by this listing instead of a walk of its own.
  await noteLeftIgnored(dir, committed.commit, worktree.ignored);
  const costUsd = run.usage?.costUsd;
  if (costUsd) {
    await ctx.store.addCost(missionId, costUsd);
    await ctx.store.mark(missionId, task.id, attempt, null, { costUsd: input.costBefore + costUsd });
  }
  await recordStage(ctx, { missionId, taskId: task.id, attempt }, 'run', {
    cli: adapter.cli,
    event: {
      kind: 'run',
      cli: adapter.cli,
      cliName: adapter.displayName,
      exitCode: run.outcome.exitCode,
      timedOut: run.outcome.timedOut,
      durationMs: run.outcome.durationMs,
      resultStatus: collected.status,
      resultSource: collected.source,
      warnings: [...refusals, ...collected.warnings],
      rolledBack: scope.violations,
      ...(costUsd ? { costUsd } : {}),
      ...input.ran,
      ...(committed.commit ? { commit: committed.commit } : {}),
    },
    files: {
      'prompt.md': input.prompt,
      'result.md': collected.text,
      'stdout.txt': outputTail(run.outcome.stdout, run.outcome.printed.stdout, AUDIT_OUTPUT_CHARS),
      'stderr.txt': outputTail(run.outcome.stderr, run.outcome.printed.stderr, AUDIT_OUTPUT_CHARS),
      ...(input.setupLog ? { 'setup.txt': input.setupLog } : {}),
    },
  });
  // collectResult's own line comes first (the agent's Errors, a timeout without a result): the
  // gate quotes it in the task's error and feeds it into the next prompt.
  // Paths git refused come before it: the attempt failed for them whatever the agent reported.
  const runError =
    collected.outcome === 'failed'
      ? [
          collected.error ?? `result ${collected.status}`,
          collected.warnings.join('; '),
          tail(run.outcome.stderr, 1_000),
        ]
      : [];
  const error =
    outcome === 'failed'
      ? [refusedError(refused, refusals), ...runError].filter(Boolean).join('\n')
      : undefined;
  return {
    outcome,
    cli: adapter.cli,
    host: ctx.hostId,
    branch,
    commit: committed.commit,
    workCommit: committed.workCommit,
    resultStatus: collected.status,
    summary: summary.slice(0, RESULT_TEXT_CAP),
    outputs: collected.outputs.join(', ').slice(0, RESULT_TEXT_CAP),
    findings: collected.findings.slice(0, RESULT_TEXT_CAP),
    ...(error ? { error: error.slice(0, RESULT_TEXT_CAP) } : {}),
    ...(costUsd ? { costUsd } : {}),
    ...(collected.questions ? { questions: collected.questions } : {}),
    durationMs: Date.now() - input.startedAt,
  };
}

/**
 * The error of an attempt that left paths git refuses: the gate quotes it, and the next prompt
 * names each path and git's reason, as a write-scope rollback names its files.
 */
function refusedError(refused: readonly RefusedPath[], refusals: readonly string[]): string {
  if (refused.length === 0) return '';
  const shown = refusals.slice(0, 20);
  const more = refusals.length > shown.length ? [`…and ${refusals.length - shown.length} more`] : [];
  return [
    'The attempt wrote paths git refuses: they were left out of its commit, and the attempt failed. Use other names:',
    ...shown.map((line) => `- ${line}`),
    ...more,
  ].join('\n');
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
