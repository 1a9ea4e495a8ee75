import type { AuditEntry, MissionStatusJson } from '../shared/contracts.js';
import { TASK_STATUSES } from '../shared/contracts.js';
import type { MissionSpec, TaskSpec } from '../shared/mission.js';
import { type AttemptView, attemptJobLinks, attemptsByTask } from './audit-view.js';
import { renderGraphSvg } from './graph-svg.js';
import { html, type SafeHtml, trusted } from './html.js';
import { renderOverview } from './overview-view.js';
import { formatCost, formatTime, statusBadge } from './page.js';
import type { LiveMission } from './read-mission-view.js';
import { embedJson, taskViewModel } from './task-view-model.js';

type TaskRow = MissionStatusJson['tasks'][number];

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
    attempt.tier ? `tier ${attempt.tier}${attempt.model ? ` (${attempt.model})` : ''}` : '',
    attempt.durationSec !== undefined ? `ran ${attempt.durationSec}s` : '',
    attempt.queue ? `queue ${attempt.queue}` : '',
  ].filter(Boolean);
  return html`<div class="attempt ${attempt.gate?.action ?? ''}" data-attempt="${attempt.attempt}">
<h4>Attempt ${attempt.attempt}${attempt.gate ? html` — gate: ${attempt.gate.message}` : ''}</h4>
${facts.length ? html`<div class="muted">${facts.join(' · ')}</div>` : ''}
${attempt.escalation ? html`<div class="escalation">escalated: ${attempt.escalation}</div>` : ''}
${renderCriteria(attempt)}
${renderCritic(attempt)}
<div class="jobs">Jobs in Bull Board: ${links.map((l) => html`<a href="${l.href}" title="${l.queue} / ${l.jobId}">${l.stage}</a>`)}</div>
<details><summary>audit trail (${attempt.timeline.length})</summary><ul class="timeline">${attempt.timeline.map(
    (e) => html`<li>${formatTime(e.at)} · ${e.stage}${e.host ? ` · ${e.host}` : ''}: ${e.message}</li>`,
  )}</ul></details>
</div>`;
}

type TaskFacts = Pick<
  TaskRow,
  'status' | 'attempts' | 'host' | 'cli' | 'score' | 'costUsd' | 'route' | 'error'
>;

/** One task with every attempt: a section of a small mission's page, or the detail of a large one's. */
export function renderTask(
  task: TaskSpec,
  row: TaskFacts | undefined,
  attempts: readonly AttemptView[],
  missionId: string,
  queuesBase: string,
  /** Where a dependency links to: its section on a small mission's page, or its detail. */
  taskHref: (id: string) => string = (id) => `#${taskAnchor(id)}`,
  /** The board takes a person's verdict on a held task (server.ts's verdict route). */
  verdicts = false,
): SafeHtml {
  const status = row?.status ?? 'pending';
  return html`<section class="card task" id="${taskAnchor(task.id)}" data-task="${task.id}">
<h3 class="task-title">${task.title} <span class="muted">(${task.id})</span> ${statusBadge(status)}</h3>
<div class="facts">
<div><span>attempts</span>${row?.attempts ?? 0} of ${task.maxAttempts}</div>
<div><span>capability</span>${task.capability}</div>
${task.cli ? html`<div><span>pinned CLI</span>${task.cli}</div>` : ''}
${task.dependsOn.length ? html`<div><span>depends on</span>${task.dependsOn.map((d, i) => html`${i ? ', ' : ''}<a href="${taskHref(d)}">${d}</a>`)}</div>` : ''}
${row?.host ? html`<div><span>host</span>${row.host}</div>` : ''}
${row?.cli ? html`<div><span>CLI</span>${row.cli}</div>` : ''}
${row?.score !== null && row?.score !== undefined ? html`<div><span>score</span><span class="score">${row.score}</span></div>` : ''}
${row?.costUsd ? html`<div><span>cost</span>${formatCost(row.costUsd)}</div>` : ''}
</div>
${row?.route ? html`<div class="muted">route: ${row.route}</div>` : ''}
${row?.error ? html`<div class="error">error: ${row.error}</div>` : ''}
${status === 'awaiting_approval' ? renderVerdictBox(task.id, missionId, verdicts) : ''}
${task.description ? html`<details><summary>description</summary><pre>${task.description}</pre></details>` : ''}
${attempts.length ? attempts.map((a) => renderAttempt(a, task, missionId, queuesBase)) : html`<div class="muted">No attempt has run yet.</div>`}
</section>`;
}

/**
 * A held task (`approve: human`): Approve, and Reject with the words the retry's prompt will carry;
 * the page's script posts them (the page's policy allows no form submission). Without the
 * verdict route, the command that does it.
 */
