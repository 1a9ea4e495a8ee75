import { describe, expect, it } from 'vitest';
import {
  attemptJobLinks,
  attemptsByTask,
  gateActionOf,
  parseCriteria,
  parseCritic,
  routedQueue,
  runDurationSec,
} from '../../src/board/audit-view.js';
import type { AuditEntry } from '../../src/shared/contracts.js';

describe('parseCriteria', () => {
  it('reads each command, its exit and output tail as verify writes them', () => {
    const text = [
      '$ npm test',
      '# exit 0',
      'ok 3 tests',
      '',
      '$ grep -q mean src/stats.ts',
      '# exit 1',
      '$ not a header: no exit line follows',
      '',
      '$ sleep 999',
      '# exit none (timed out)',
      '',
    ].join('\n');
    expect(parseCriteria(text)).toEqual([
      { command: 'npm test', exit: '0', timedOut: false, passed: true, tail: 'ok 3 tests' },
      {
        command: 'grep -q mean src/stats.ts',
        exit: '1',
        timedOut: false,
        passed: false,
        tail: '$ not a header: no exit line follows',
      },
      { command: 'sleep 999', exit: 'none', timedOut: true, passed: false, tail: '' },
    ]);
  });
});

describe('parseCritic', () => {
  it.each([
    [
      'critic Codex CLI: score 8/10, approve — name the magic number; add a test for []',
      { score: 8, verdict: 'approve', issues: ['name the magic number', 'add a test for []'] },
    ],
    [
      'critic Sim (no other reviewer CLI in the cluster: self-review): score 4.5/10, reject',
      { score: 4.5, verdict: 'reject', issues: [] },
    ],
    ['critic Sim: no verdict could be read (exit 1)', { score: null, verdict: null, issues: [] }],
  ])('%s', (message, expected) => {
    expect(parseCritic(message)).toMatchObject(expected);
  });
});

describe('sentence parsers', () => {
  it.each([
    ['approved (score 8)', 'approve'],
    ['retry in 5s: exit criteria failed', 'retry'],
    ['failed: out of attempts', 'fail'],
    ['paused: the agent asked a question', 'pause'],
    ['cancelled', 'cancel'],
    ['something else', null],
  ])('gate %s → %s', (message, action) => {
    expect(gateActionOf(message)).toBe(action);
  });

  it('reads run durations and routed queues', () => {
    expect(runDurationSec('Claude Code exited 0 after 42s; result success from file')).toBe(42);
    expect(
      runDurationSec('rate limited (attempt not counted, back to the queue): slow down'),
    ).toBeUndefined();
    expect(routedQueue('attempt 2 → dispatch.testing: exact capability match (sim)')).toBe(
      'dispatch.testing',
    );
  });
});

describe('attemptsByTask', () => {
  const at = '2024-01-01T00:00:00.000Z';
  const audit: AuditEntry[] = [
    { at, taskId: '', attempt: 0, stage: 'mission', message: 'submitted' },
    {
      at,
      taskId: 't',
      attempt: 1,
      stage: 'route',
      message: 'attempt 1 → dispatch.code_implementation: match',
    },
    { at, taskId: 't', attempt: 1, stage: 'run', host: 'h1', cli: 'sim', message: 'rate limited: wait' },
    {
      at,
      taskId: 't',
      attempt: 1,
      stage: 'run',
      host: 'h2',
      cli: 'sim',
      message: 'Sim exited 0 after 3s; ok',
    },
    { at, taskId: 't', attempt: 1, stage: 'verify', message: 'exit criteria failed: ✓ true; ✗ false' },
    { at, taskId: 't', attempt: 1, stage: 'gate', message: 'retry in 1s: exit criteria failed' },
    {
      at,
      taskId: 't',
      attempt: 2,
      stage: 'critic',
      cli: 'other',
      message: 'critic Other: score 9/10, approve',
    },
    { at, taskId: 't', attempt: 2, stage: 'gate', message: 'approved (score 9)' },
  ];
  const views = attemptsByTask(audit).get('t') ?? [];

  it('groups by attempt, oldest first, and skips mission-level entries', () => {
    expect(views.map((v) => v.attempt)).toEqual([1, 2]);
    expect(attemptsByTask(audit).has('')).toBe(false);
  });

  it('takes host and CLI from the run that ran, criteria from the verify sentence without criteria.txt', () => {
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
    expect(views[1]?.critic).toMatchObject({ score: 9, verdict: 'approve', cli: 'other' });
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

describe('parseCritic with the review text', () => {
  it("prefers the reviewer's own issue list when its score matches the sentence", () => {
    const message = 'critic Gemini CLI: score 6/10, reject — a; b; c';
    const review = 'Review.\n```json\n{"score": 6, "verdict": "reject", "issues": ["a; b", "c"]}\n```';
    expect(parseCritic(message, 'gemini', review).issues).toEqual(['a; b', 'c']);
    expect(parseCritic(message, 'gemini', '{"score": 9, "issues": ["other"]}').issues).toEqual([
      'a',
      'b',
      'c',
    ]);
  });
});
