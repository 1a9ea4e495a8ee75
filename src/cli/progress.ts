import type { MissionStatusJson } from '../shared/contracts.js';
import { formatDuration } from '../shared/duration.js';

const STATUS_ICON: Record<string, string> = {
  pending: '·',
  queued: '…',
  running: '▶',
  verifying: '🔍',
  reviewing: '🧐',
  retrying: '↻',
  needs_input: '?',
  awaiting_approval: '✋',
  completed: '✅',
  failed: '❌',
  skipped: '⏭️',
  cancelled: '🛑',
};

/** Every task, one row each (`flotilla status <id>`): task, status, attempt, host, CLI, elapsed, score. */
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

/**
 * Redraws a frame in place on a TTY: back to the frame's first line, each line cleared and
 * rewritten, then everything below cleared (a shorter frame leaves nothing behind). Frames must
 * fit the terminal (screen-layout.ts), or the lines that scrolled away cannot be reached again.
 */
export class LiveTable {
  private drawn = 0;

  constructor(private readonly write: (text: string) => void) {}

  draw(lines: readonly string[]): void {
    const up = this.drawn > 0 ? `\x1b[${this.drawn}A\r` : '';
    this.write(`${up}${lines.map((l) => `\x1b[2K${l}`).join('\n')}\n\x1b[J`);
    this.drawn = lines.length;
  }
}
