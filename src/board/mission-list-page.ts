import { html, type SafeHtml } from './html.js';
import { formatCost, formatTime, statusBadge } from './page.js';
import type { MissionRow } from './read-missions.js';

export function missionHref(id: string): string {
  return `/missions/${encodeURIComponent(id)}`;
}

function progress(row: MissionRow): SafeHtml {
  const done = row.tasks.filter((t) => t.status === 'completed').length;
  const failed = row.tasks.filter((t) => t.status === 'failed').length;
  const skipped = row.tasks.filter((t) => t.status === 'skipped').length;
  const extra = [failed ? `${failed} failed` : '', skipped ? `${skipped} skipped` : '']
    .filter(Boolean)
    .join(', ');
  return html`${done}/${row.tasks.length}${extra ? html` <span class="muted">(${extra})</span>` : ''}`;
}

export function renderMissionList(rows: readonly MissionRow[], limit: number): SafeHtml {
  if (rows.length === 0) {
    return html`<h1>Missions</h1><div class="card">No missions yet. Submit one with <code>flotilla submit mission.yaml</code>.</div>`;
  }
  const body = rows.map(
    (row) => html`<tr data-mission="${row.id}">
<td><a href="${missionHref(row.id)}">${row.id}</a></td>
<td>${row.goal}</td>
<td>${statusBadge(row.status)}</td>
<td class="num">${progress(row)}</td>
<td>${formatTime(row.createdAt)}</td>
<td class="num">${formatCost(row.costUsd)}</td>
</tr>`,
  );
  return html`<h1>Missions</h1>
<p class="muted">The ${limit} newest missions, newest first.</p>
<table class="missions"><thead><tr><th>Mission</th><th>Goal</th><th>Status</th><th class="num">Tasks done</th><th>Created</th><th class="num">Cost</th></tr></thead>
<tbody>${body}</tbody></table>`;
}
