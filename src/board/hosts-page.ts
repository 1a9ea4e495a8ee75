import type { HostInfo } from '../shared/store/registry.js';
import { html, type SafeHtml } from './html.js';
import { formatTime } from './page.js';

function ago(iso: string, now: number): string {
  const ms = now - Date.parse(iso);
  if (Number.isNaN(ms)) return iso;
  return ms < 1000 ? 'just now' : `${Math.round(ms / 1000)}s ago`;
}

/** The machine a host is on, as tasks' `requires` match it: platform, probed tools, labels. */
function renderFacts(host: HostInfo): SafeHtml {
  const facts = host.facts;
  if (!facts) return html`<span class="muted">not reported</span>`;
  const tools = Object.entries(facts.tools).map(([name, version]) =>
    version === null
      ? html`<span class="muted">${name} absent</span>`
      : html`<span>${name}${version ? html` <span class="muted">${version}</span>` : ''}</span>`,
  );
  const labels = Object.entries(facts.labels).map(([key, value]) => html`<code>${key}=${value}</code>`);
  return html`<div class="facts-os"><strong>${facts.os}/${facts.arch}</strong></div>
<div class="facts-tools">${tools.map((t, i) => html`${i ? ', ' : ''}${t}`)}</div>
${labels.length ? html`<div class="facts-labels">${labels.map((l, i) => html`${i ? ' ' : ''}${l}`)}</div>` : ''}`;
}

export function renderHostsPage(hosts: readonly HostInfo[], now = Date.now()): SafeHtml {
  if (hosts.length === 0) {
    return html`<h1>Hosts</h1><div class="card">No live worker host. Start one with <code>flotilla worker</code>.</div>`;
  }
  const rows = hosts.map((host) => {
    const clis = host.clis.map(
      (c) =>
        html`<div><strong>${c.displayName}</strong>${c.version ? html` <span class="muted">${c.version}</span>` : ''}</div>`,
    );
    const capabilities = [...new Set(host.clis.flatMap((c) => c.capabilities))].sort();
    const problems = [
      ...host.disabled.map((d) => html`<div class="error">${d.cli}: ${d.reason}</div>`),
      ...host.coolingDown
        .filter((c) => Date.parse(c.until) > now)
        .map((c) => html`<div class="muted">${c.cli}: cooling down until ${formatTime(c.until)}</div>`),
    ];
    return html`<tr data-host="${host.hostId}">
<td><strong>${host.hostId}</strong><div class="muted">${host.hostname} · pid ${host.pid}</div></td>
<td class="host-facts">${renderFacts(host)}</td>
<td>${clis.length ? clis : html`<span class="muted">none</span>`}${host.internal ? html`<div class="muted">serves dispatch.internal</div>` : ''}</td>
<td>${capabilities.join(', ') || '—'}</td>
<td class="num">${host.running}/${host.slots}</td>
<td>${formatTime(host.startedAt)}</td>
<td>${ago(host.heartbeatAt, now)}</td>
<td>${problems}</td>
</tr>`;
  });
  return html`<h1>Hosts</h1>
<p class="muted">${hosts.length} live worker host${hosts.length === 1 ? '' : 's'}; a host drops off this list when its heartbeat expires.</p>
<table class="hosts"><thead><tr><th>Host</th><th>Machine</th><th>CLIs</th><th>Capabilities</th><th class="num">Slots busy</th><th>Started</th><th>Heartbeat</th><th>Notes</th></tr></thead>
<tbody>${rows}</tbody></table>`;
}
