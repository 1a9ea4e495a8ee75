import type { AuditEntry, MissionStatusJson } from '../shared/contracts.js';
import { TASK_STATUSES } from '../shared/contracts.js';
import type { MissionSpec, TaskSpec } from '../shared/mission.js';
import { type AttemptView, attemptJobLinks, attemptsByTask } from './audit-view.js';
import { renderGraphSvg } from './graph-svg.js';
import { html, type SafeHtml } from './html.js';
import { formatCost, formatTime, statusBadge } from './page.js';

export interface MissionPageInput {
  readonly status: MissionStatusJson;
  readonly spec: MissionSpec;
  readonly summary: string | null;
  readonly audit: readonly AuditEntry[];
  /** Where Bull Board is mounted, for links to an attempt's jobs. */
  readonly queuesBase: string;
}

type TaskRow = MissionStatusJson['tasks'][number];

function duration(start: string | null | undefined, end: string | null | undefined): string {
  const a = start ? Date.parse(start) : Number.NaN;
  const b = end ? Date.parse(end) : Date.now();
  if (Number.isNaN(a) || Number.isNaN(b) || b < a) return '—';
  const s = Math.round((b - a) / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  return m < 60 ? `${m}m ${s % 60}s` : `${Math.floor(m / 60)}h ${m % 60}m`;
}

function taskAnchor(id: string): string {
  return `task-${id}`;
}

function renderCriteria(attempt: AttemptView): SafeHtml | string {
  if (attempt.criteria.length === 0)
    return attempt.verifyMessage ? html`<div class="muted">${attempt.verifyMessage}</div>` : '';
  const items = attempt.criteria.map(
    (c) =>
      html`<li class="criterion" data-passed="${String(c.passed)}">${c.passed ? html`<span class="ok" title="passed">✓</span>` : html`<span class="bad" title="failed">✗</span>`} <code>${c.command}</code>${c.passed ? '' : html` <span class="muted">exit ${c.exit}${c.timedOut ? ' (timed out)' : ''}</span>`}${c.tail && !c.passed ? html`<details><summary>output</summary><pre>${c.tail}</pre></details>` : ''}</li>`,
  );
  return html`<div><strong>Exit criteria</strong><ul class="criteria">${items}</ul></div>`;
}

function renderCritic(attempt: AttemptView): SafeHtml | string {
  const critic = attempt.critic;
  if (!critic) return '';
  if (critic.score === null)
    return html`<div><strong>Critic</strong> <span class="muted">${critic.message}</span></div>`;
  const issues = critic.issues.length
    ? html`<ul class="issues">${critic.issues.map((issue) => html`<li>${issue}</li>`)}</ul>`
    : '';
  return html`<div><strong>Critic</strong>${critic.cli ? html` <span class="muted">(${critic.cli})</span>` : ''}: <span class="score ${critic.verdict === 'approve' ? 'ok' : 'bad'}">score ${critic.score}/10</span>, ${critic.verdict}${issues}</div>`;
}

function renderAttempt(
  attempt: AttemptView,
  task: TaskSpec,
  missionId: string,
  queuesBase: string,
): SafeHtml {
  const links = attemptJobLinks(queuesBase, {
    missionId,
    taskId: task.id,
    attempt: attempt.attempt,
    runQueue: attempt.queue,
    capability: task.capability,
  });
  const facts = [
    attempt.host ? `host ${attempt.host}` : '',
    attempt.cli ? `CLI ${attempt.cli}` : '',
    attempt.durationSec !== undefined ? `ran ${attempt.durationSec}s` : '',
    attempt.queue ? `queue ${attempt.queue}` : '',
  ].filter(Boolean);
  return html`<div class="attempt ${attempt.gate?.action ?? ''}" data-attempt="${attempt.attempt}">
<h4>Attempt ${attempt.attempt}${attempt.gate ? html` — gate: ${attempt.gate.message}` : ''}</h4>
${facts.length ? html`<div class="muted">${facts.join(' · ')}</div>` : ''}
${renderCriteria(attempt)}
${renderCritic(attempt)}
<div class="jobs">Jobs in Bull Board: ${links.map((l) => html`<a href="${l.href}" title="${l.queue} / ${l.jobId}">${l.stage}</a>`)}</div>
<details><summary>audit trail (${attempt.timeline.length})</summary><ul class="timeline">${attempt.timeline.map(
    (e) => html`<li>${formatTime(e.at)} · ${e.stage}${e.host ? ` · ${e.host}` : ''}: ${e.message}</li>`,
  )}</ul></details>
</div>`;
}

function renderTask(
  task: TaskSpec,
  row: TaskRow | undefined,
  attempts: readonly AttemptView[],
  input: MissionPageInput,
): SafeHtml {
  const status = row?.status ?? 'pending';
  return html`<section class="card task" id="${taskAnchor(task.id)}" data-task="${task.id}">
<h3 class="task-title">${task.title} <span class="muted">(${task.id})</span> ${statusBadge(status)}</h3>
<div class="facts">
<div><span>attempts</span>${row?.attempts ?? 0} of ${task.maxAttempts}</div>
<div><span>capability</span>${task.capability}</div>
${task.dependsOn.length ? html`<div><span>depends on</span>${task.dependsOn.map((d, i) => html`${i ? ', ' : ''}<a href="#${taskAnchor(d)}">${d}</a>`)}</div>` : ''}
${row?.host ? html`<div><span>host</span>${row.host}</div>` : ''}
${row?.cli ? html`<div><span>CLI</span>${row.cli}</div>` : ''}
${row?.score !== null && row?.score !== undefined ? html`<div><span>score</span><span class="score">${row.score}</span></div>` : ''}
${row?.costUsd ? html`<div><span>cost</span>${formatCost(row.costUsd)}</div>` : ''}
</div>
${row?.route ? html`<div class="muted">route: ${row.route}</div>` : ''}
${row?.error ? html`<div class="error">error: ${row.error}</div>` : ''}
${task.description ? html`<details><summary>description</summary><pre>${task.description}</pre></details>` : ''}
${attempts.length ? attempts.map((a) => renderAttempt(a, task, input.status.id, input.queuesBase)) : html`<div class="muted">No attempt has run yet.</div>`}
</section>`;
}

function renderTaskTable(tasks: readonly TaskRow[]): SafeHtml {
  const rows = tasks.map(
    (t) => html`<tr data-task="${t.id}">
<td><a href="#${taskAnchor(t.id)}">${t.title ?? t.id}</a><div class="muted">${t.id}</div></td>
<td>${statusBadge(t.status)}</td>
<td class="num">${t.attempts}</td>
<td>${t.host ?? '—'}</td>
<td>${t.cli ?? '—'}</td>
<td class="num">${t.score ?? '—'}</td>
<td class="num">${formatCost(t.costUsd)}</td>
<td class="error">${t.error ?? ''}</td>
</tr>`,
  );
  return html`<table class="tasks"><thead><tr><th>Task</th><th>Status</th><th class="num">Attempts</th><th>Host</th><th>CLI</th><th class="num">Score</th><th class="num">Cost</th><th>Error</th></tr></thead><tbody>${rows}</tbody></table>`;
}

export function renderMissionPage(input: MissionPageInput): SafeHtml {
  const { status, spec } = input;
  const rows = new Map(status.tasks.map((t) => [t.id, t]));
  const attempts = attemptsByTask(input.audit);
  const graph = renderGraphSvg(
    spec.tasks.map((task) => {
      const row = rows.get(task.id);
      return {
        id: task.id,
        dependsOn: task.dependsOn,
        title: task.title,
        status: row?.status ?? 'pending',
        score: row?.score ?? null,
        attempts: row?.attempts ?? 0,
      };
    }),
  );
  const done = status.tasks.filter((t) => t.status === 'completed').length;
  const used = new Set(status.tasks.map((t) => t.status));
  return html`<h1 class="goal">${status.goal}</h1>
<div class="facts">
<div>${statusBadge(status.status)}</div>
<div><span>mission</span><code>${status.id}</code></div>
<div><span>tasks done</span>${done}/${status.tasks.length}</div>
<div><span>branch</span><code>${status.branch}</code></div>
<div><span>created</span>${formatTime(status.createdAt)}</div>
<div><span>${status.finishedAt ? 'finished' : 'running for'}</span>${status.finishedAt ? html`${formatTime(status.finishedAt)} (${duration(status.createdAt, status.finishedAt)})` : duration(status.createdAt, null)}</div>
<div><span>cost</span>${formatCost(status.costUsd)}</div>
<div><a href="/missions/${encodeURIComponent(status.id)}.json">status JSON</a></div>
</div>
${input.summary ? html`<h2>Summary</h2><pre class="summary">${input.summary}</pre>` : ''}
<h2>Task graph</h2>
<div class="legend">${TASK_STATUSES.filter((s) => used.has(s)).map((s) => statusBadge(s))}</div>
<div class="graph-box">${graph}</div>
<h2>Tasks</h2>
${renderTaskTable(status.tasks)}
<h2>Attempts</h2>
${spec.tasks.map((task) => renderTask(task, rows.get(task.id), attempts.get(task.id) ?? [], input))}`;
}
