import { type AttentionItem, isTerminal, type Overview } from '../board/mission-overview.js';
import type { MissionStatusJson, TaskStatus } from '../shared/contracts.js';
import { formatDuration } from '../shared/duration.js';

/**
 * The live view of a mission on a terminal, fitted to its size: a header with the counts and a
 * progress bar, the attention list, then the running tasks, then as many others as fit, and a
 * last line that counts the ones left out ("+ 212 pending"). A pure function of the status, the
 * overview and the terminal size, so any size can be checked by a table; nothing here writes.
 */

export interface ScreenSize {
  readonly rows: number;
  readonly cols: number;
}

export interface ScreenInput {
  readonly status: MissionStatusJson;
  readonly overview: Overview;
  readonly now: number;
}

type Row = MissionStatusJson['tasks'][number];

/** Statuses in the order the counts line and the table read them: under way, then waiting, then done. */
const ORDER: readonly TaskStatus[] = [
  'running',
  'verifying',
  'reviewing',
  'retrying',
  'needs_input',
  'awaiting_approval',
  'queued',
  'failed',
  'completed',
  'skipped',
  'cancelled',
  'pending',
];
const ACTIVE: ReadonlySet<TaskStatus> = new Set(['running', 'verifying', 'reviewing']);
/** The attention list takes at most this share of the screen; the tasks under way need the rest. */
const ATTENTION_SHARE = 0.35;
const BAR_WIDTH = 30;

const KIND_LABEL: Record<AttentionItem['kind'], string> = {
  failed: 'failed',
  needs_input: 'question',
  awaiting_approval: 'approval',
  unservable: 'no host',
  retrying: 'retrying',
};

/** Cut to the width, by code point; the last column stays free so no line wraps. */
export function fitWidth(line: string, cols: number): string {
  const chars = [...line];
  const room = Math.max(1, cols - 1);
  return chars.length <= room ? line : `${chars.slice(0, room - 1).join('')}…`;
}

function label(status: string): string {
  return status.replace('_', ' ');
}

function bar(finished: number, total: number): string {
  const filled = total === 0 ? 0 : Math.round((finished / total) * BAR_WIDTH);
  return `[${'█'.repeat(filled)}${'░'.repeat(BAR_WIDTH - filled)}]`;
}

function header(input: ScreenInput): string[] {
  const { status, overview } = input;
  const facts = [status.id, status.status, formatDuration(overview.elapsedMs)];
  if (overview.costUsd) facts.push(`$${overview.costUsd.toFixed(2)}`);
  if (overview.estimate && status.status === 'running')
    facts.push(`about ${formatDuration(overview.estimate.remainingMs)} left`);
  const pct = overview.total === 0 ? 0 : Math.floor((overview.finished / overview.total) * 100);
  let progress = `${bar(overview.finished, overview.total)} ${overview.finished}/${overview.total} finished (${pct}%)`;
  const hosts = overview.hosts;
  if (hosts)
    progress +=
      hosts.total === 0
        ? ' · no live host'
        : ` · hosts ${hosts.busy} busy, ${hosts.idle} idle · ${hosts.running}/${hosts.slots} slots`;
  const counts = ORDER.filter((s) => overview.counts[s] > 0)
    .map((s) => `${label(s)} ${overview.counts[s]}`)
    .join(' · ');
  return [facts.join(' — '), progress, counts];
}

