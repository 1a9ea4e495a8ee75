/**
 * The pull request's body: the mission's summary as a reviewer reads it on the forge — every task
 * with its attempts, score and cost, what failed or was skipped and why, the totals, and the
 * signed receipt attached (or, past the forge's size limit, how to get it). Pure.
 */
import type { MissionStatusJson } from '../../../shared/contracts.js';
import { formatDuration } from '../../../shared/duration.js';
import type { Receipt } from '../../../shared/receipt.js';

/**
 * GitHub refuses a body over 65,536 characters; GitLab's and Gitea's limits are larger. The receipt
 * is attached only while the whole body stays well under that, so the table always fits.
 */
const MAX_BODY_CHARS = 60_000;

/** The hidden line a delivery marks its pull request with, to be recognised by a person or a script. */
export function missionMarker(missionId: string): string {
  return `<!-- flotilla:mission=${missionId} -->`;
}

const ICON: Record<string, string> = { completed: '✅', failed: '❌', skipped: '⏭️', cancelled: '🛑' };

export interface PullRequestBodyInput {
  readonly status: MissionStatusJson;
  readonly receipt: Receipt | null;
  /** The commit the pushed branch is at. */
  readonly tip: string | null;
  readonly baseCommit: string;
}

export function formatPullRequestBody(input: PullRequestBodyInput): string {
  const { status, receipt } = input;
  const done = status.tasks.filter((t) => t.status === 'completed').length;
  const lines = [
    missionMarker(status.id),
    `${heading(status.status)} — ${done} of ${status.tasks.length} tasks completed.`,
    '',
    `> ${oneLine(status.goal)}`,
    '',
    '| Task | Status | Attempts | Score | Cost | Why |',
    '|---|---|---|---|---|---|',
  ];
  for (const task of status.tasks) {
    const why = task.status === 'completed' ? '' : oneLine(task.error ?? '');
    lines.push(
      `| ${cell(task.title ?? task.id)} (\`${task.id}\`) | ${ICON[task.status] ?? ''} ${task.status} | ${task.attempts} | ${task.score ?? '–'} | ${money(task.costUsd)} | ${cell(why)} |`,
    );
  }
  const started = Date.parse(status.createdAt);
  const finished = status.finishedAt ? Date.parse(status.finishedAt) : started;
  lines.push(
    '',
    `Mission \`${status.id}\`, branch \`${status.branch}\` at ${short(input.tip)} from base ${short(input.baseCommit)}; ran ${formatDuration(finished - started)}${status.costUsd ? `, cost ${money(status.costUsd)}` : ''}.`,
    '',
  );
  lines.push(...receiptLines(status.id, receipt, lines.join('\n').length));
  return lines.join('\n');
}

function receiptLines(missionId: string, receipt: Receipt | null, used: number): string[] {
  if (!receipt) return [`No receipt was written (see \`flotilla receipt ${missionId}\`).`];
  const signed = receipt.signature
    ? `signed with Ed25519 key \`${receipt.signature.keyId.slice(0, 16)}…\``
    : 'not signed (FLOTILLA_SIGNING_KEY was not set on the finalizing host)';
  const lines = [
    `**Receipt**: ${signed}, over ${receipt.audit.count} audit entries, chain head \`${receipt.audit.head.slice(0, 16)}…\`. Save it as \`receipt.json\` and check it with \`flotilla verify receipt.json --public-key KEY.pem --repo .\`.`,
    '',
  ];
  const json = JSON.stringify(receipt, null, 2);
  const attached = ['<details><summary>receipt.json</summary>', '', '```json', json, '```', '', '</details>'];
  if (used + lines.join('\n').length + attached.join('\n').length <= MAX_BODY_CHARS)
    return [...lines, ...attached];
  return [
    ...lines,
    `The receipt (${Math.round(json.length / 1024)} KB) is too large to attach here: \`flotilla receipt ${missionId} -o receipt.json\` writes it.`,
  ];
}

function heading(status: MissionStatusJson['status']): string {
  if (status === 'done') return '✅ **Mission complete**';
  if (status === 'partial') return '⚠️ **Mission partial**';
  return `**Mission ${status}**`;
}

/** Markdown table cells hold one line and no unescaped `|`. */
function cell(text: string): string {
  return text.replace(/\|/g, '\\|');
}

function oneLine(text: string): string {
  const first = text.split('\n').find((line) => line.trim() !== '') ?? '';
  return first.length > 200 ? `${first.slice(0, 197)}…` : first;
}

function money(usd: number | undefined): string {
  return usd ? `$${usd.toFixed(4)}` : '–';
}

function short(commit: string | null): string {
  return commit ? `\`${commit.slice(0, 12)}\`` : '(unknown)';
}
