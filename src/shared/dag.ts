import type { TaskStatus } from './contracts.js';
import { FlotillaError } from './errors.js';

/**
 * The task graph of a mission as pure functions. An edge points from a task to a task it depends
 * on. Dependencies naming no task in the list are ignored here: the mission rules report them, and
 * these functions must not throw on the half-valid graphs the rules inspect. Every walk is
 * iterative, so a chain of thousands of tasks cannot overflow the stack.
 */
export interface DagTask {
  readonly id: string;
  readonly dependsOn: readonly string[];
}

/** For each task, the tasks that list it in `dependsOn`, in file order. */
export function dependentsOf(tasks: readonly DagTask[]): Map<string, string[]> {
  const dependents = new Map<string, string[]>();
  for (const task of tasks) dependents.set(task.id, []);
  for (const task of tasks) {
    for (const dep of new Set(task.dependsOn)) dependents.get(dep)?.push(task.id);
  }
  return dependents;
}

/** One dependency cycle as a closed path `[a, b, c, a]` (a depends on b, b on c, c on a), or null. */
export function findCycle(tasks: readonly DagTask[]): string[] | null {
  return findCycles(tasks)[0] ?? null;
}

/**
 * One cycle per knot of mutually dependent tasks (strongly connected component), so a user sees
 * each knot once rather than every one of its many cycles. Each path starts at the knot's earliest
 * task in file order and is a shortest way back to it; a self-dependency is `[a, a]`.
 */
export function findCycles(tasks: readonly DagTask[]): string[][] {
  const graph = buildGraph(tasks);
  const cycles: string[][] = [];
  for (const component of stronglyConnected(graph)) {
    const start = component[0];
    if (start === undefined) continue;
    const selfLoop = graph.deps.get(start)?.includes(start) ?? false;
    if (component.length === 1 && !selfLoop) continue;
    cycles.push(shortestCycle(graph, start, new Set(component)));
  }
  return cycles;
}

/** Pending tasks (or tasks with no state yet) whose dependencies have all completed. */
export function readyTasks(
  tasks: readonly DagTask[],
  states: Readonly<Record<string, TaskStatus | undefined>>,
): string[] {
  return tasks
    .filter((task) => (states[task.id] ?? 'pending') === 'pending')
    .filter((task) => task.dependsOn.every((dep) => states[dep] === 'completed'))
    .map((task) => task.id);
}

/** Every task that depends on `id` directly or through others, in file order, without `id` itself. */
export function transitiveDependents(tasks: readonly DagTask[], id: string): string[] {
  const dependents = dependentsOf(tasks);
  const reached = new Set<string>();
  const queue = [id];
  for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
    for (const dependent of dependents.get(next) ?? []) {
      if (reached.has(dependent)) continue;
      reached.add(dependent);
      queue.push(dependent);
    }
  }
  return tasks.map((task) => task.id).filter((taskId) => taskId !== id && reached.has(taskId));
}

/**
 * Task ids with every task after its dependencies. Ties keep file order (a task moves forward only
 * as far as its dependencies require), so the same file always gives the same order.
 * Throws `mission/invalid` on a cycle: callers hold a validated mission, so a cycle is a bug upstream.
 */
