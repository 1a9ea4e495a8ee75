import { describe, expect, it } from 'vitest';
import { buildOverview } from '../../src/board/mission-overview.js';
import { renderOverview } from '../../src/board/overview-view.js';
import type { DeliveryStatus } from '../../src/shared/contracts.js';

/** The mission page's facts say where a finished mission's branch went: its pull request, or why not. */
const overview = buildOverview({
  tasks: [
    {
      id: 'a',
      title: 'A',
      dependsOn: [],
      capability: 'code_implementation',
      controlMode: 'guarded',
      maxAttempts: 3,
    },
  ],
  states: { a: { status: 'completed', attempts: 1, cli: 'sim', host: 'h', error: null } },
  createdAt: '2026-01-01T00:00:00.000Z',
  finishedAt: '2026-01-01T00:01:00.000Z',
  costUsd: 0,
  hosts: null,
  now: Date.parse('2026-01-01T00:02:00.000Z'),
});
const facts = {
  id: 'm1',
  status: 'done' as const,
  finishedAt: '2026-01-01T00:01:00.000Z',
  queuesBase: '/queues',
};
const delivery = (patch: Partial<DeliveryStatus>): DeliveryStatus => ({
  state: 'delivered',
  remote: 'origin',
  branch: 'flotilla/m1',
  pushedCommit: 'c'.repeat(40),
  pullRequest: null,
  tries: 1,
  error: null,
  at: '2026-01-01T00:01:30.000Z',
  ...patch,
});

describe('the overview’s delivery', () => {
  it('links the pull request', () => {
    const pr = {
      forge: 'github' as const,
      number: 12,
      url: 'https://github.com/a/b/pull/12',
      action: 'opened' as const,
    };
    const page = renderOverview(overview, { ...facts, delivery: delivery({ pullRequest: pr }) }).value;
    expect(page).toContain('<a href="https://github.com/a/b/pull/12">#12</a>');
  });

  it('says a failed delivery and why, escaped, and links nothing that is not http(s)', () => {
    const failed = delivery({ state: 'failed', error: 'GitHub GET /repos/a/b/pulls: 401 <Bad credentials>' });
    const page = renderOverview(overview, { ...facts, delivery: failed }).value;
    expect(page).toContain('data-state="failed"');
    expect(page).toContain('401 &lt;Bad credentials&gt;');
    const odd = { forge: 'gitea' as const, number: 1, url: 'javascript:alert(1)', action: 'opened' as const };
    expect(
      renderOverview(overview, { ...facts, delivery: delivery({ pullRequest: odd }) }).value,
    ).not.toContain('javascript:');
  });

  it('shows nothing for a mission without deliver:', () => {
    expect(renderOverview(overview, facts).value).not.toContain('class="delivery"');
  });
});
