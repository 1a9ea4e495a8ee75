import type { DeliveryStatus, MissionStatusJson } from '../../../shared/contracts.js';
import { formatDuration } from '../../../shared/duration.js';

const ICON: Record<string, string> = {
  completed: '✅',
  failed: '❌',
  skipped: '⏭️',
  cancelled: '🛑',
};

/** The completion summary of workspace-dispatch, from the status object: pure, so tests read it. */
export function formatSummary(
  status: MissionStatusJson,
  facts: { repo: string; spawned: number; hosts?: number },
): string {
  const heading =
    status.status === 'done'
      ? `✅ Mission complete: ${status.goal}`
      : status.status === 'cancelled'
        ? `🛑 Mission cancelled: ${status.goal}`
        : status.status === 'failed'
          ? `❌ Mission failed: ${status.goal}`
          : `⚠️ Mission partial: ${status.goal}`;
  const lines = [heading, '', 'Tasks:'];
  for (const task of status.tasks) {
    const icon = ICON[task.status] ?? '•';
    const extra: string[] = [];
    if (task.attempts > 1) extra.push(`${task.attempts} attempts`);
    if (task.score !== null && task.status === 'completed') extra.push(`score ${task.score}`);
    if (task.status !== 'completed' && task.error) extra.push(task.error.split('\n')[0] ?? '');
    lines.push(`- ${icon} ${task.title ?? task.id}${extra.length ? ` (${extra.join('; ')})` : ''}`);
  }
  const started = Date.parse(status.createdAt);
  const finished = status.finishedAt ? Date.parse(status.finishedAt) : Date.now();
  lines.push('');
  lines.push(`Output: branch ${status.branch} in ${facts.repo}`);
  lines.push(`Duration: ${formatDuration(finished - started)}`);
  // "Workers" read as hosts (`--workers N`); this counts agent CLI processes, and says on how many hosts.
  const on = facts.hosts ? ` on ${facts.hosts} host${facts.hosts === 1 ? '' : 's'}` : '';
  lines.push(`Agent CLI runs: ${facts.spawned}${on}`);
  if (status.costUsd) lines.push(`Cost: $${status.costUsd.toFixed(4)}`);
  return lines.join('\n');
}

/**
 * The summary's delivery lines (`deliver:`): where the branch went and the pull request, or why it
 * did not and how to try again. Pure, beside the rest of the summary.
 */
export function formatDeliveryLines(
  delivery: DeliveryStatus,
  facts: { missionId: string; repo: string },
): string[] {
  const pr = delivery.pullRequest;
  switch (delivery.state) {
    case 'delivered':
      return [
        `Delivered: ${delivery.branch} pushed to ${delivery.remote ?? 'the remote'}${delivery.pushedCommit ? ` at ${delivery.pushedCommit.slice(0, 12)}` : ''}`,
        ...(pr ? [`Pull request: ${pr.url} (#${pr.number}, ${pr.action})`] : []),
      ];
    case 'failed':
      return [
        `⚠️ Delivery failed after ${delivery.tries} ${delivery.tries === 1 ? 'try' : 'tries'}: ${delivery.error ?? 'unknown error'}`,
        `   The branch ${delivery.branch} is still in ${facts.repo}; \`flotilla deliver ${facts.missionId}\` tries again.`,
      ];
    case 'skipped':
      return [`Delivery: skipped (${delivery.error ?? 'not wanted for this status'})`];
    default:
      return [`Delivery: ${delivery.state}${delivery.error ? ` (${delivery.error})` : ''}`];
  }
}
