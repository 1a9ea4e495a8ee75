import { describe, expect, it } from 'vitest';
import { attemptsByTask } from '../../src/board/audit-view.js';
import { renderTask } from '../../src/board/mission-page.js';
import type { AuditEntry } from '../../src/shared/contracts.js';
import type { MissionSpec } from '../../src/shared/mission.js';
import { missionSpec } from '../helpers/factories.js';

/** The board says which tier and CLI each attempt ran with, and why it escalated. */

const at = '2026-12-01T09:00:00.000Z';
const run = (
  attempt: number,
  cli: string,
  event: { tier: string; model: string; escalation?: string },
): AuditEntry => ({
  at,
  taskId: 't',
  attempt,
  stage: 'run',
  host: 'h1',
  cli,
  message: `${cli} exited 0 after 1s`,
  event: {
    kind: 'run',
    cli,
    cliName: cli,
    exitCode: 0,
    timedOut: false,
    durationMs: 1000,
    resultStatus: 'success',
    resultSource: 'result file',
    warnings: [],
    rolledBack: [],
    ...event,
  },
});
const audit: AuditEntry[] = [
  run(1, 'sim', { tier: 'execution', model: 'sim-medium' }),
  { at, taskId: 't', attempt: 1, stage: 'gate', message: 'retry in 0s: exit criteria failed' },
  run(2, 'sim', {
    tier: 'planning',
    model: 'sim-large',
    escalation: 'attempt 1 failed; escalated to the planning tier (from execution)',
  }),
  run(3, 'other', {
    tier: 'planning',
    model: 'other-large',
    escalation: 'attempt 2 failed; escalated to other (another vendor)',
  }),
];

describe('board: tier, CLI and escalation per attempt', () => {
  it('attemptsByTask reads them from the run event', () => {
    const views = attemptsByTask(audit).get('t') ?? [];
    expect(views.map((v) => [v.cli, v.tier, v.model, v.escalation ?? null])).toEqual([
      ['sim', 'execution', 'sim-medium', null],
      ['sim', 'planning', 'sim-large', 'attempt 1 failed; escalated to the planning tier (from execution)'],
      ['other', 'planning', 'other-large', 'attempt 2 failed; escalated to other (another vendor)'],
    ]);
  });

  it("a task's section (small mission page, large mission's detail) shows them on each attempt", () => {
    const spec: MissionSpec = missionSpec(
      { t: [] },
      { title: 'T', critic: false, timeoutMs: 1000, backoffMs: 0, escalate: ['tier', 'cli'] },
      { workspace: '/w' },
    );
    const task = spec.tasks[0];
    if (!task) throw new Error('no task');
    const views = attemptsByTask(audit).get('t') ?? [];
    const page = renderTask(task, undefined, views, 'm', '/queues').value;
    expect(page).toContain('tier execution (sim-medium)');
    expect(page).toContain('tier planning (other-large)');
    expect(page).toContain('escalated: attempt 2 failed; escalated to other (another vendor)');
  });
});
