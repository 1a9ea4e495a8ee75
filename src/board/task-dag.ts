/**
 * Graph facts the mission view needs at any size: each task's depth, the critical path and a
 * task's neighbourhood. All iterative (no recursion), so a 10,000-task chain cannot overflow the
 * stack, and linear in tasks plus dependencies. A dependency on an unknown task is ignored; tasks
 * on a cycle (validation refuses those, but state may be hand-edited) are left out of the order.
 */
export interface DagTask {
  readonly id: string;
  readonly dependsOn: readonly string[];
}

/**
 * Task ids in an order where every task comes after its dependencies (Kahn's algorithm). The
 * functions below take it as an argument too, so a reader that keeps it (the graph never changes)
 * does not sort 10,000 tasks on every read.
 */
export function topologicalOrder(tasks: readonly DagTask[]): string[] {
  const ids = new Set(tasks.map((t) => t.id));
  const waiting = new Map<string, number>();
  const dependents = new Map<string, string[]>();
  for (const task of tasks) {
    const deps = new Set(task.dependsOn.filter((d) => ids.has(d)));
    waiting.set(task.id, deps.size);
    for (const dep of deps) {
      const list = dependents.get(dep);
      if (list) list.push(task.id);
      else dependents.set(dep, [task.id]);
    }
  }
  const order = tasks.filter((t) => waiting.get(t.id) === 0).map((t) => t.id);
  for (let i = 0; i < order.length; i++) {
    for (const next of dependents.get(order[i] ?? '') ?? []) {
      const left = (waiting.get(next) ?? 0) - 1;
      waiting.set(next, left);
      if (left === 0) order.push(next);
    }
  }
  return order;
}

/** Depth: the number of tasks on the longest chain of dependencies before a task (roots are 0). */
export function depthsOf(tasks: readonly DagTask[]): Map<string, number> {
  const byId = new Map(tasks.map((t) => [t.id, t]));
  const depths = new Map<string, number>();
  for (const id of topologicalOrder(tasks)) {
    let depth = 0;
    for (const dep of byId.get(id)?.dependsOn ?? []) {
      const d = depths.get(dep);
      if (d !== undefined) depth = Math.max(depth, d + 1);
    }
    depths.set(id, depth);
  }
  return depths;
}

/**
 * The chain of tasks with the largest total weight, first task first: with each task weighted by
 * how long it took (or is expected to take), the chain that bounds how soon the mission can end.
 * Ties go to the task listed first, so the answer is stable from one read to the next.
 */
export function criticalPath(
  tasks: readonly DagTask[],
  weight: (id: string) => number,
  order: readonly string[] = topologicalOrder(tasks),
): string[] {
  const byId = new Map(tasks.map((t) => [t.id, t]));
  const best = new Map<string, { total: number; via: string | null }>();
  let end: string | null = null;
  let endTotal = -1;
  for (const id of order) {
    let via: string | null = null;
    let before = 0;
    for (const dep of byId.get(id)?.dependsOn ?? []) {
      const b = best.get(dep);
      if (b && b.total > before) {
        before = b.total;
        via = dep;
      }
    }
    const total = before + Math.max(0, weight(id));
    best.set(id, { total, via });
    if (total > endTotal) {
      endTotal = total;
      end = id;
    }
  }
  const path: string[] = [];
  for (let at = end; at !== null; at = best.get(at)?.via ?? null) path.push(at);
  return path.reverse();
}

/** The total weight of the heaviest chain: how long the rest takes with unlimited hosts. */
export function longestChain(
  tasks: readonly DagTask[],
  weight: (id: string) => number,
  order: readonly string[] = topologicalOrder(tasks),
): number {
  const path = criticalPath(tasks, weight, order);
  return path.reduce((sum, id) => sum + Math.max(0, weight(id)), 0);
}

export interface Neighbourhood {
  /** The chosen task, its dependencies up to `levels` steps back and dependents `levels` ahead. */
  readonly ids: ReadonlySet<string>;
  /** True when `limit` stopped the walk before every level was taken in full. */
  readonly truncated: boolean;
}

/**
 * What a person looks at around one task of a large mission. The walk goes one level at a time
 * in both directions and stops before a level that would pass `limit` tasks, so the drawing stays
 * readable even around a task that 2,000 others depend on.
 */
export function neighbourhood(
  tasks: readonly DagTask[],
  id: string,
  levels: number,
  limit = 150,
): Neighbourhood {
  const byId = new Map(tasks.map((t) => [t.id, t]));
  if (!byId.has(id)) return { ids: new Set(), truncated: false };
  const dependents = new Map<string, string[]>();
  for (const task of tasks) {
    for (const dep of task.dependsOn) {
      const list = dependents.get(dep);
      if (list) list.push(task.id);
      else dependents.set(dep, [task.id]);
    }
  }
  const ids = new Set([id]);
  let up = [id];
  let down = [id];
  let truncated = false;
  for (let level = 0; level < levels && (up.length > 0 || down.length > 0); level++) {
    const nextUp = [
      ...new Set(up.flatMap((t) => byId.get(t)?.dependsOn ?? []).filter((t) => byId.has(t) && !ids.has(t))),
    ];
    const nextDown = [...new Set(down.flatMap((t) => dependents.get(t) ?? []).filter((t) => !ids.has(t)))];
    if (ids.size + nextUp.length + nextDown.length > limit) {
      // Take what fits, dependencies first: what a task waits for is the first question asked.
      const room = Math.max(0, limit - ids.size);
      for (const t of [...nextUp, ...nextDown].slice(0, room)) ids.add(t);
      truncated = true;
      break;
    }
    for (const t of nextUp) ids.add(t);
    for (const t of nextDown) ids.add(t);
    up = nextUp;
    down = nextDown;
  }
  return { ids, truncated };
}
