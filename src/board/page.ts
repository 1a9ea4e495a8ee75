import { TASK_STATUSES } from '../shared/contracts.js';
import { html, type SafeHtml, trusted } from './html.js';
import { statusStyle } from './status-style.js';

const CSS = `
:root { color-scheme: light; --fg: #1f2933; --muted: #607080; --line: #e1e6eb; --bg: #f7f9fb; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
header.top { display: flex; align-items: center; gap: 20px; padding: 10px 24px; background: #102a43; color: #fff; }
header.top a { color: #d9e2ec; text-decoration: none; }
header.top a:hover { color: #fff; }
header.top .brand { font-weight: 700; font-size: 16px; color: #fff; margin-right: 12px; }
main { padding: 20px 24px 40px; max-width: 1400px; }
h1 { font-size: 22px; margin: 0 0 6px; }
h2 { font-size: 17px; margin: 28px 0 10px; }
h3 { font-size: 15px; margin: 0 0 6px; }
h4 { font-size: 14px; margin: 0 0 4px; }
a { color: #0b69a3; }
.muted { color: var(--muted); }
.card { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 14px 16px; margin: 12px 0; }
table { border-collapse: collapse; width: 100%; background: #fff; border: 1px solid var(--line); border-radius: 8px; }
th, td { text-align: left; padding: 7px 10px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-size: 12px; text-transform: uppercase; letter-spacing: .03em; color: var(--muted); background: #fbfcfd; }
tr:last-child td { border-bottom: 0; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; font-weight: 600; border: 1px solid; white-space: nowrap; }
.facts { display: flex; flex-wrap: wrap; gap: 6px 24px; margin: 8px 0 0; }
.facts div span { color: var(--muted); margin-right: 6px; }
pre { background: #f3f5f7; border: 1px solid var(--line); border-radius: 6px; padding: 8px 10px; overflow: auto; max-height: 320px; white-space: pre-wrap; word-break: break-word; font-size: 12.5px; }
code { font-size: 12.5px; background: #f3f5f7; padding: 0 4px; border-radius: 4px; }
.graph-box { overflow: auto; background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 4px; }
svg.graph .edge { fill: none; stroke: #90a4ae; stroke-width: 1.6; }
svg.graph .edge.blocked { stroke-dasharray: 5 4; }
svg.graph .node-title { font: 600 13px system-ui, sans-serif; fill: #1f2933; }
svg.graph .node-id { font: 11px ui-monospace, monospace; fill: #607080; }
svg.graph .node-detail { font: 600 11px system-ui, sans-serif; }
svg.graph a.node:hover rect { stroke-width: 3; }
.legend { display: flex; flex-wrap: wrap; gap: 6px; margin: 8px 0; }
.attempt { border-left: 4px solid var(--line); padding: 4px 0 4px 12px; margin: 12px 0; }
.attempt.approve { border-left-color: #2e7d32; }
.attempt.retry { border-left-color: #e65100; }
.attempt.fail { border-left-color: #c62828; }
ul.criteria { list-style: none; padding: 0; margin: 4px 0; }
ul.criteria li { margin: 2px 0; }
.ok { color: #2e7d32; font-weight: 700; }
.bad { color: #c62828; font-weight: 700; }
.score { font-weight: 700; }
ul.timeline { margin: 4px 0; padding-left: 18px; color: var(--muted); font-size: 13px; }
.jobs a { margin-right: 10px; font-size: 13px; }
.error { color: #b71c1c; }
details > summary { cursor: pointer; color: var(--muted); }
td { overflow-wrap: anywhere; }
.hide { display: none !important; }
.bar { display: flex; height: 14px; border-radius: 7px; overflow: hidden; background: #eceff1; margin: 12px 0 6px; border: 1px solid var(--line); }
.bar .seg { height: 100%; }
ul.counts { list-style: none; display: flex; flex-wrap: wrap; gap: 2px 6px; padding: 0; margin: 4px 0; }
ul.counts li.zero { opacity: .45; }
ul.counts .n { font-weight: 700; font-variant-numeric: tabular-nums; }
button.filter { font: inherit; color: inherit; background: none; border: 1px solid transparent; border-radius: 12px; padding: 1px 5px; cursor: pointer; }
button.filter:hover { border-color: var(--line); }
button.filter.on { border-color: #102a43; background: #e3f2fd; }
.attention { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 6px 14px 8px; margin: 10px 0; max-height: 40vh; overflow: auto; }
.attention h2 { margin: 2px 0 4px; font-size: 16px; }
.att-group h3 { font-size: 13px; margin: 6px 0 1px; }
.att-group[data-kind="failed"] h3 { color: #b71c1c; }
.att-group[data-kind="needs_input"] h3 { color: #8d6e00; }
.att-group[data-kind="awaiting_approval"] h3 { color: #00695c; }
.approval { margin: 8px 0; padding: 8px; border: 1px solid #00897b; background: #e0f2f1; border-radius: 4px; }
.approval .reason { width: 22em; }
pre.live-tail { max-height: 22em; overflow: auto; background: #111; color: #e0e0e0; padding: 8px; font-size: 12px; min-height: 3em; }
.att-group[data-kind="unservable"] h3 { color: #bf360c; }
.attention ul { list-style: none; margin: 0; padding: 0; }
li.att { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; font-size: 13px; padding: 1px 0; }
li.att .att-title { color: var(--muted); }
.toolbar { display: flex; flex-wrap: wrap; gap: 8px 14px; align-items: center; margin: 6px 0 10px; }
.toolbar input[type="search"] { width: 260px; padding: 4px 8px; font: inherit; }
.grid { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 6px 10px; }
.grid .group { display: flex; gap: 10px; align-items: flex-start; padding: 2px 0; }
.grid .glabel { flex: 0 0 120px; font-size: 12px; color: var(--muted); white-space: nowrap; overflow: hidden; text-overflow: ellipsis; line-height: 13px; }
.grid .cells { display: flex; flex-wrap: wrap; gap: 2px; flex: 1; min-width: 0; }
i.c { display: block; width: 11px; height: 11px; border-radius: 2px; border: 1px solid; cursor: pointer; position: relative; }
i.c.cp::after { content: ""; position: absolute; left: 2.5px; top: 2.5px; width: 4px; height: 4px; border-radius: 50%; background: #102a43; box-shadow: 0 0 0 1px #fff; }
i.c.sel { outline: 2px solid #ff6f00; outline-offset: 1px; }
i.c.legend-cp { display: inline-block; vertical-align: -1px; cursor: default; }
table.task-list tr.cp td:first-child { font-weight: 700; }
#detail { position: relative; }
.detail-head { display: flex; gap: 12px; align-items: baseline; }
.detail-head h2 { margin: 0; }
.detail-head .close { margin-left: auto; }
.nbhd-bar { display: flex; flex-wrap: wrap; gap: 6px; align-items: center; margin: 8px 0 4px; font-size: 13px; }
.nbhd-bar button.on { font-weight: 700; }
.nbhd-box svg.graph { display: block; margin: 0 auto; max-width: 100%; max-height: 60vh; height: auto; }
.nbhd-box.actual svg.graph { max-width: none; max-height: none; }
svg.graph a.node.selected rect { stroke: #ff6f00; }
`;

