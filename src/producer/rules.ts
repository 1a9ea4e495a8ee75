import { findCycles, formatCycle } from '../shared/dag.js';
import { splitCapabilities } from '../shared/queue/match.js';
import { closestKey, isRecord, quote } from '../shared/validation/schema-problems.js';
import type { PathSegment } from '../shared/validation/yaml-lines.js';

/**
 * Rules across tasks, which no schema of a single task can check. They read the parsed YAML as it
 * is, not the schema's output, so they still run when some task has a schema problem and the user
 * sees every problem at once. Pure: the loader adds the file and the line.
 */
export interface RuleProblem {
  /** The path shown to the user. */
  readonly path: PathSegment[];
  /** A more precise node for the line number (the offending list item), when there is one. */
  readonly at?: PathSegment[];
  readonly message: string;
}

/** What the rules need of one task, taken leniently from whatever the file holds. */
export interface RuleTask {
  /** Position in `tasks`, for paths. */
  readonly index: number;
  readonly id?: string;
  readonly dependsOn: readonly { readonly id: string; readonly index: number }[];
  readonly capability?: string;
  readonly taskType?: string;
}

export type MissionRule = (tasks: readonly RuleTask[]) => RuleProblem[];

export function checkMissionRules(raw: unknown): RuleProblem[] {
  const tasks = collectRuleTasks(raw);
  return MISSION_RULES.flatMap((rule) => rule(tasks));
}

export function collectRuleTasks(raw: unknown): RuleTask[] {
  if (!isRecord(raw) || !Array.isArray(raw.tasks)) return [];
  const tasks: RuleTask[] = [];
  raw.tasks.forEach((task: unknown, index: number) => {
    if (!isRecord(task)) return;
    const deps: unknown = task.depends_on;
    tasks.push({
      index,
      id: typeof task.id === 'string' ? task.id : undefined,
      dependsOn: Array.isArray(deps)
        ? deps.flatMap((dep: unknown, depIndex: number) =>
            typeof dep === 'string' ? [{ id: dep, index: depIndex }] : [],
          )
        : [],
      capability: typeof task.capability === 'string' ? task.capability : undefined,
      taskType: typeof task.task_type === 'string' ? task.task_type : undefined,
    });
  });
  return tasks;
}

export const uniqueIds: MissionRule = (tasks) => {
  const first = new Map<string, number>();
  const problems: RuleProblem[] = [];
  for (const task of tasks) {
    if (task.id === undefined) continue;
    const earlier = first.get(task.id);
    if (earlier === undefined) first.set(task.id, task.index);
    else problems.push({ path: ['tasks', task.index, 'id'], message: duplicateMessage(task.id, earlier) });
  }
  return problems;
};

export const knownDependencies: MissionRule = (tasks) => {
  const ids = idsOf(tasks);
  const problems: RuleProblem[] = [];
  for (const task of tasks) {
    for (const dep of task.dependsOn) {
      if (ids.has(dep.id)) continue;
      const known = listIds(ids, task.id);
      problems.push({
        path: ['tasks', task.index, 'depends_on'],
        at: ['tasks', task.index, 'depends_on', dep.index],
        message: `unknown task ${quote(dep.id)} (${known})`,
      });
    }
  }
  return problems;
};

export const noSelfDependency: MissionRule = (tasks) =>
  tasks.flatMap((task) =>
    task.dependsOn
      .filter((dep) => dep.id === task.id)
      .map((dep) => ({
        path: ['tasks', task.index, 'depends_on'],
        at: ['tasks', task.index, 'depends_on', dep.index],
        message: `task ${quote(dep.id)} depends on itself`,
      })),
  );

/** Self-dependencies have their own rule; every other knot is reported once, at its first task. */
export const noCycles: MissionRule = (tasks) => {
  const graph = tasks.flatMap((task) =>
    task.id === undefined
      ? []
      : [{ id: task.id, dependsOn: task.dependsOn.map((dep) => dep.id).filter((id) => id !== task.id) }],
  );
  return findCycles(graph).map((cycle) => {
    const [start, next] = cycle;
    // With a repeated id the edge may belong to the second task of that name; point at the one that has it.
    const owner =
      tasks.find((task) => task.id === start && task.dependsOn.some((dep) => dep.id === next)) ??
      tasks.find((task) => task.id === start);
    const edge = owner?.dependsOn.find((dep) => dep.id === next);
    const path: PathSegment[] = ['tasks', owner?.index ?? 0, 'depends_on'];
    return {
      path,
      at: edge ? [...path, edge.index] : undefined,
      message: `dependency cycle: ${formatCycle(cycle)} (each task depends on the next)`,
    };
  });
};

/** `task_type` is cli-dispatch's name for `capability`; two different values leave routing ambiguous. */
export const oneCapability: MissionRule = (tasks) =>
  tasks.flatMap((task) =>
    task.capability !== undefined && task.taskType !== undefined && task.capability !== task.taskType
      ? [
          {
            path: ['tasks', task.index, 'task_type'],
            message: `task_type ${quote(task.taskType)} differs from capability ${quote(task.capability)} (task_type is another name for capability; give one)`,
          },
        ]
      : [],
  );

export const MISSION_RULES: readonly MissionRule[] = [
  uniqueIds,
  knownDependencies,
  noSelfDependency,
  noCycles,
  oneCapability,
];

/**
 * Warnings, not errors: a capability outside the vocabulary and outside every loaded adapter's own
 * terms is most likely a typo, and a mission that names it would wait for a host that never comes.
 * It stays valid because a host elsewhere may run an adapter with that term.
 */
export function capabilityWarnings(tasks: readonly RuleTask[], known: readonly string[]): RuleProblem[] {
  const terms = new Set(known);
  return tasks.flatMap((task) => {
    const field = task.capability !== undefined ? 'capability' : 'task_type';
    const value = task.capability ?? task.taskType;
    if (value === undefined) return [];
    return splitCapabilities(value)
      .filter((term) => !terms.has(term))
      .map((term) => {
        const guess = closestKey(term, known);
        const hint = guess ? ` — did you mean ${quote(guess)}?` : '';
        return {
          path: ['tasks', task.index, field],
          message: `unknown capability ${quote(term)}${hint} (in neither the vocabulary nor a loaded adapter, so no host may ever serve it)`,
        };
      });
  });
}

function idsOf(tasks: readonly RuleTask[]): Set<string> {
  return new Set(tasks.flatMap((task) => (task.id === undefined ? [] : [task.id])));
}

/**
 * A long mission would make every message a wall of ids; the first few are enough to spot a typo.
 * The asking task is left out (depending on itself is an error of its own) unless it is the only
 * task with an id: then it is named, because "none" reads as if the file had no tasks at all.
 */
function listIds(ids: ReadonlySet<string>, asking: string | undefined): string {
  const limit = 20;
  const shown: string[] = [];
  for (const id of ids) {
    if (id === asking) continue;
    if (shown.length === limit) break;
    shown.push(id);
  }
  const total = ids.size - (asking !== undefined && ids.has(asking) ? 1 : 0);
  if (total === 0)
    return asking !== undefined && ids.has(asking) ? `known: ${asking}, this task` : 'no task has an id';
  return `known: ${total > limit ? `${shown.join(', ')}, … ${total - limit} more` : shown.join(', ')}`;
}

function duplicateMessage(id: string, firstIndex: number): string {
  return `duplicate task id ${quote(id)} (first used by tasks[${firstIndex}])`;
}