export function topologicalOrder(tasks: readonly DagTask[]): string[] {
  const graph = buildGraph(tasks);
  const order: string[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  for (const root of graph.ids) {
    if (state.has(root)) continue;
    const stack: Array<{ id: string; next: number }> = [{ id: root, next: 0 }];
    state.set(root, 'visiting');
    while (stack.length > 0) {
      const frame = stack[stack.length - 1]!;
      const deps = graph.deps.get(frame.id) ?? [];
      const dep = deps[frame.next];
      frame.next += 1;
      if (dep === undefined) {
        stack.pop();
        state.set(frame.id, 'done');
        order.push(frame.id);
      } else if (state.get(dep) === 'visiting') {
        const cycle = findCycle(tasks) ?? [dep, dep];
        throw new FlotillaError('mission/invalid', `dependency cycle: ${formatCycle(cycle)}`);
      } else if (!state.has(dep)) {
        state.set(dep, 'visiting');
        stack.push({ id: dep, next: 0 });
      }
    }
  }
  return order;
}

/** The longest sum of `durationOf` along any dependency chain; with `() => 1`, the longest chain's length. */
export function longestPath<T extends DagTask>(tasks: readonly T[], durationOf: (task: T) => number): number {
  const byId = new Map(tasks.map((task) => [task.id, task] as const));
  const finish = new Map<string, number>();
  let longest = 0;
  for (const id of topologicalOrder(tasks)) {
    const task = byId.get(id)!;
    const start = task.dependsOn.reduce((latest, dep) => Math.max(latest, finish.get(dep) ?? 0), 0);
    const end = start + durationOf(task);
    finish.set(id, end);
    longest = Math.max(longest, end);
  }
  return longest;
}

export function formatCycle(cycle: readonly string[]): string {
  return cycle.join(' → ');
}

interface Graph {
  /** Ids in file order, each once. */
  readonly ids: readonly string[];
  /** Known dependencies only, each once, in the order the task lists them. */
  readonly deps: ReadonlyMap<string, readonly string[]>;
}

function buildGraph(tasks: readonly DagTask[]): Graph {
  const known = new Set(tasks.map((task) => task.id));
  const deps = new Map<string, string[]>();
  for (const task of tasks) {
    // A repeated id merges its dependencies rather than hiding the first task's edges.
    const list = deps.get(task.id) ?? [];
    for (const dep of task.dependsOn) if (known.has(dep) && !list.includes(dep)) list.push(dep);
    deps.set(task.id, list);
  }
  return { ids: [...deps.keys()], deps };
}

/** Tarjan's algorithm, iterative; components come back with their members in file order. */
function stronglyConnected(graph: Graph): string[][] {
  const position = new Map(graph.ids.map((id, i) => [id, i] as const));
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const components: string[][] = [];
  let counter = 0;

  for (const root of graph.ids) {
    if (index.has(root)) continue;
    const work: Array<{ id: string; next: number }> = [{ id: root, next: 0 }];
    index.set(root, counter);
    low.set(root, counter);
    counter += 1;
    stack.push(root);
    onStack.add(root);
    while (work.length > 0) {
      const frame = work[work.length - 1]!;
      const dep = (graph.deps.get(frame.id) ?? [])[frame.next];
      frame.next += 1;
      if (dep !== undefined) {
        if (!index.has(dep)) {
          index.set(dep, counter);
          low.set(dep, counter);
          counter += 1;
          stack.push(dep);
          onStack.add(dep);
          work.push({ id: dep, next: 0 });
        } else if (onStack.has(dep)) {
          low.set(frame.id, Math.min(low.get(frame.id)!, index.get(dep)!));
        }
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.id, Math.min(low.get(parent.id)!, low.get(frame.id)!));
      if (low.get(frame.id) !== index.get(frame.id)) continue;
      const component: string[] = [];
      for (let member = stack.pop(); member !== undefined; member = stack.pop()) {
        onStack.delete(member);
        component.push(member);
        if (member === frame.id) break;
      }
      components.push(component.sort((a, b) => position.get(a)! - position.get(b)!));
    }
  }
  return components.sort((a, b) => position.get(a[0]!)! - position.get(b[0]!)!);
}

/** Breadth-first from `start` inside its component, so the reported path is a shortest way round. */
function shortestCycle(graph: Graph, start: string, component: ReadonlySet<string>): string[] {
  const cameFrom = new Map<string, string>();
  const queue = [start];
  for (let node = queue.shift(); node !== undefined; node = queue.shift()) {
    for (const dep of graph.deps.get(node) ?? []) {
      if (!component.has(dep)) continue;
      if (dep === start) {
        const path = [start];
        for (
          let step: string | undefined = node;
          step !== start && step !== undefined;
          step = cameFrom.get(step)
        ) {
          path.push(step);
        }
        return [start, ...path.slice(1).reverse(), start];
      }
      if (!cameFrom.has(dep)) {
        cameFrom.set(dep, node);
        queue.push(dep);
      }
    }
  }
  return [start, start];
}
