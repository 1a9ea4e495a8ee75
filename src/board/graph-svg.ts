import { type GraphLayout, type GraphTask, type LayoutNode, layoutGraph } from './graph-layout.js';
import { html, type SafeHtml } from './html.js';
import { statusStyle } from './status-style.js';

export interface GraphNodeInfo extends GraphTask {
  readonly title: string;
  readonly status: string;
  readonly score: number | null;
  readonly attempts: number;
}

/** Titles longer than a node is wide are cut; the full text stays in the node's tooltip. */
export function truncate(text: string, max: number): string {
  const chars = [...text];
  return chars.length <= max ? text : `${chars.slice(0, max - 1).join('')}…`;
}

function edgePath(from: LayoutNode, to: LayoutNode, layout: GraphLayout): string {
  const x1 = from.x + layout.nodeWidth;
  const y1 = from.y + layout.nodeHeight / 2;
  const x2 = to.x - 2;
  const y2 = to.y + layout.nodeHeight / 2;
  const bend = Math.max(24, (x2 - x1) / 2);
  return `M ${x1} ${y1} C ${x1 + bend} ${y1}, ${x2 - bend} ${y2}, ${x2} ${y2}`;
}

function detailLine(task: GraphNodeInfo): string {
  const parts = [task.status.replace('_', ' ')];
  if (task.score !== null) parts.push(`score ${task.score}`);
  if (task.attempts > 1) parts.push(`${task.attempts} attempts`);
  return parts.join(' · ');
}

/**
 * The task graph as inline SVG: one `<a>` per task linking to its section of the page, one path
 * per dependency with an arrow head. `data-*` attributes name what each shape stands for, so
 * tests (and scripts scraping the page) need not guess from geometry.
 */
export interface GraphSvgOptions {
  /** Where a node links to; by default its task's section of the page. */
  readonly href?: (id: string) => string;
  /** The task a neighbourhood is drawn around, outlined. */
  readonly selected?: string;
  /** Tasks on the critical path, drawn with a heavier border. */
  readonly critical?: ReadonlySet<string>;
}

export function renderGraphSvg(tasks: readonly GraphNodeInfo[], options: GraphSvgOptions = {}): SafeHtml {
  const href = options.href ?? ((id: string) => `#task-${id}`);
  const layout = layoutGraph(tasks);
  const byId = new Map(tasks.map((t) => [t.id, t]));
  const nodeById = new Map(layout.nodes.map((n) => [n.id, n]));
  const edges = layout.edges.map((edge) => {
    const from = nodeById.get(edge.from);
    const to = nodeById.get(edge.to);
    if (!from || !to) return '';
    const blocked = byId.get(edge.to)?.status === 'skipped';
    return html`<path class="edge${blocked ? ' blocked' : ''}" data-from="${edge.from}" data-to="${edge.to}" d="${edgePath(from, to, layout)}" marker-end="url(#arrow)"/>`;
  });
  // Rough glyph widths of the node fonts; enough to keep text inside its box.
  const titleChars = Math.floor((layout.nodeWidth - 20) / 7.8);
  const idChars = Math.floor((layout.nodeWidth - 20) / 6.7);
  const nodes = layout.nodes.map((node) => {
    const task = byId.get(node.id);
    if (!task) return '';
    const style = statusStyle(task.status);
    const critical = options.critical?.has(task.id) === true;
    const selected = options.selected === task.id;
    const classes = `node${critical ? ' critical' : ''}${selected ? ' selected' : ''}`;
    return html`<a class="${classes}" href="${href(task.id)}" data-task="${task.id}" data-status="${task.status}">
<title>${task.id}: ${task.title} (${task.status})${critical ? ' · on the critical path' : ''}</title>
<rect x="${node.x}" y="${node.y}" width="${layout.nodeWidth}" height="${layout.nodeHeight}" rx="8" fill="${style.fill}" stroke="${style.stroke}" stroke-width="${selected ? 4 : critical ? 3 : 2}"/>
<text x="${node.x + 10}" y="${node.y + 20}" class="node-title">${truncate(task.title, titleChars)}</text>
<text x="${node.x + 10}" y="${node.y + 37}" class="node-id">${truncate(task.id, idChars)}</text>
<text x="${node.x + 10}" y="${node.y + 51}" class="node-detail" fill="${style.text}">${detailLine(task)}</text>
</a>`;
  });
  return html`<svg class="graph" xmlns="http://www.w3.org/2000/svg" role="img" aria-label="Task graph: ${tasks.length} tasks, ${layout.edges.length} dependencies" width="${layout.width}" height="${layout.height}" viewBox="0 0 ${layout.width} ${layout.height}">
<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#78909c"/></marker></defs>
<g class="edges">${edges}</g>
<g class="nodes">${nodes}</g>
</svg>`;
}