/** One class per task status for the compact view's squares and the list, in the shared palette. */
const STATUS_CSS = TASK_STATUSES.map((status) => {
  const style = statusStyle(status);
  const fill = status === 'pending' ? '#ffffff' : style.stroke;
  return `.s-${status} { background: ${fill}; border-color: ${style.stroke}; }\ntd.st.s-${status} { background: ${style.fill}; color: ${style.text}; }`;
}).join('\n');

export function statusBadge(status: string): SafeHtml {
  const style = statusStyle(status);
  return html`<span class="badge status" data-status="${status}" style="color:${style.text};background:${style.fill};border-color:${style.stroke}">${status.replace('_', ' ')}</span>`;
}

/** ISO time as `2024-05-01 12:03:04 UTC`: unambiguous for readers in any time zone. */
export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) return iso;
  return `${new Date(ms).toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

export function formatCost(usd: number | null | undefined): string {
  if (!usd) return '—';
  return usd < 0.01 ? `$${usd.toFixed(4)}` : `$${usd.toFixed(2)}`;
}

export interface PageInput {
  readonly title: string;
  readonly body: SafeHtml;
  /** Per-response nonce: the CSP lets only scripts carrying it run. */
  readonly nonce: string;
  /** Reload the page every few seconds (the list while a mission is running). */
  readonly autoRefreshSec?: number;
  /** The page's own script (code, never user text), sent under the nonce. */
  readonly script?: string;
}

export function renderPage(input: PageInput): string {
  const refresh = input.autoRefreshSec
    ? html`<script nonce="${input.nonce}">
// Reload while the mission runs, but not while the reader has a details section open.
setTimeout(function tick() {
  if (document.querySelector('details[open]')) return setTimeout(tick, ${input.autoRefreshSec * 1000});
  location.reload();
}, ${input.autoRefreshSec * 1000});
</script>`
    : '';
  const script = input.script ? html`<script nonce="${input.nonce}">${trusted(input.script)}</script>` : '';
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${input.title} · flotilla board</title>
<style>${trusted(CSS)}${trusted(STATUS_CSS)}</style></head>
<body><header class="top"><a class="brand" href="/">flotilla</a><a href="/">Missions</a><a href="/hosts">Hosts</a><a href="/queues">Queues (Bull Board)</a><a href="/metrics">Metrics</a></header>
<main>${input.body}</main>${refresh}${script}</body></html>`.value;
}
