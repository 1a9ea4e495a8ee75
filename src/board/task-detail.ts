import type { AuditEntry } from '../shared/contracts.js';
import { attemptsByTask } from './audit-view.js';
import { renderGraphSvg } from './graph-svg.js';
import { html, type SafeHtml } from './html.js';
import { renderTask } from './mission-page.js';
import type { LiveMission } from './read-mission-view.js';
import { neighbourhood } from './task-dag.js';

/** Levels the detail offers; past three, a busy task's neighbourhood is mostly cut by the limit anyway. */
export const NEIGHBOURHOOD_LEVELS = [1, 2, 3] as const;
/** Tasks drawn at most around one task: beyond that the drawing is no longer readable. */
export const NEIGHBOURHOOD_LIMIT = 120;

const detailHref = (id: string) => `#task=${encodeURIComponent(id)}`;

export function clampLevels(raw: unknown): number {
  const n = Number(raw);
  return NEIGHBOURHOOD_LEVELS.find((level) => level === n) ?? 2;
}

/**
 * A task's detail, fetched when it is chosen: its facts and attempts (read from its own audit
 * entries) and the graph of its dependencies and dependents, `levels` steps each way. The SVG is
 * drawn at its natural size inside a box that scales it down to fit; a button shows it actual size.
 */
export function renderTaskDetail(input: {
  readonly live: LiveMission;
  readonly taskId: string;
  readonly audit: readonly AuditEntry[];
  readonly levels: number;
  readonly queuesBase: string;
  /** The board takes a person's verdict on a held task. */
  readonly verdicts?: boolean;
}): SafeHtml | null {
  const { live, taskId } = input;
  const task = live.shape.byId.get(taskId);
  if (!task) return null;
  const state = live.states[taskId];
  const near = neighbourhood(live.shape.tasks, taskId, input.levels, NEIGHBOURHOOD_LIMIT);
  const critical = new Set(live.overview.criticalPath);
  const nodes = live.shape.tasks
    .filter((t) => near.ids.has(t.id))
    .map((t) => {
      const s = live.states[t.id];
      return {
        id: t.id,
        // Edges only inside the drawing: a dependency beyond it is counted in the note instead.
        dependsOn: t.dependsOn.filter((d) => near.ids.has(d)),
        title: t.title,
        status: s?.status ?? 'pending',
        score: s?.score ?? null,
        attempts: s?.attempts ?? 0,
      };
    });
  const svg = renderGraphSvg(nodes, {
    href: detailHref,
    selected: taskId,
    critical,
  });
  const dependents = live.shape.tasks.filter((t) => t.dependsOn.includes(taskId)).length;
  const levelButtons = NEIGHBOURHOOD_LEVELS.map(
    (level) =>
      html`<button type="button" class="levels${level === input.levels ? ' on' : ''}" data-levels="${level}">${level}</button>`,
  );
  const attempts = attemptsByTask(input.audit).get(taskId) ?? [];
  return html`<div class="detail-head"><h2>${task.id}</h2><span class="muted">${task.dependsOn.length} dependencies · ${dependents} dependents${critical.has(taskId) ? ' · on the critical path' : ''}</span><button type="button" class="close" aria-label="close">close ✕</button></div>
<div class="nbhd" data-task="${taskId}" data-levels="${input.levels}" data-nodes="${near.ids.size}">
<div class="nbhd-bar"><span>Neighbourhood: ${near.ids.size} tasks, levels</span> ${levelButtons} <button type="button" class="zoom">actual size</button>${near.truncated ? html` <span class="muted">cut at ${NEIGHBOURHOOD_LIMIT} tasks</span>` : ''}</div>
<div class="nbhd-box graph-box">${svg}</div>
</div>
${state?.status === 'running' ? html`<div class="live-box"><h3>Live output <span class="muted">attempt ${state.attempts}, as its CLI prints it (the last 64 KB here; <code>flotilla logs ${live.shape.id} ${taskId} --follow</code> for all of it)</span></h3><pre class="live-tail" data-attempt="${state.attempts}"></pre></div>` : ''}
${renderTask(task, state, attempts, live.shape.id, input.queuesBase, detailHref, input.verdicts)}`;
}
