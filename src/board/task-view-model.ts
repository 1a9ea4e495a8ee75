import { TASK_STATUSES, type TaskStatus } from '../shared/contracts.js';
import type { LiveMission } from './read-mission-view.js';
import { type StatusStyle, statusStyle } from './status-style.js';

/**
 * The compact task view's data, as the page's script reads it: column arrays rather than one
 * object per task, and one character per task status, so 10,000 tasks cost a few hundred
 * kilobytes. Everything else about a task (attempts, audit, neighbourhood) is fetched on a click.
 */
export interface TaskViewModel {
  readonly mission: string;
  /** Status names; a task's status is the character `a` + its index here. */
  readonly statuses: readonly TaskStatus[];
  readonly styles: Readonly<Record<string, StatusStyle>>;
  readonly ids: readonly string[];
  readonly titles: readonly string[];
  readonly caps: readonly string[];
  /** Index into `caps`, per task. */
  readonly cap: readonly number[];
  readonly depth: readonly number[];
  /** Status codes, one character per task, in file order. */
  readonly s: string;
  /** Indices of the critical path's tasks. */
  readonly cp: readonly number[];
  readonly event: string;
  readonly running: boolean;
}

/** Titles are for recognising a task in the grid's tooltip and the list; the detail has the whole. */
const TITLE_CHARS = 80;
const CODE_BASE = 'a'.charCodeAt(0);

export function statusCodes(live: Pick<LiveMission, 'shape' | 'states'>): string {
  let out = '';
  for (const task of live.shape.tasks) {
    const index = TASK_STATUSES.indexOf(live.states[task.id]?.status ?? 'pending');
    out += String.fromCharCode(CODE_BASE + Math.max(0, index));
  }
  return out;
}

export function criticalIndices(live: Pick<LiveMission, 'shape' | 'overview'>): number[] {
  const index = new Map(live.shape.tasks.map((t, i) => [t.id, i]));
  return live.overview.criticalPath.map((id) => index.get(id)).filter((i): i is number => i !== undefined);
}

export function taskViewModel(live: LiveMission): TaskViewModel {
  const caps: string[] = [];
  const capIndex = new Map<string, number>();
  const cap = live.shape.tasks.map((t) => {
    let i = capIndex.get(t.capability);
    if (i === undefined) {
      i = caps.push(t.capability) - 1;
      capIndex.set(t.capability, i);
    }
    return i;
  });
  return {
    mission: live.shape.id,
    statuses: TASK_STATUSES,
    styles: Object.fromEntries(TASK_STATUSES.map((s) => [s, statusStyle(s)])),
    ids: live.shape.tasks.map((t) => t.id),
    titles: live.shape.tasks.map((t) =>
      t.title.length > TITLE_CHARS ? `${t.title.slice(0, TITLE_CHARS - 1)}…` : t.title,
    ),
    caps,
    cap,
    depth: live.shape.tasks.map((t) => live.shape.depths.get(t.id) ?? 0),
    s: statusCodes(live),
    cp: criticalIndices(live),
    event: live.eventId,
    running: live.status === 'running',
  };
}

/**
 * JSON inside `<script type="application/json">`: `<` is escaped so no title can close the
 * element, and U+2028/2029 so the text stays valid wherever it is pasted.
 */
export function embedJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}