function renderVerdictBox(taskId: string, missionId: string, verdicts: boolean): SafeHtml {
  if (!verdicts)
    return html`<div class="approval muted">Passed its gates; waits for a person: flotilla approve ${missionId} ${taskId}</div>`;
  return html`<div class="approval" data-task="${taskId}"><strong>Passed its gates; waiting for a person's approval.</strong>
<button type="button" class="verdict" data-verdict="approve">Approve</button>
<input type="text" class="reason" maxlength="2000" placeholder="why, to reject" aria-label="why the work is rejected">
<button type="button" class="verdict" data-verdict="reject">Reject</button>
<span class="verdict-result" role="status"></span></div>`;
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

/** The whole graph is drawn up to this many tasks; past it, a task's neighbourhood is drawn on demand. */
export const FULL_GRAPH_LIMIT = 50;

function renderCompactView(): SafeHtml {
  return html`<section class="tasks-view"><h2>Tasks <span class="muted" id="shown"></span></h2>
<div class="toolbar">
<input id="search" type="search" placeholder="search id or title" aria-label="search tasks by id or title" autocomplete="off">
<label>group by <select id="group"><option value="depth">depth</option><option value="capability">capability</option><option value="status">status</option><option value="none">nothing</option></select></label>
<label>view <select id="view"><option value="grid">grid</option><option value="list">list</option></select></label>
<button type="button" id="clear-filter">clear filters</button>
<span class="muted">click a status count to filter · <i class="c s-completed cp legend-cp"></i> critical path</span>
</div>
<div id="grid" class="grid"><noscript>The task grid needs JavaScript; the status JSON lists every task.</noscript></div>
<div id="task-list" class="hide"><table class="task-list"><thead><tr><th>Task</th><th>Title</th><th>Status</th><th>Capability</th><th class="num">Depth</th></tr></thead><tbody></tbody></table><div class="list-more muted"></div></div>
</section>`;
}

function renderFullGraph(live: LiveMission): SafeHtml {
  const critical = new Set(live.overview.criticalPath);
  const graph = renderGraphSvg(
    live.shape.tasks.map((task) => {
      const state = live.states[task.id];
      return {
        id: task.id,
        dependsOn: task.dependsOn,
        title: task.title,
        status: state?.status ?? 'pending',
        score: state?.score ?? null,
        attempts: state?.attempts ?? 0,
      };
    }),
    { critical },
  );
  const used = new Set(live.shape.tasks.map((t) => live.states[t.id]?.status ?? 'pending'));
  return html`<h2>Task graph</h2>
<div class="legend">${TASK_STATUSES.filter((s) => used.has(s)).map((s) => statusBadge(s))}<span class="muted">a heavier border marks the critical path</span></div>
<div class="graph-box">${graph}</div>`;
}

export interface MissionPageInput {
  readonly live: LiveMission;
  readonly summary: string | null;
  /** Where Bull Board is mounted, for links to an attempt's jobs. */
  readonly queuesBase: string;
  /** A small mission's status JSON, spec and audit: its page shows every task and attempt. */
  readonly full: { status: MissionStatusJson; spec: MissionSpec; audit: readonly AuditEntry[] } | null;
  /** The board takes a person's verdict on a held task: its sections get Approve and Reject. */
  readonly verdicts?: boolean;
}

export function renderMissionPage(input: MissionPageInput): SafeHtml {
  const { live, full } = input;
  const id = live.shape.id;
  const model = taskViewModel(live);
  const attempts = full ? attemptsByTask(full.audit) : null;
  const rows = full ? new Map(full.status.tasks.map((t) => [t.id, t])) : null;
  return html`<div id="mission" data-mission="${id}" data-size="${full ? 'small' : 'large'}" data-live="${live.status === 'running' ? 'on' : 'done'}" data-event="${live.eventId}">
<h1 class="goal">${live.shape.goal}</h1>
<section id="overview">${renderOverview(live.overview, { id, status: live.status, finishedAt: live.finishedAt, queuesBase: input.queuesBase, delivery: live.delivery })}</section>
<section id="detail" class="card hide" data-levels="2" aria-live="polite"></section>
${input.summary ? html`<h2>Summary</h2><pre class="summary">${input.summary}</pre>` : ''}
${full ? renderFullGraph(live) : ''}
${renderCompactView()}
${full && rows && attempts ? html`<h2>Task table</h2>${renderTaskTable(full.status.tasks)}<h2>Attempts</h2>${full.spec.tasks.map((task) => renderTask(task, rows.get(task.id), attempts.get(task.id) ?? [], id, input.queuesBase, undefined, input.verdicts))}` : ''}
<script type="application/json" id="mission-model">${trusted(embedJson(model))}</script>
</div>`;
}
