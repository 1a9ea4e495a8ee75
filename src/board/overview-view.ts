import {
  type DeliveryStatus,
  type MissionStatus,
  TASK_STATUSES,
  type TaskStatus,
} from '../shared/contracts.js';
import { formatDuration } from '../shared/duration.js';
import { html, type SafeHtml } from './html.js';
import {
  ATTENTION_ORDER,
  type AttentionItem,
  type AttentionKind,
  type Overview,
} from './mission-overview.js';
import { formatCost, statusBadge } from './page.js';
import { statusStyle } from './status-style.js';

/**
 * The top of the mission page: facts, the progress bar with a count per status, and the attention
 * list. The server renders it for the first paint and again for every live update, so the page's
 * script only swaps it in and never builds markup from task text itself.
 */

/** Per kind, the tasks listed by name; the rest are counted, and a click filters the task view. */
export const ATTENTION_SHOWN = 8;

const KIND_TITLE: Record<AttentionKind, string> = {
  failed: 'Failed',
  needs_input: 'Waiting for an answer',
  awaiting_approval: 'Waiting for approval',
  unservable: 'No host can serve',
  retrying: 'Retrying',
};

/** The status filter a kind's "more" link applies in the task view (unservable tasks are queued or retrying). */
const KIND_FILTER: Record<AttentionKind, TaskStatus | null> = {
  failed: 'failed',
  needs_input: 'needs_input',
  awaiting_approval: 'awaiting_approval',
  unservable: null,
  retrying: 'retrying',
};

export interface OverviewFacts {
  readonly id: string;
  readonly status: MissionStatus;
  readonly finishedAt: string | null;
  readonly queuesBase: string;
  readonly delivery?: DeliveryStatus | null;
}

/** Where the branch went: the pull request's link, or the delivery's state and why. */
function renderDelivery(delivery: DeliveryStatus | null | undefined): SafeHtml | string {
  if (!delivery) return '';
  const pr = delivery.pullRequest;
  if (delivery.state === 'delivered' && pr && /^https?:\/\//.test(pr.url)) {
    return html`<div class="delivery" data-state="delivered"><span>pull request</span><a href="${pr.url}">#${String(pr.number)}</a> <span class="muted">(${pr.action})</span></div>`;
  }
  const why = delivery.error
    ? html` <span class="${delivery.state === 'failed' ? 'error' : 'muted'}">${delivery.error}</span>`
    : '';
  return html`<div class="delivery" data-state="${delivery.state}"><span>delivery</span>${delivery.state}${why}</div>`;
}

function percent(part: number, whole: number): string {
  return whole === 0 ? '0' : String(Math.floor((part / whole) * 100));
}

/** The bar fills from the left with what is finished, then what is under way, then what waits. */
const BAR_ORDER: readonly TaskStatus[] = [
  'completed',
  'failed',
  'skipped',
  'cancelled',
  'needs_input',
  'awaiting_approval',
  'retrying',
  'reviewing',
  'verifying',
  'running',
  'queued',
  'pending',
];

function renderBar(overview: Overview): SafeHtml {
  const segments = BAR_ORDER.filter((s) => overview.counts[s] > 0).map((s) => {
    const style = statusStyle(s);
    const width = (overview.counts[s] / Math.max(1, overview.total)) * 100;
    return html`<span class="seg" data-status="${s}" title="${s.replace('_', ' ')}: ${overview.counts[s]}" style="width:${width.toFixed(3)}%;background:${s === 'pending' ? '#eceff1' : style.stroke}"></span>`;
  });
  return html`<div class="bar" role="img" aria-label="${overview.finished} of ${overview.total} tasks finished">${segments}</div>`;
}

function renderCounts(overview: Overview): SafeHtml {
  const items = TASK_STATUSES.map(
    (s) =>
      html`<li class="count${overview.counts[s] === 0 ? ' zero' : ''}" data-status="${s}"><button type="button" class="filter" data-filter="${s}" title="show only ${s.replace('_', ' ')} tasks">${statusBadge(s)} <span class="n">${overview.counts[s]}</span></button></li>`,
  );
  return html`<ul class="counts">${items}</ul>`;
}

function renderEstimate(overview: Overview, facts: OverviewFacts): SafeHtml {
  if (facts.status !== 'running') return html``;
  const estimate = overview.estimate;
  if (!estimate)
    return html`<div class="estimate"><span>estimate</span><span class="muted">after the first completed task</span></div>`;
  const basis = `${estimate.perHour.toFixed(1)} tasks/h so far; the longest open chain takes about ${formatDuration(estimate.chainMs)}`;
  return html`<div class="estimate" title="${basis}"><span>estimate</span>about ${formatDuration(estimate.remainingMs)} left</div>`;
}

