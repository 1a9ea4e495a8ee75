import { GATE_ACTIONS, type GateAction } from '../shared/audit.js';
import { type AuditEntry, MISSION_STATUSES, TASK_STATUSES } from '../shared/contracts.js';
import type { HostInfo } from '../shared/store/registry.js';
import { histogramSamples, type MetricFamily, type MetricSample } from './metrics-format.js';
import type { MissionRow } from './read-missions.js';

/** What one mission's audit trail contributes; cached for finished missions, whose audit no longer grows. */
export interface AuditStats {
  readonly gate: Readonly<Record<GateAction, number>>;
  readonly runs: readonly { readonly cli: string; readonly seconds: number }[];
}

/** Seconds; agent runs take from seconds to the better part of an hour. */
export const DURATION_BUCKETS = [10, 30, 60, 120, 300, 600, 1200, 1800, 3600] as const;

export function auditStats(audit: readonly AuditEntry[]): AuditStats {
  const gate: Record<GateAction, number> = {
    approve: 0,
    retry: 0,
    fail: 0,
    pause: 0,
    hold: 0,
    skip: 0,
    cancel: 0,
  };
  const runs: { cli: string; seconds: number }[] = [];
  for (const { event } of audit) {
    if (event?.kind === 'gate') gate[event.action]++;
    else if (event?.kind === 'run') runs.push({ cli: event.cli, seconds: event.durationMs / 1000 });
  }
  return { gate, runs };
}

/** Sums of float dollars pick up noise in the last digits (0.42 + 0.2); a micro-dollar is plenty. */
function roundUsd(value: number): number {
  return Math.round(value * 1e6) / 1e6;
}

export interface MetricsInput {
  readonly queues: readonly { readonly queue: string; readonly counts: Readonly<Record<string, number>> }[];
  readonly missions: readonly { readonly row: MissionRow; readonly stats: AuditStats }[];
  readonly hosts: readonly HostInfo[];
  /** How many of the newest missions the mission-derived families cover. */
  readonly window: number;
}

function countBy<T>(
  items: readonly T[],
  key: (item: T) => string,
  keys: readonly string[],
): Map<string, number> {
  const counts = new Map(keys.map((k) => [k, 0]));
  for (const item of items) counts.set(key(item), (counts.get(key(item)) ?? 0) + 1);
  return counts;
}

function gauges(counts: Map<string, number>, label: string): MetricSample[] {
  return [...counts].map(([value, n]) => ({ labels: { [label]: value }, value: n }));
}

export function buildMetricFamilies(input: MetricsInput): MetricFamily[] {
  const window = `over the ${input.window} newest missions`;
  const tasks = input.missions.flatMap((m) => m.row.tasks);
  const gate = new Map(GATE_ACTIONS.map((a) => [a, 0]));
  for (const { stats } of input.missions)
    for (const a of GATE_ACTIONS) gate.set(a, (gate.get(a) ?? 0) + stats.gate[a]);
  const decisions = [...gate.values()].reduce((a, b) => a + b, 0);
  const costByCli = new Map<string, number>();
  for (const task of tasks) {
    if (task.costUsd > 0)
      costByCli.set(task.cli ?? 'unknown', (costByCli.get(task.cli ?? 'unknown') ?? 0) + task.costUsd);
  }
  const runsByCli = new Map<string, number[]>();
  for (const { stats } of input.missions) {
    for (const run of stats.runs) runsByCli.set(run.cli, [...(runsByCli.get(run.cli) ?? []), run.seconds]);
  }
  return [
    {
      name: 'flotilla_queue_jobs',
      help: 'Jobs in each flotilla queue by BullMQ state.',
      type: 'gauge',
      samples: input.queues.flatMap(({ queue, counts }) =>
        Object.entries(counts).map(([state, value]) => ({ labels: { queue, state }, value })),
      ),
    },
    {
      name: 'flotilla_missions',
      help: `Missions by status, ${window}.`,
      type: 'gauge',
      samples: gauges(
        countBy(input.missions, (m) => m.row.status, MISSION_STATUSES),
        'status',
      ),
    },
    {
      name: 'flotilla_tasks',
      help: `Tasks by status, ${window}.`,
      type: 'gauge',
      samples: gauges(
        countBy(tasks, (t) => t.status, TASK_STATUSES),
        'status',
      ),
    },
    {
      // A gauge despite the _total name: it covers a window of missions, so it can go down.
      name: 'flotilla_gate_decisions_total',
      help: `Gate decisions by action (approve, retry, fail, pause, cancel), ${window}.`,
      type: 'gauge',
      samples: gauges(gate, 'action'),
    },
    {
      name: 'flotilla_gate_pass_ratio',
      help: `Share of gate decisions that approved the attempt, ${window} (NaN before any decision).`,
      type: 'gauge',
      samples: [{ value: decisions ? (gate.get('approve') ?? 0) / decisions : Number.NaN }],
    },
    {
      name: 'flotilla_attempt_duration_seconds',
      help: `Duration of agent CLI runs by CLI, from the audit trail, ${window}.`,
      type: 'histogram',
      samples: [...runsByCli]
        .sort(([a], [b]) => a.localeCompare(b))
        .flatMap(([cli, values]) => histogramSamples(values, DURATION_BUCKETS, { cli })),
    },
    {
      name: 'flotilla_cost_usd',
      help: `Reported agent cost in US dollars by the CLI that last ran each task, ${window}.`,
      type: 'gauge',
      samples: [...costByCli]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([cli, value]) => ({ labels: { cli }, value })),
    },
    {
      name: 'flotilla_missions_cost_usd',
      help: `Total cost in US dollars (builders and critics), ${window}.`,
      type: 'gauge',
      samples: [{ value: roundUsd(input.missions.reduce((sum, m) => sum + m.row.costUsd, 0)) }],
    },
    {
      name: 'flotilla_hosts',
      help: 'Live worker hosts (heartbeat not expired).',
      type: 'gauge',
      samples: [{ value: input.hosts.length }],
    },
    {
      name: 'flotilla_host_slots',
      help: 'Slots of each live host, by use (busy or total).',
      type: 'gauge',
      samples: input.hosts.flatMap((h) => [
        { labels: { host: h.hostId, use: 'busy' }, value: h.running },
        { labels: { host: h.hostId, use: 'total' }, value: h.slots },
      ]),
    },
  ];
}
