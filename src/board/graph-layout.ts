/**
 * Layered layout of the task DAG, computed on the server so the page needs no graph library:
 * a task's column is its depth (the longest chain of dependencies before it), and inside a column
 * tasks are ordered by the mean row of their dependencies, which keeps most arrows short and
 * uncrossed for the small graphs missions have.
 */
export interface GraphTask {
  readonly id: string;
  readonly dependsOn: readonly string[];
}

export interface LayoutNode {
  readonly id: string;
  readonly layer: number;
  readonly row: number;
  readonly x: number;
  readonly y: number;
}

export interface LayoutEdge {
  readonly from: string;
  readonly to: string;
}

export interface GraphLayout {
  readonly nodes: readonly LayoutNode[];
  readonly edges: readonly LayoutEdge[];
  readonly width: number;
  readonly height: number;
  readonly nodeWidth: number;
  readonly nodeHeight: number;
}

export interface LayoutOptions {
  readonly nodeWidth: number;
  readonly nodeHeight: number;
  readonly gapX: number;
  readonly gapY: number;
  readonly padding: number;
}

export const DEFAULT_LAYOUT: LayoutOptions = {
  nodeWidth: 230,
  nodeHeight: 58,
  gapX: 64,
  gapY: 22,
  padding: 16,
};

/** Depth of every task; a dependency on an unknown task is ignored and a cycle is cut, not looped. */
export function taskDepths(tasks: readonly GraphTask[]): Map<string, number> {
  const byId = new Map(tasks.map((t) => [t.id, t]));
  const depths = new Map<string, number>();
  const visiting = new Set<string>();
  const depthOf = (id: string): number => {
    const known = depths.get(id);
    if (known !== undefined) return known;
    if (visiting.has(id)) return -1;
    visiting.add(id);
    let depth = 0;
    for (const dep of byId.get(id)?.dependsOn ?? []) {
      if (byId.has(dep)) depth = Math.max(depth, depthOf(dep) + 1);
    }
    visiting.delete(id);
    depths.set(id, depth);
    return depth;
  };
  for (const task of tasks) depthOf(task.id);
  return depths;
}

export function layoutGraph(
  tasks: readonly GraphTask[],
  options: LayoutOptions = DEFAULT_LAYOUT,
): GraphLayout {
  const { nodeWidth, nodeHeight, gapX, gapY, padding } = options;
  const depths = taskDepths(tasks);
  const layerCount = tasks.length === 0 ? 0 : Math.max(...depths.values()) + 1;
  const layers: GraphTask[][] = Array.from({ length: layerCount }, () => []);
  for (const task of tasks) layers[depths.get(task.id) ?? 0]?.push(task);

  const rowOf = new Map<string, number>();
  for (const layer of layers) {
    // Sort by the dependencies' mean row; the original (file) order breaks ties, so the layout
    // is stable from one page load to the next.
    const keyed = layer.map((task, index) => {
      const rows = task.dependsOn.map((d) => rowOf.get(d)).filter((r): r is number => r !== undefined);
      const mean = rows.length ? rows.reduce((a, b) => a + b, 0) / rows.length : index;
      return { task, mean, index };
    });
    keyed.sort((a, b) => a.mean - b.mean || a.index - b.index);
    keyed.forEach(({ task }, row) => {
      rowOf.set(task.id, row);
    });
  }

  const maxRows = Math.max(0, ...layers.map((l) => l.length));
  const nodes: LayoutNode[] = [];
  layers.forEach((layer, layerIndex) => {
    // Short columns are centred against the tallest one.
    const offset = ((maxRows - layer.length) * (nodeHeight + gapY)) / 2;
    for (const task of layer) {
      const row = rowOf.get(task.id) ?? 0;
      nodes.push({
        id: task.id,
        layer: layerIndex,
        row,
        x: padding + layerIndex * (nodeWidth + gapX),
        y: padding + offset + row * (nodeHeight + gapY),
      });
    }
  });
  nodes.sort((a, b) => a.layer - b.layer || a.row - b.row);

  const ids = new Set(tasks.map((t) => t.id));
  const edges: LayoutEdge[] = [];
  for (const task of tasks) {
    for (const dep of new Set(task.dependsOn)) if (ids.has(dep)) edges.push({ from: dep, to: task.id });
  }

  return {
    nodes,
    edges,
    width: layerCount === 0 ? 0 : padding * 2 + layerCount * nodeWidth + (layerCount - 1) * gapX,
    height: maxRows === 0 ? 0 : padding * 2 + maxRows * nodeHeight + (maxRows - 1) * gapY,
    nodeWidth,
    nodeHeight,
  };
}
