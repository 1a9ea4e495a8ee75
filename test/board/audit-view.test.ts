import { describe, expect, it } from 'vitest';
import { attemptJobLinks, attemptsByTask, criterionView } from '../../src/board/audit-view.js';
import type { AuditEntry } from '../../src/shared/contracts.js';
import { auditEntry } from '../helpers/factories.js';

describe('criterionView', () => {
  it.each([
    [
      { command: 'npm test', exitCode: 0, timedOut: false, tail: 'ok 3 tests\n' },
      { exit: '0', passed: true, tail: 'ok 3 tests' },
    ],
    [
      { command: 'grep -q x f', exitCode: 1, timedOut: false, tail: '' },
      { exit: '1', passed: false },
    ],
    [
      { command: 'sleep 999', exitCode: null, timedOut: true, tail: '' },
      { exit: 'none', passed: false, timedOut: true },
    ],
    // A zero exit after the time limit is still a failure: the criterion did not finish in time.
    [{ command: 'slow', exitCode: 0, timedOut: true, tail: '' }, { passed: false }],
  ])('%o', (criterion, expected) => {
    expect(criterionView(criterion)).toMatchObject(expected);
  });
});

describe('attemptsByTask', () => {
  const _at = '2024-01-01T00:00:00.000Z';
  const run = (host: string, durationMs: number): AuditEntry =>
    auditEntry(
      {
        kind: 'run',
        cli: 'sim',
        cliName: 'Sim',
        exitCode: 0,
        timedOut: false,
        durationMs,
        resultStatus: 'success',
        resultSource: 'file',
        warnings: [],
        rolledBack: [],
      },
      { host, cli: 'sim' },
    );
  const audit: AuditEntry[] = [
    auditEntry({ kind: 'mission', action: 'submitted', tasks: 1 }, { taskId: '', attempt: 0 }),
    auditEntry({
      kind: 'route',
      attempt: 1,
      queue: 'dispatch.code_implementation',
      how: 'exact',
      reason: 'match',
    }),
    auditEntry(
      { kind: 'rate-limited', cli: 'sim', reply: 'wait', cooldownMs: 1000 },
      { host: 'h1', cli: 'sim' },
    ),
    run('h2', 3_000),
    auditEntry({
      kind: 'verify',
      passed: false,
      criteria: [
        { command: 'true', exitCode: 0, timedOut: false, tail: '' },
        { command: 'false', exitCode: 1, timedOut: false, tail: '' },
      ],
    }),
    auditEntry({ kind: 'gate', action: 'retry', delayMs: 1_000, reason: 'exit criteria failed' }),
    auditEntry(
      {
        kind: 'critic',
        cli: 'other',
        cliName: 'Other',
        score: 9,
        verdict: 'approve',
        issues: ['a; b', 'c'],
        selfReview: false,
        exitCode: 0,
      },
      { attempt: 2, cli: 'other' },
    ),
    auditEntry({ kind: 'gate', action: 'approve', score: 9 }, { attempt: 2 }),
  ];
  const views = attemptsByTask(audit).get('t') ?? [];

  it('groups by attempt, oldest first, and skips mission-level entries', () => {
    expect(views.map((v) => v.attempt)).toEqual([1, 2]);
    expect(attemptsByTask(audit).has('')).toBe(false);
  });

  it('takes host and CLI from the run that ran, criteria, critic and gate from their events', () => {
    expect(views[0]).toMatchObject({
      queue: 'dispatch.code_implementation',
      host: 'h2',
      cli: 'sim',
      durationSec: 3,
    });
    expect(views[0]?.criteria.map((c) => [c.command, c.passed])).toEqual([
      ['true', true],
      ['false', false],
    ]);
    expect(views[0]?.gate).toEqual({ action: 'retry', message: 'retry in 1s: exit criteria failed' });
    expect(views[1]?.critic).toMatchObject({
      score: 9,
      verdict: 'approve',
      cli: 'other',
      issues: ['a; b', 'c'],
    });
  });
});

describe('attemptJobLinks', () => {
  it("links the attempt's four jobs in Bull Board's /queue/<name>/<id> route", () => {
    const links = attemptJobLinks('/queues', {
      missionId: 'm-1',
      taskId: 't',
      attempt: 2,
      capability: 'testing',
    });
    expect(links.map((l) => l.href)).toEqual([
      '/queues/queue/dispatch.testing/m-1.t.a2.run',
      '/queues/queue/verify/m-1.t.a2.verify',
      '/queues/queue/critic/m-1.t.a2.critic',
      '/queues/queue/mission/m-1.t.a2.gate',
    ]);
    const routed = attemptJobLinks('/queues', {
      missionId: 'm',
      taskId: 't',
      attempt: 1,
      capability: 'x',
      runQueue: 'dispatch.internal',
    });
    expect(routed[0]?.href).toBe('/queues/queue/dispatch.internal/m.t.a1.run');
  });
});