function renderHosts(overview: Overview): SafeHtml {
  const hosts = overview.hosts;
  if (!hosts) return html``;
  if (hosts.total === 0)
    return html`<div class="hosts"><span>hosts</span><span class="error">no live host</span></div>`;
  return html`<div class="hosts"><span>hosts</span><a href="/hosts">${hosts.busy} busy, ${hosts.idle} idle</a> <span class="muted">· ${hosts.running}/${hosts.slots} slots</span></div>`;
}

function renderItem(item: AttentionItem): SafeHtml {
  const tries =
    item.kind === 'failed' || item.kind === 'retrying'
      ? ` (attempt ${item.attempts} of ${item.maxAttempts})`
      : '';
  return html`<li class="att" data-kind="${item.kind}" data-task="${item.taskId}" title="${item.title}: ${item.detail}"><a class="task-link" href="#task=${encodeURIComponent(item.taskId)}">${item.taskId}</a> <span class="att-title">${item.title}</span> — <span class="${item.kind === 'failed' ? 'error' : 'att-detail'}">${item.detail}</span><span class="muted">${tries}</span></li>`;
}

/** Unservable tasks are listed by reason: a missing capability stalls many tasks for one cause. */
function renderUnservable(items: readonly AttentionItem[]): SafeHtml[] {
  const byReason = new Map<string, AttentionItem[]>();
  for (const item of items) {
    const list = byReason.get(item.detail);
    if (list) list.push(item);
    else byReason.set(item.detail, [item]);
  }
  return [...byReason].map(([reason, list]) => {
    const shown = list.slice(0, ATTENTION_SHOWN);
    const links = shown.map(
      (item, i) =>
        html`${i ? ', ' : ''}<a class="task-link" href="#task=${encodeURIComponent(item.taskId)}" data-task="${item.taskId}">${item.taskId}</a>`,
    );
    const more =
      list.length > shown.length
        ? html` <span class="muted">+ ${list.length - shown.length} more</span>`
        : '';
    return html`<li class="att" data-kind="unservable" data-tasks="${list.map((i) => i.taskId).join(' ')}" title="${reason}"><span class="att-detail">${reason}</span> — ${list.length} task${list.length === 1 ? '' : 's'}: ${links}${more}</li>`;
  });
}

function renderAttention(overview: Overview): SafeHtml {
  const total = overview.attention.length;
  if (total === 0)
    return html`<section class="attention" data-count="0"><h2>Attention</h2><p class="muted">Nothing needs attention: no task failed, waits for an answer, lacks a host or is retrying.</p></section>`;
  const groups = ATTENTION_ORDER.map((kind) => {
    const items = overview.attention.filter((i) => i.kind === kind);
    if (items.length === 0) return '';
    const filter = KIND_FILTER[kind];
    const list =
      kind === 'unservable' ? renderUnservable(items) : items.slice(0, ATTENTION_SHOWN).map(renderItem);
    const more =
      kind !== 'unservable' && items.length > ATTENTION_SHOWN
        ? html`<li class="more"><button type="button" class="filter" data-filter="${filter ?? ''}">+ ${items.length - ATTENTION_SHOWN} more ${KIND_TITLE[kind].toLowerCase()}</button></li>`
        : '';
    return html`<div class="att-group" data-kind="${kind}" data-count="${items.length}"><h3>${KIND_TITLE[kind]} <span class="muted">(${items.length})</span></h3><ul>${list}${more}</ul></div>`;
  });
  return html`<section class="attention" data-count="${total}"><h2>Attention <span class="muted">(${total})</span></h2>${groups}</section>`;
}

export function renderOverview(overview: Overview, facts: OverviewFacts): SafeHtml {
  const running = facts.status === 'running';
  return html`<div class="facts">
<div>${statusBadge(facts.status)}</div>
<div><span>mission</span><code>${facts.id}</code></div>
<div class="progress-count"><span>finished</span><strong>${overview.finished}/${overview.total}</strong> <span class="muted">(${percent(overview.finished, overview.total)}%)</span></div>
<div><span>${running ? 'running for' : 'took'}</span>${formatDuration(overview.elapsedMs)}</div>
${renderEstimate(overview, facts)}
<div><span>cost</span>${formatCost(overview.costUsd)}</div>
${renderDelivery(facts.delivery)}
${renderHosts(overview)}
<div><a href="/missions/${encodeURIComponent(facts.id)}.json">status JSON</a> · <a href="${facts.queuesBase}">Bull Board</a></div>
</div>
${renderBar(overview)}
${renderCounts(overview)}
${renderAttention(overview)}`;
}
