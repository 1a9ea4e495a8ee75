import { describe, expect, it } from 'vitest';
import { escapeHtml, html, trusted } from '../../src/board/html.js';
import { renderMissionPage } from '../../src/board/mission-page.js';
import { liveMissionOf, shapeOf } from '../../src/board/read-mission-view.js';
import { renderTaskDetail } from '../../src/board/task-detail.js';
import type { MissionStatusJson } from '../../src/shared/contracts.js';
import type { MissionSpec, TaskSpec } from '../../src/shared/mission.js';
import { taskSpec } from '../helpers/factories.js';

describe('escapeHtml', () => {
  it.each([
    ['<script>alert(1)</script>', '&lt;script&gt;alert(1)&lt;/script&gt;'],
    ['a & b', 'a &amp; b'],
    [`"quoted" and 'single'`, '&quot;quoted&quot; and &#39;single&#39;'],
    ['plain text ✓', 'plain text ✓'],
  ])('%s', (input, expected) => {
    expect(escapeHtml(input)).toBe(expected);
  });
});

describe('html tag', () => {
  it('escapes interpolated values but not the template or nested html', () => {
    const inner = html`<b>${'<i>'}</b>`;
    expect(html`<p title="${'x" onmouseover="y'}">${inner}</p>`.value).toBe(
      '<p title="x&quot; onmouseover=&quot;y"><b>&lt;i&gt;</b></p>',
    );
  });

  it('joins arrays and drops null, undefined and false', () => {
    expect(html`${['<a>', html`<br>`, null, undefined, false, 0]}`.value).toBe('&lt;a&gt;<br>0');
  });

  it('passes trusted markup through', () => {
    expect(html`${trusted('&nbsp;')}`.value).toBe('&nbsp;');
  });
});

function task(id: string, title: string, dependsOn: string[] = []): TaskSpec {
  return taskSpec({
    id,
    title,
    description: `description of ${title}`,
    dependsOn,
    timeoutMs: 60_000,
    backoffMs: 1_000,
  });
}

describe('renderMissionPage', () => {
  it('shows user text as text everywhere it appears (title, description, goal, error, graph)', () => {
    const evil = '<script>alert("x")</script>';
    const spec: MissionSpec = {
      goal: `Goal ${evil}`,
      workspace: '/tmp/x',
      agents: {},
      tasks: [task('a', `Title ${evil}`), task('b', 'B', ['a'])],
    };
    const status: MissionStatusJson = {
      id: 'm-1',
      goal: spec.goal,
      status: 'partial',
      createdAt: '2024-01-01T00:00:00.000Z',
      finishedAt: '2024-01-01T00:05:00.000Z',
      branch: 'flotilla/m-1',
      tasks: [
        {
          id: 'a',
          title: `Title ${evil}`,
          status: 'failed',
          attempts: 1,
          cli: 'sim',
          host: 'h1',
          score: 3,
          error: evil,
        },
        {
          id: 'b',
          title: 'B',
          status: 'skipped',
          attempts: 0,
          cli: null,
          host: null,
          score: null,
          error: null,
        },
      ],
    };
    const audit = [
      {
        at: '2024-01-01T00:01:00.000Z',
        taskId: 'a',
        attempt: 1,
        stage: 'gate' as const,
        message: `failed: ${evil}`,
      },
    ];
    const live = liveMissionOf({
      shape: shapeOf(status.id, spec.goal, status.createdAt, spec.tasks),
      meta: { status: 'partial', createdAt: status.createdAt, finishedAt: status.finishedAt, costUsd: 0 },
      states: Object.fromEntries(status.tasks.map((t) => [t.id, t])),
      hosts: [],
      eventId: '1-0',
      now: Date.parse('2024-01-01T00:06:00.000Z'),
    });
    const page = renderMissionPage({
      live,
      summary: `summary ${evil}`,
      full: { status, spec, audit },
      queuesBase: '/queues',
    }).value;
    // The embedded model is JSON whose every `<` is escaped, so no title can close its element.
    const model =
      /<script type="application\/json" id="mission-model">([\s\S]*?)<\/script>/.exec(page)?.[1] ?? '';
    expect(model).not.toContain('<');
    expect(JSON.parse(model).titles[0]).toBe(`Title ${evil}`);
    expect(page.split('</script>')).toHaveLength(2);
    const detail =
      renderTaskDetail({ live, taskId: 'a', audit, levels: 2, queuesBase: '/queues' })?.value ?? '';
    expect(detail).not.toContain('<script>');
    expect(detail).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;');
    expect(page).not.toContain('<script>');
    expect(page).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;');
    expect(page).toContain('data-task="a"');
  });
});
