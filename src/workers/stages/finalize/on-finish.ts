/**
 * `on_finish`: the mission's own command, run by the host that tells the mission's end (after the
 * summary and any delivery), for teams that announce with `gh`, a Slack CLI or a script of theirs.
 * An argument array, never a shell of flotilla's; the host's public environment only (no Redis URL,
 * job secret, signing key or forge token: agent/private-env.ts) plus the mission's facts in
 * FLOTILLA_* variables and its summary, status and receipt as files that live while it runs. It
 * runs in a local workspace's repository, else in that folder of files. What it did is audited; it
 * never changes how the mission ended.
 */
import { mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { spawnProcess, tail } from '../../agent/spawn.js';
import { isRepoUrl } from '../../workspace/repo-cache.js';
import type { HostContext } from '../context.js';

/** A notification script that takes longer than this is stuck; it is killed, with its tree. */
export const ON_FINISH_TIMEOUT_MS = 5 * 60_000;

export async function runOnFinish(
  ctx: Pick<HostContext, 'store' | 'logger' | 'workRoot' | 'cliGroups' | 'hostId'>,
  missionId: string,
  summary: string,
): Promise<void> {
  const { meta, spec } = await ctx.store.getMission(missionId);
  const [command, ...args] = spec.onFinish ?? [];
  if (!command) return;
  await mkdir(ctx.workRoot, { recursive: true });
  const dir = await mkdtemp(join(ctx.workRoot, 'on-finish-'));
  try {
    const [status, receipt] = await Promise.all([
      ctx.store.status(missionId),
      ctx.store.getReceipt(missionId),
    ]);
    const files = {
      FLOTILLA_SUMMARY_FILE: join(dir, 'summary.txt'),
      FLOTILLA_STATUS_FILE: join(dir, 'status.json'),
      FLOTILLA_RECEIPT_FILE: join(dir, 'receipt.json'),
    };
    await writeFile(files.FLOTILLA_SUMMARY_FILE, `${summary}\n`);
    await writeFile(files.FLOTILLA_STATUS_FILE, `${JSON.stringify(status, null, 2)}\n`);
    await writeFile(files.FLOTILLA_RECEIPT_FILE, `${JSON.stringify(receipt, null, 2)}\n`);
    const local = !isRepoUrl(meta.repo) && (await stat(meta.repo).catch(() => null))?.isDirectory();
    const pr = status.delivery?.pullRequest;
    const outcome = await spawnProcess({
      command,
      args,
      cwd: local ? meta.repo : dir,
      env: {
        FLOTILLA_MISSION_ID: missionId,
        FLOTILLA_MISSION_STATUS: status.status,
        FLOTILLA_MISSION_GOAL: status.goal,
        FLOTILLA_BRANCH: status.branch,
        FLOTILLA_WORKSPACE: meta.repo,
        ...files,
        ...(pr ? { FLOTILLA_PULL_REQUEST_URL: pr.url } : {}),
      },
      timeoutMs: ON_FINISH_TIMEOUT_MS,
      groups: ctx.cliGroups,
    });
    const output = [outcome.stdout, outcome.stderr].filter((s) => s.trim()).join('\n');
    await ctx.store.audit(missionId, {
      at: new Date().toISOString(),
      taskId: '',
      attempt: 0,
      stage: 'finish',
      host: ctx.hostId,
      event: {
        kind: 'on-finish',
        command: [command, ...args],
        exitCode: outcome.exitCode,
        timedOut: outcome.timedOut,
        durationMs: outcome.durationMs,
        tail: outcome.spawnError ? `could not start: ${outcome.spawnError}` : tail(output, 1_500),
      },
    });
    if (outcome.exitCode !== 0) {
      ctx.logger.warn(
        { missionId, exitCode: outcome.exitCode, timedOut: outcome.timedOut },
        'on_finish failed',
      );
    }
  } catch (error) {
    ctx.logger.warn({ missionId, err: (error as Error).message }, 'on_finish could not run');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