/** One line per attention item; unservable tasks share a line per reason. */
function attentionLines(input: ScreenInput): string[] {
  const lines: string[] = [];
  const unservable = new Map<string, string[]>();
  for (const item of input.overview.attention) {
    if (item.kind === 'unservable') {
      const ids = unservable.get(item.detail);
      if (ids) ids.push(item.taskId);
      else {
        unservable.set(item.detail, [item.taskId]);
        lines.push(`\u0000${item.detail}`);
      }
      continue;
    }
    const tries = item.kind === 'needs_input' ? '' : ` (attempt ${item.attempts}/${item.maxAttempts})`;
    const hint =
      item.kind === 'needs_input'
        ? ` → flotilla answer ${input.status.id} ${item.taskId} "…"`
        : item.kind === 'awaiting_approval'
          ? ` → flotilla approve ${input.status.id} ${item.taskId} [--reject "why"]`
          : '';
    lines.push(`  ${KIND_LABEL[item.kind].padEnd(9)} ${item.taskId}  ${item.detail}${tries}${hint}`);
  }
  return lines.map((line) => {
    if (!line.startsWith('\u0000')) return line;
    const reason = line.slice(1);
    const ids = unservable.get(reason) ?? [];
    const named = ids.slice(0, 3).join(', ') + (ids.length > 3 ? '…' : '');
    return `  ${KIND_LABEL.unservable.padEnd(9)} ${ids.length} task${ids.length === 1 ? '' : 's'} (${named}): ${reason}`;
  });
}

/** Which tasks the table shows first: under way, then waiting, then the latest finished. */
function tableOrder(rows: readonly Row[]): Row[] {
  const rank = (s: TaskStatus) => ORDER.indexOf(s);
  const time = (r: Row) => Date.parse((isTerminal(r.status) ? r.finishedAt : r.startedAt) ?? '') || 0;
  return [...rows].sort((a, b) => {
    const byStatus = rank(a.status) - rank(b.status);
    if (byStatus !== 0) return byStatus;
    // The latest finished first; tasks under way by how long they have run, longest first.
    return isTerminal(a.status) ? time(b) - time(a) : time(a) - time(b);
  });
}

function tableLines(rows: readonly Row[], now: number): string[] {
  const cells = rows.map((t) => {
    const started = t.startedAt ? Date.parse(t.startedAt) : Number.NaN;
    const ended = t.finishedAt ? Date.parse(t.finishedAt) : now;
    return [
      t.id,
      label(t.status),
      t.attempts ? String(t.attempts) : '',
      t.host ?? '',
      t.cli ?? '',
      Number.isNaN(started) ? '' : formatDuration(Math.max(0, ended - started)),
      t.score === null ? '' : String(t.score),
      ACTIVE.has(t.status) || !t.error ? (t.title ?? '') : t.error,
    ];
  });
  const head = ['task', 'status', 'try', 'host', 'cli', 'elapsed', 'score', 'title / error'];
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) =>
    r
      .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(head), ...cells.map(line)];
}

function leftOut(rows: readonly Row[]): string {
  const counts = new Map<TaskStatus, number>();
  for (const row of rows) counts.set(row.status, (counts.get(row.status) ?? 0) + 1);
  const parts = ORDER.filter((s) => counts.has(s)).map((s) => `${counts.get(s)} ${label(s)}`);
  return `+ ${parts.join(' · ')}`;
}

export function layoutScreen(input: ScreenInput, size: ScreenSize): string[] {
  // One line stays free below the frame, so printing it never scrolls the terminal.
  const budget = Math.max(1, size.rows - 1);
  const out = header(input);
  const attention = attentionLines(input);
  if (attention.length > 0 && out.length + 2 <= budget) {
    const room = Math.max(1, Math.floor(budget * ATTENTION_SHARE) - 1);
    const shown = attention.length <= room ? attention : attention.slice(0, Math.max(0, room - 1));
    out.push(`Attention (${input.overview.attention.length})`, ...shown);
    if (shown.length < attention.length)
      out.push(`  + ${attention.length - shown.length} more: flotilla status ${input.status.id} --json`);
  }
  const ordered = tableOrder(input.status.tasks);
  // The table's header and its tasks, and, when some do not fit, a line counting those left out.
  const remaining = budget - out.length;
  const fits = ordered.length <= remaining - 1 ? ordered.length : Math.max(0, remaining - 2);
  if (fits > 0) out.push(...tableLines(ordered.slice(0, fits), input.now));
  if (fits < ordered.length && remaining >= 1) out.push(leftOut(ordered.slice(fits)));
  return out.slice(0, budget).map((line) => fitWidth(line, size.cols));
}
