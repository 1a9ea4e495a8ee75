import type { MissionEvent, MissionStatusJson } from '../shared/contracts.js';
import { formatDuration } from '../shared/duration.js';

const STATUS_ICON: Record<string, string> = {
  pending: '·',
  queued: '…',
  running: '▶',
  verifying: '🔍',
  reviewing: '🧐',
  retrying: '↻',
  needs_input: '?',
  completed: '✅',
  failed: '❌',
  skipped: '⏭️',
  cancelled: '🛑',
};

/** One plain line per event, for CI logs and pipes. */
export function formatEventLine(event: MissionEvent): string {
  const time = event.at.slice(11, 19);
  const who = event.taskId ? `${event.taskId}${event.attempt ? ` a${event.attempt}` : ''}` : 'mission';
  const first = event.message.split('\n')[0] ?? '';
  return `${time} ${who.padEnd(18)} ${(event.status ?? event.type).padEnd(10)} ${first}`;
}

/** The live table on a terminal: task, status, attempt, host, CLI, elapsed, score. */
export function renderTable(status: MissionStatusJson, now = Date.now()): string[] {
  const rows = status.tasks.map((t) => {
    const started = t.startedAt ? Date.parse(t.startedAt) : null;
    const ended = t.finishedAt ? Date.parse(t.finishedAt) : now;
    return [
      t.id,
      `${STATUS_ICON[t.status] ?? ''} ${t.status}`,
      t.attempts ? String(t.attempts) : '',
      t.host ?? '',
      t.cli ?? '',
      started ? formatDuration(Math.max(0, ended - started)) : '',
      t.score === null ? '' : String(t.score),
    ];
  });
  const header = ['task', 'status', 'try', 'host', 'cli', 'elapsed', 'score'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  // A finished mission shows how long it took, not how long ago it started.
  const end = status.finishedAt ? Date.parse(status.finishedAt) : now;
  const elapsed = formatDuration(end - Date.parse(status.createdAt));
  return [
    `${status.id} — ${status.status} — ${elapsed}${status.costUsd ? ` — $${status.costUsd.toFixed(4)}` : ''}`,
    line(header),
    ...rows.map(line),
  ];
}

/** Redraws the table in place on a TTY. */
export class LiveTable {
  private drawn = 0;

  constructor(private readonly write: (text: string) => void) {}

  draw(lines: readonly string[]): void {
    const up = this.drawn > 0 ? `\x1b[${this.drawn}A` : '';
    this.write(`${up}${lines.map((l) => `\x1b[2K${l}`).join('\n')}\n`);
    this.drawn = lines.length;
  }
}
