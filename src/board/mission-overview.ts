import { TASK_STATUSES, type TaskStatus, TERMINAL_TASK_STATUSES } from '../shared/contracts.js';
import { formatDuration } from '../shared/duration.js';
import type { TaskSpec } from '../shared/mission.js';
import { routeTask } from '../shared/queue/route.js';
import { type HostInfo, routableHosts } from '../shared/store/registry.js';
import { criticalPath, longestChain } from './task-dag.js';

/**
 * What a person needs first about a mission of any size, computed from its spec, its task states
 * and the live hosts, with no IO: progress by status, cost, time and an estimate, hosts, and the
 * attention list (what failed, what waits for an answer, what nobody can serve, what is retrying).
 * The board's page and the terminal's live view both render this.
 */

/** The fields of a task's state the overview reads; both the stored state and the status JSON have them. */
export interface LiveTask {
  readonly status: TaskStatus;
  readonly attempts: number;
  readonly error?: string | null;
  readonly host?: string | null;
  readonly cli?: string | null;
  readonly startedAt?: string | null;
  readonly finishedAt?: string | null;
  readonly questions?: unknown;
  /** awaiting_approval: since when it waits for a person. */
  readonly heldAt?: string | null;
}

export type SpecTask = Pick<
  TaskSpec,
  'id' | 'title' | 'dependsOn' | 'capability' | 'cli' | 'division' | 'controlMode' | 'maxAttempts'
>;

export interface OverviewInput {
  readonly tasks: readonly SpecTask[];
  readonly states: Readonly<Record<string, LiveTask | undefined>>;
  readonly createdAt: string;
  readonly finishedAt: string | null;
  readonly costUsd: number;
  /** Live hosts, or null when they were not read (the list is then not checked for unservable tasks). */
  readonly hosts: readonly HostInfo[] | null;
  readonly now: number;
  /** The tasks in dependency order (task-dag.ts topologicalOrder), when the caller keeps it. */
  readonly order?: readonly string[];
}

export type AttentionKind = 'failed' | 'needs_input' | 'awaiting_approval' | 'unservable' | 'retrying';
/**
 * The order the attention list is read in: what is lost, what a person must answer, what is stuck,
 * what is trying again (waiting for its next attempt, or on an attempt after the first).
 */
export const ATTENTION_ORDER: readonly AttentionKind[] = [
  'failed',
  'needs_input',
  'awaiting_approval',
  'unservable',
  'retrying',
];

export interface AttentionItem {
  readonly kind: AttentionKind;
  readonly taskId: string;
  readonly title: string;
  /** The error, the question, the reason no host serves it, or the last attempt's error. */
  readonly detail: string;
  readonly attempts: number;
  readonly maxAttempts: number;
}

export interface HostsSummary {
  readonly total: number;
  readonly busy: number;
  readonly idle: number;
  readonly slots: number;
  readonly running: number;
}

export interface Estimate {
  readonly remainingMs: number;
  /** Tasks finished per hour so far. */
  readonly perHour: number;
  /** The longest chain of open tasks at the mean task duration: no number of hosts finishes sooner. */
  readonly chainMs: number;
}

export interface Overview {
  readonly total: number;
  readonly counts: Readonly<Record<TaskStatus, number>>;
  /** Tasks in a terminal status (completed, failed, skipped, cancelled). */
  readonly finished: number;
  readonly costUsd: number;
  readonly elapsedMs: number;
  /** Null until a task has completed, or once the mission has finished. */
  readonly estimate: Estimate | null;
  readonly hosts: HostsSummary | null;
  readonly attention: readonly AttentionItem[];
  /** Ids on the critical path, first task first. */
  readonly criticalPath: readonly string[];
}

const ACTIVE: readonly TaskStatus[] = ['running', 'verifying', 'reviewing'];

export function isTerminal(status: TaskStatus): boolean {
  return TERMINAL_TASK_STATUSES.includes(status);
}

