import { transitiveDependents } from '../shared/dag.js';
import type { TaskSpec } from '../shared/mission.js';

/** A planned mission stays small enough to read and review. */
export const MIN_PLAN_TASKS = 2;
export const MAX_PLAN_TASKS = 8;

export interface PlanProblem {
  readonly path: string;
  readonly message: string;
}

/**
 * The decomposition rules a valid mission file may still break: a hand-written mission can have
 * one task or twenty, a planned one must stay small and end in a verification task. Runs on a
 * mission that already passed validation, so ids are unique and the graph has no cycle.
 */
export function checkPlanRules(tasks: readonly PlanTask[]): PlanProblem[] {
  const problems: PlanProblem[] = [];
  if (tasks.length < MIN_PLAN_TASKS || tasks.length > MAX_PLAN_TASKS) {
    problems.push({
      path: 'tasks',
      message: `expected ${MIN_PLAN_TASKS} to ${MAX_PLAN_TASKS} tasks, got ${tasks.length}`,
    });
  }
  const verification = missingVerification(tasks);
  if (verification) problems.push({ path: 'tasks', message: verification });
  return problems;
}

type PlanTask = Pick<TaskSpec, 'id' | 'kind' | 'dependsOn'>;

/**
 * Null when a task that is not itself coding depends, directly or through others, on every coding
 * task. A verification task of kind coding would be reviewed by a critic as if it wrote code, and
 * could not depend on itself, so "depends on all coding tasks" rules it out.
 */
function missingVerification(tasks: readonly PlanTask[]): string | null {
  const coding = tasks.filter((task) => task.kind === 'coding').map((task) => task.id);
  if (coding.length === 0) return null;
  const graph = tasks.map((task) => ({ id: task.id, dependsOn: task.dependsOn }));
  const dependents = new Map(coding.map((id) => [id, new Set(transitiveDependents(graph, id))]));
  let closest: { id: string; missing: string[] } | undefined;
  for (const candidate of tasks) {
    if (candidate.kind === 'coding') continue;
    const missing = coding.filter((id) => !dependents.get(id)?.has(candidate.id));
    if (missing.length === 0) return null;
    if (!closest || missing.length < closest.missing.length) closest = { id: candidate.id, missing };
  }
  const hint = closest
    ? `; the closest, '${closest.id}', does not depend on ${closest.missing.join(', ')}`
    : '; every task is of kind coding';
  return `expected a final verification task (kind review) that depends on every coding task (${coding.join(', ')})${hint}`;
}
