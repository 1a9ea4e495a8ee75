import { describe, expect, it } from 'vitest';
import { escapeLabelValue, formatPrometheus, histogramSamples } from '../../src/board/metrics-format.js';
import { auditStats, buildMetricFamilies } from '../../src/board/metrics-model.js';
import type { MissionRow } from '../../src/board/read-missions.js';
import type { AuditEntry } from '../../src/shared/contracts.js';
import { auditEntry } from '../helpers/factories.js';

describe('formatPrometheus', () => {
  it('writes HELP, TYPE and samples in text format 0.0.4', () => {
    const text = formatPrometheus([
      {
        name: 'flotilla_queue_jobs',
        help: 'Jobs by state.\nSecond line \\ backslash',
        type: 'gauge',
        samples: [
          { labels: { queue: 'dispatch.testing', state: 'waiting' }, value: 3 },
          { labels: { queue: 'a"b\\c\nd', state: 'failed' }, value: 0 },
        ],
      },
      { name: 'flotilla_ratio', help: 'r', type: 'gauge', samples: [{ value: Number.NaN }] },
    ]);
    expect(text).toBe(
      [
        '# HELP flotilla_queue_jobs Jobs by state.\\nSecond line \\\\ backslash',
        '# TYPE flotilla_queue_jobs gauge',
        'flotilla_queue_jobs{queue="dispatch.testing",state="waiting"} 3',
        'flotilla_queue_jobs{queue="a\\"b\\\\c\\nd",state="failed"} 0',
        '# HELP flotilla_ratio r',
        '# TYPE flotilla_ratio gauge',
        'flotilla_ratio NaN',
        '',
      ].join('\n'),
    );
  });

  it('refuses names Prometheus would reject', () => {
    expect(() => formatPrometheus([{ name: 'bad-name', help: '', type: 'gauge', samples: [] }])).toThrow(
      /metric name/,
    );
    expect(() =>
      formatPrometheus([
        { name: 'ok', help: '', type: 'gauge', samples: [{ labels: { 'a-b': 'x' }, value: 1 }] },
      ]),
    ).toThrow(/label name/);
  });

  it('escapes label values', () => {
    expect(escapeLabelValue('a"b\\c\nd')).toBe('a\\"b\\\\c\\nd');
  });
});

describe('histogramSamples', () => {
  it('counts cumulatively, ends with +Inf, sum and count', () => {
    const samples = histogramSamples([5, 20, 20, 400], [10, 60, 300], { cli: 'sim' });
    expect(samples.map((s) => [s.suffix, s.labels?.le ?? '', s.value])).toEqual([
      ['_bucket', '10', 1],
      ['_bucket', '60', 3],
      ['_bucket', '300', 3],
      ['_bucket', '+Inf', 4],
      ['_sum', '', 445],
      ['_count', '', 4],
    ]);
  });
});

describe('buildMetricFamilies', () => {
  const at = '2024-01-01T00:00:00.000Z';
  const run = (taskId: string, attempt: number, exitCode: number, durationMs: number): AuditEntry =>
    auditEntry(
      {
        kind: 'run',
        cli: 'sim',
        cliName: 'Sim',
        exitCode,
        timedOut: false,
        durationMs,
        resultStatus: exitCode === 0 ? 'success' : 'failure',
        resultSource: 'file',
        warnings: [],
        rolledBack: [],
      },
      { at, taskId, attempt, cli: 'sim' },
    );
  const audit: AuditEntry[] = [
    run('a', 1, 1, 30_000),
    auditEntry(
      { kind: 'gate', action: 'retry', delayMs: 1_000, reason: 'criteria failed' },
      { at, taskId: 'a' },
    ),
    run('a', 2, 0, 90_000),
    auditEntry({ kind: 'gate', action: 'approve', score: 8 }, { at, taskId: 'a', attempt: 2 }),
    auditEntry({ kind: 'gate', action: 'fail', reason: 'out of attempts' }, { at, taskId: 'b' }),
    // A rate-limited reply is not a run: it adds no duration sample.
    auditEntry(
      { kind: 'rate-limited', cli: 'sim', reply: 'slow down', cooldownMs: 1_000 },
      { at, taskId: 'b' },
    ),
  ];
  const row: MissionRow = {
    id: 'm',
    goal: 'g',
    status: 'partial',
    createdAt: at,
    finishedAt: at,
    costUsd: 0.5,
    tasks: [
      { id: 'a', status: 'completed', cli: 'sim', costUsd: 0.25 },
      { id: 'b', status: 'failed', cli: 'claude-code', costUsd: 0.125 },
      { id: 'c', status: 'skipped', cli: null, costUsd: 0 },
    ],
  };
  const text = formatPrometheus(
    buildMetricFamilies({
      queues: [{ queue: 'verify', counts: { waiting: 2, active: 1 } }],
      missions: [{ row, stats: auditStats(audit) }],
      hosts: [],
      window: 50,
    }),
  );

  it.each([
    'flotilla_queue_jobs{queue="verify",state="waiting"} 2',
    'flotilla_missions{status="partial"} 1',
    'flotilla_missions{status="done"} 0',
    'flotilla_tasks{status="completed"} 1',
    'flotilla_tasks{status="skipped"} 1',
    'flotilla_tasks{status="running"} 0',
    'flotilla_gate_decisions_total{action="approve"} 1',
    'flotilla_gate_decisions_total{action="retry"} 1',
    'flotilla_gate_decisions_total{action="fail"} 1',
    'flotilla_gate_pass_ratio 0.3333333333333333',
    'flotilla_attempt_duration_seconds_bucket{cli="sim",le="60"} 1',
    'flotilla_attempt_duration_seconds_bucket{cli="sim",le="+Inf"} 2',
    'flotilla_attempt_duration_seconds_sum{cli="sim"} 120',
    'flotilla_cost_usd{cli="claude-code"} 0.125',
    'flotilla_cost_usd{cli="sim"} 0.25',
    'flotilla_missions_cost_usd 0.5',
    'flotilla_hosts 0',
  ])('%s', (line) => {
    expect(text.split('\n')).toContain(line);
  });
});