function durationMs(state: LiveTask | undefined, now: number): number | null {
  const start = state?.startedAt ? Date.parse(state.startedAt) : Number.NaN;
  if (Number.isNaN(start)) return null;
  const end = state?.finishedAt ? Date.parse(state.finishedAt) : now;
  return Number.isNaN(end) || end < start ? null : end - start;
}

/** The first question's text, for the one line the attention list has. */
export function firstQuestion(questions: unknown): string {
  const first = Array.isArray(questions) ? questions[0] : questions;
  if (typeof first === 'string') return first;
  if (first && typeof first === 'object') {
    const record = first as Record<string, unknown>;
    for (const key of ['question', 'text', 'prompt']) {
      if (typeof record[key] === 'string') return record[key];
    }
  }
  return first === undefined || first === null ? 'the agent asked a question' : JSON.stringify(first);
}

export function summarizeHosts(hosts: readonly HostInfo[]): HostsSummary {
  const busy = hosts.filter((h) => h.running > 0).length;
  return {
    total: hosts.length,
    busy,
    idle: hosts.length - busy,
    slots: hosts.reduce((sum, h) => sum + h.slots, 0),
    running: hosts.reduce((sum, h) => sum + Math.min(h.running, h.slots), 0),
  };
}

/**
 * Why no live host can take this task now, or null when one can. Routing is the same pure
 * decision release-time routing makes; tasks asking the same thing share one answer.
 */
function unservableChecker(hosts: readonly HostInfo[], now: number): (task: SpecTask) => string | null {
  const routable = routableHosts(hosts, now);
  const memo = new Map<string, string | null>();
  return (task) => {
    const key = [task.capability, task.cli ?? '', task.division ?? '', task.controlMode].join('\u0000');
    const known = memo.get(key);
    if (known !== undefined) return known;
    const route = routeTask(task as TaskSpec, routable);
    const reason = route.how === 'waiting' ? route.reason : null;
    memo.set(key, reason);
    return reason;
  };
}

function attentionOf(input: OverviewInput): AttentionItem[] {
  const unservable = input.hosts ? unservableChecker(input.hosts, input.now) : () => null;
  const items: AttentionItem[] = [];
  for (const task of input.tasks) {
    const state = input.states[task.id];
    if (!state) continue;
    const base = {
      taskId: task.id,
      title: task.title,
      attempts: state.attempts,
      maxAttempts: task.maxAttempts,
    };
    if (state.status === 'failed') {
      items.push({ ...base, kind: 'failed', detail: state.error ?? 'failed' });
    } else if (state.status === 'needs_input') {
      items.push({ ...base, kind: 'needs_input', detail: firstQuestion(state.questions) });
    } else if (state.status === 'awaiting_approval') {
      const since = state.heldAt ? Date.parse(state.heldAt) : Number.NaN;
      const waited = Number.isFinite(since) ? ` for ${formatDuration(Math.max(0, input.now - since))}` : '';
      items.push({
        ...base,
        kind: 'awaiting_approval',
        detail: `passed its gates; waiting${waited} for a person`,
      });
    } else if (state.status === 'queued' || state.status === 'retrying') {
      const reason = unservable(task);
      if (reason) items.push({ ...base, kind: 'unservable', detail: reason });
      else if (state.status === 'retrying')
        items.push({ ...base, kind: 'retrying', detail: state.error ?? 'retrying' });
      else if (state.attempts > 1) items.push({ ...base, kind: 'retrying', detail: 'queued again' });
    } else if (ACTIVE.includes(state.status) && state.attempts > 1) {
      // A retry under way: the attempt's error was cleared when it started.
      items.push({ ...base, kind: 'retrying', detail: `${state.status.replace('_', ' ')} again` });
    }
  }
  // Stable: kinds in reading order, tasks in file order within a kind.
  return ATTENTION_ORDER.flatMap((kind) => items.filter((item) => item.kind === kind));
}

