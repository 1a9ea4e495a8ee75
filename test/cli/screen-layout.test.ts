import { describe, expect, it } from 'vitest';
import { bigMissionSpec, seedHosts } from '../../bench/lib/seed-mission.js';
import { buildOverview } from '../../src/board/mission-overview.js';
import { fitWidth, layoutScreen } from '../../src/cli/screen-layout.js';
import type { MissionStatusJson, TaskStatus } from '../../src/shared/contracts.js';

const NOW = Date.parse('2025-06-01T12:00:00.000Z');
const iso = (minutesAgo: number) => new Date(NOW - minutesAgo * 60_000).toISOString();

/** A 300-task mission mid-run: statuses by position, so every kind of row is there. */
function statusOf(i: number): TaskStatus {
  // The seeded spec's unservable roots (a capability and a CLI no host has) wait in the queue.
  if (i >= 14 && i <= 16) return 'queued';
  if (i < 120) return 'completed';
  if (i < 123) return 'failed';
  if (i === 123) return 'needs_input';
  if (i < 127) return 'running';
  if (i === 127) return 'verifying';
  if (i === 128) return 'retrying';
  if (i < 135) return 'queued';
  return 'pending';
}

function mission(n: number) {
  const spec = bigMissionSpec(n);
  const status: MissionStatusJson = {
    id: 'm-300',
    goal: spec.goal,
    status: 'running',
    createdAt: iso(90),
    finishedAt: null,
    branch: 'flotilla/m-300',
    costUsd: 12.5,
    tasks: spec.tasks.map((t, i) => {
      const s = statusOf(i);
      const finished = ['completed', 'failed'].includes(s);
      return {
        id: t.id,
        title: t.title,
        status: s,
        attempts: s === 'pending' ? 0 : s === 'failed' ? 3 : 1,
        cli: s === 'pending' || s === 'queued' ? null : 'codex',
        host: s === 'pending' || s === 'queued' ? null : 'host-a',
        score: s === 'completed' ? 8 : null,
        error: s === 'failed' ? `out of attempts: exit criteria failed (${t.id})` : null,
        startedAt: s === 'pending' || s === 'queued' ? null : iso(80 - i / 10),
        finishedAt: finished ? iso(70 - i / 10) : null,
        ...(s === 'needs_input' ? { questions: [{ question: 'Which storage backend?' }] } : {}),
      };
    }),
  };
  const overview = buildOverview({
    tasks: spec.tasks,
    states: Object.fromEntries(status.tasks.map((t) => [t.id, t])),
    createdAt: status.createdAt,
    finishedAt: null,
    costUsd: 12.5,
    hosts: seedHosts(NOW),
    now: NOW,
  });
  return { status, overview };
}

const M300 = mission(300);

describe('layoutScreen', () => {
  it.each([
    [120, 40],
    [80, 24],
    [200, 60],
    [60, 12],
    [120, 5],
    [40, 3],
    [20, 1],
  ])('%i × %i: fits, never wraps, and starts with the header', (cols, rows) => {
    const lines = layoutScreen({ ...M300, now: NOW }, { rows, cols });
    expect(lines.length).toBeLessThanOrEqual(Math.max(1, rows - 1));
    for (const line of lines) expect([...line].length).toBeLessThanOrEqual(cols - 1);
    expect(lines[0]).toMatch(/^m-300/);
  });

  it('120 × 40 at 300 tasks: header, counts, attention list, running tasks first, the rest counted', () => {
    const lines = layoutScreen({ ...M300, now: NOW }, { rows: 40, cols: 120 });
    expect(lines).toHaveLength(39);
    expect(lines[0]).toMatch(/^m-300 — running — 1h 30m — \$12\.50 — about (\d+h )?\d+m( \d+s)? left$/);
    expect(lines[1]).toMatch(/^\[█+░+\] 120\/300 finished \(40%\) · hosts 3 busy, 1 idle · 9\/16 slots$/);
    expect(lines[2]).toBe(
      'running 3 · verifying 1 · retrying 1 · needs input 1 · queued 9 · failed 3 · completed 117 · pending 165',
    );
    expect(lines[3]).toBe('Attention (8)');
    expect(lines.slice(4, 11).map((l) => l.trim().slice(0, 14))).toEqual([
      'failed    t120',
      'failed    t121',
      'failed    t122',
      'question  t123',
      'no host   1 ta',
      'no host   2 ta',
      'retrying  t128',
    ]);
    // Unservable tasks share one line per reason.
    expect(lines[8]?.trim()).toBe(
      "no host   1 task (t014): pinned CLI 'aider' is on no live host (live CLIs: claude-code, codex)",
    );
    expect(lines[9]?.trim()).toBe(
      'no host   2 tasks (t015, t016): no live host serves data_migration and none serves dispatch.internal',
    );
    expect(lines[4]).toContain('t120  out of attempts: exit criteria failed (t120) (attempt 3/3)');
    expect(lines[7]).toContain('t123  Which storage backend? → flotilla answer m-300 t123 "…"');
    const more = 10;
    const table = lines.findIndex((l) => l.startsWith('task  '));
    expect(table).toBe(more + 1);
    expect(lines.slice(table + 1, table + 5).map((l) => l.split(/\s+/)[1])).toEqual([
      'running',
      'running',
      'running',
      'verifying',
    ]);
    const footer = lines.at(-1) ?? '';
    expect(footer).toMatch(/^\+ /);
    const leftOut = [...footer.matchAll(/(\d+) [a-z ]+?(?= ·|$)/g)].reduce((sum, m) => sum + Number(m[1]), 0);
    const shown = lines.length - 1 - (table + 1);
    expect(shown + leftOut).toBe(300);
    expect(footer).toContain('165 pending');
  });

  it('cuts the attention list to its share of a short screen and says how many are left', () => {
    const lines = layoutScreen({ ...M300, now: NOW }, { rows: 20, cols: 120 });
    expect(lines[3]).toBe('Attention (8)');
    // 35% of 19 lines, less the title: 5 lines, the last saying what did not fit.
    expect(lines.slice(4, 9).map((l) => l.trim().slice(0, 14))).toEqual([
      'failed    t120',
      'failed    t121',
      'failed    t122',
      'question  t123',
      '+ 3 more: flot',
    ]);
    expect(lines[9]?.startsWith('task  ')).toBe(true);
    expect(lines[10]).toMatch(/^t124\s+running/);
  });

  it('shows every task and no count line when all fit', () => {
    const small = mission(12);
    const lines = layoutScreen({ ...small, now: NOW }, { rows: 60, cols: 120 });
    const table = lines.findIndex((l) => l.startsWith('task  '));
    expect(lines.length - table - 1).toBe(12);
    expect(lines.some((l) => l.startsWith('+ '))).toBe(false);
  });
});

describe('fitWidth', () => {
  it.each([
    ['short', 10, 'short'],
    ['exactly nine', 10, 'exactly …'],
    ['✗ wide-ish', 5, '✗ w…'],
    ['', 1, ''],
  ])('%j in %i columns', (line, cols, expected) => {
    expect(fitWidth(line, cols)).toBe(expected);
  });
});