/**
 * The estimate from completed tasks: the rate they finished at so far applied to the tasks still
 * open, but never less than the longest chain of open tasks at the mean task duration (a chain
 * cannot run in parallel with itself, however many hosts there are).
 */
export function estimateRemaining(input: {
  readonly tasks: readonly SpecTask[];
  readonly states: Readonly<Record<string, LiveTask | undefined>>;
  readonly elapsedMs: number;
  readonly now: number;
  readonly order?: readonly string[];
  /** Each task's duration so far (durationsOf), when the caller has it. */
  readonly durations?: ReadonlyMap<string, number | null>;
}): Estimate | null {
  const durations = input.durations ?? durationsOf(input.tasks, input.states, input.now);
  let sum = 0;
  let timed = 0;
  let open = 0;
  let completed = 0;
  for (const task of input.tasks) {
    const status = input.states[task.id]?.status ?? 'pending';
    if (!isTerminal(status)) open++;
    if (status === 'completed') {
      completed++;
      const ms = durations.get(task.id);
      if (ms !== null && ms !== undefined) {
        sum += ms;
        timed++;
      }
    }
  }
  if (completed === 0 || open === 0 || input.elapsedMs <= 0) return null;
  const mean = timed ? sum / timed : 0;
  const perMs = completed / input.elapsedMs;
  const chainMs = longestChain(
    input.tasks,
    (id) => {
      const status = input.states[id]?.status ?? 'pending';
      if (isTerminal(status)) return 0;
      if (ACTIVE.includes(status)) return Math.max(0, mean - (durations.get(id) ?? 0));
      return mean;
    },
    input.order,
  );
  return {
    remainingMs: Math.round(Math.max(open / perMs, chainMs)),
    perHour: perMs * 3_600_000,
    chainMs: Math.round(chainMs),
  };
}

/** How long each task ran (or has run so far); null for a task that never started. */
export function durationsOf(
  tasks: readonly SpecTask[],
  states: Readonly<Record<string, LiveTask | undefined>>,
  now: number,
): Map<string, number | null> {
  return new Map(tasks.map((t) => [t.id, durationMs(states[t.id], now)]));
}

export function buildOverview(input: OverviewInput): Overview {
  const counts = Object.fromEntries(TASK_STATUSES.map((s) => [s, 0])) as Record<TaskStatus, number>;
  for (const task of input.tasks) counts[input.states[task.id]?.status ?? 'pending']++;
  const finished = TASK_STATUSES.filter(isTerminal).reduce((sum, s) => sum + counts[s], 0);
  const created = Date.parse(input.createdAt);
  const end = input.finishedAt ? Date.parse(input.finishedAt) : input.now;
  const elapsedMs = Number.isNaN(created) || Number.isNaN(end) ? 0 : Math.max(0, end - created);
  const durations = durationsOf(input.tasks, input.states, input.now);
  // The critical path: finished tasks weigh what they took, the rest what a task takes on average.
  let sum = 0;
  let timed = 0;
  for (const ms of durations.values()) {
    if (ms !== null) {
      sum += ms;
      timed++;
    }
  }
  const mean = timed ? sum / timed : 1;
  const path = criticalPath(
    input.tasks,
    (id) => {
      const status = input.states[id]?.status ?? 'pending';
      if (status === 'skipped' || status === 'cancelled') return 0;
      const ms = durations.get(id) ?? null;
      return ms === null ? mean : Math.max(ms, ACTIVE.includes(status) ? mean : 0);
    },
    input.order,
  );
  return {
    total: input.tasks.length,
    counts,
    finished,
    costUsd: input.costUsd,
    elapsedMs,
    estimate: input.finishedAt ? null : estimateRemaining({ ...input, elapsedMs, durations }),
    hosts: input.hosts ? summarizeHosts(input.hosts) : null,
    attention: attentionOf(input),
    criticalPath: path,
  };
}
