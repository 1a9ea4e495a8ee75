import { describe, expect, it } from 'vitest';
import {
  buildOverview,
  estimateRemaining,
  firstQuestion,
  type LiveTask,
  type SpecTask,
  summarizeHosts,
} from '../../src/board/mission-overview.js';
import type { HostInfo } from '../../src/shared/store/registry.js';

const T0 = Date.parse('2025-01-01T00:00:00.000Z');
const at = (minutes: number) => new Date(T0 + minutes * 60_000).toISOString();

function spec(id: string, dependsOn: string[] = [], extra: Partial<SpecTask> = {}): SpecTask {
  return {
    id,
    title: `Task ${id}`,
    dependsOn,
    capability: 'code_implementation',
    controlMode: 'guarded',
    maxAttempts: 3,
    ...extra,
  };
}

function state(status: LiveTask['status'], extra: Partial<LiveTask> = {}): LiveTask {
  return { status, attempts: 1, ...extra };
}

function host(
  hostId: string,
  running: number,
  slots: number,
  capabilities = ['code_implementation'],
): HostInfo {
  return {
    hostId,
    hostname: hostId,
    pid: 1,
    startedAt: at(0),
    heartbeatAt: at(0),
    slots,
    running,
    internal: false,
    clis: [{ cli: 'codex', displayName: 'Codex', capabilities, order: 0 }],
    disabled: [],
    coolingDown: [],
  };
}

describe('buildOverview: counts and the attention list', () => {
  const tasks = [
    spec('ok'),
    spec('broken'),
    spec('asks'),
    spec('again'),
    spec('migrate', [], { capability: 'data_migration' }),
    spec('pinned', [], { cli: 'aider' }),
    spec('waits'),
    spec('later', ['broken']),
    spec('second', [], { capability: 'code_implementation' }),
    spec('requeued'),
  ];
  const states: Record<string, LiveTask> = {
    ok: state('completed', { startedAt: at(0), finishedAt: at(10) }),
    broken: state('failed', { attempts: 3, error: 'out of attempts: exit criteria failed' }),
    asks: state('needs_input', { questions: [{ question: 'Which database?' }] }),
    again: state('retrying', { attempts: 2, error: 'critic score 5 below 7' }),
    migrate: state('queued'),
    pinned: state('retrying', { attempts: 2, error: 'timed out' }),
    waits: state('queued'),
    later: state('skipped', { attempts: 0 }),
    second: state('verifying', { attempts: 2 }),
    requeued: state('queued', { attempts: 3 }),
  };
  const overview = buildOverview({
    tasks,
    states,
    createdAt: at(0),
    finishedAt: null,
    costUsd: 1.5,
    hosts: [host('h1', 2, 4), host('h2', 0, 2)],
    now: T0 + 20 * 60_000,
  });

  it('counts every status and what has finished', () => {
    expect(overview.total).toBe(10);
    expect(overview.counts).toMatchObject({
      completed: 1,
      failed: 1,
      needs_input: 1,
      retrying: 2,
      queued: 3,
      verifying: 1,
      skipped: 1,
      pending: 0,
    });
    expect(overview.finished).toBe(3);
    expect(overview.elapsedMs).toBe(20 * 60_000);
    expect(overview.hosts).toEqual({ total: 2, busy: 1, idle: 1, slots: 6, running: 2 });
  });

  it('lists failed, waiting, unservable and retrying tasks in that order, with their reasons', () => {
    expect(overview.attention.map((a) => [a.kind, a.taskId])).toEqual([
      ['failed', 'broken'],
      ['needs_input', 'asks'],
      ['unservable', 'migrate'],
      ['unservable', 'pinned'],
      ['retrying', 'again'],
      ['retrying', 'second'],
      ['retrying', 'requeued'],
    ]);
    const detail = Object.fromEntries(overview.attention.map((a) => [a.taskId, a.detail]));
    expect(detail.broken).toBe('out of attempts: exit criteria failed');
    expect(detail.asks).toBe('Which database?');
    expect(detail.migrate).toMatch(/^no live host serves data_migration/);
    expect(detail.pinned).toMatch(/^pinned CLI 'aider' is on no live host/);
    expect(detail.again).toBe('critic score 5 below 7');
    expect(detail.second).toBe('verifying again');
    expect(detail.requeued).toBe('queued again');
  });

  it('does not call tasks unservable when the hosts were not read (a finished mission)', () => {
    const without = buildOverview({
      tasks,
      states,
      createdAt: at(0),
      finishedAt: at(30),
      costUsd: 0,
      hosts: null,
      now: T0,
    });
    expect(without.attention.map((a) => a.kind)).toEqual([
      'failed',
      'needs_input',
      'retrying',
      'retrying',
      'retrying',
      'retrying',
    ]);
    expect(without.estimate).toBeNull();
    expect(without.hosts).toBeNull();
  });

  it('calls every queued task unservable when no host is live', () => {
    const none = buildOverview({
      tasks,
      states,
      createdAt: at(0),
      finishedAt: null,
      costUsd: 0,
      hosts: [],
      now: T0,
    });
    expect(none.attention.filter((a) => a.kind === 'unservable').map((a) => a.taskId)).toEqual([
      'again',
      'migrate',
      'pinned',
      'waits',
      'requeued',
    ]);
  });
});

describe('estimateRemaining', () => {
  const chain = [spec('a'), spec('b', ['a']), spec('c', ['b']), spec('d', ['c'])];
  const wide = [spec('a'), spec('b'), spec('c'), spec('d')];
  it.each([
    ['nothing completed: no estimate', wide, { a: state('running', { startedAt: at(0) }) }, 10, null],
    [
      'independent tasks: the rate so far (1 per 10 min) over 3 open tasks',
      wide,
      { a: state('completed', { startedAt: at(0), finishedAt: at(10) }) },
      10,
      { remainingMs: 30 * 60_000, perHour: 6, chainMs: 10 * 60_000 },
    ],
    [
      'a chain is never faster than its length at the mean duration',
      chain,
      { a: state('completed', { startedAt: at(0), finishedAt: at(2) }) },
      10,
      // rate: 1 per 10 min → 30 min; chain: 3 × 2 min = 6 min; the rate wins.
      { remainingMs: 30 * 60_000, perHour: 6, chainMs: 6 * 60_000 },
    ],
    [
      'a running task counts what is left of the mean',
      chain,
      {
        a: state('completed', { startedAt: at(0), finishedAt: at(20) }),
        b: state('running', { startedAt: at(15) }),
      },
      20,
      // rate: 1 per 20 min → 60 min for 3; chain: (20 − 5) + 20 + 20 = 55 min.
      { remainingMs: 60 * 60_000, perHour: 3, chainMs: 55 * 60_000 },
    ],
    [
      'the chain wins when it is longer than the rate says',
      [spec('a'), spec('b'), spec('c'), spec('x'), spec('y', ['x']), spec('z', ['y'])],
      {
        a: state('completed', { startedAt: at(0), finishedAt: at(30) }),
        b: state('completed', { startedAt: at(0), finishedAt: at(30) }),
        c: state('completed', { startedAt: at(0), finishedAt: at(30) }),
      },
      30,
      // rate: 3 per 30 min → 30 min for 3; chain x → y → z: 90 min.
      { remainingMs: 90 * 60_000, perHour: 6, chainMs: 90 * 60_000 },
    ],
    [
      'all finished: no estimate',
      wide.slice(0, 1),
      { a: state('completed', { startedAt: at(0), finishedAt: at(10) }) },
      10,
      null,
    ],
  ])('%s', (_name, tasks, states, elapsedMin, expected) => {
    const estimate = estimateRemaining({
      tasks,
      states,
      elapsedMs: elapsedMin * 60_000,
      now: T0 + elapsedMin * 60_000,
    });
    if (expected === null) expect(estimate).toBeNull();
    else {
      expect(estimate?.remainingMs).toBe(expected.remainingMs);
      expect(estimate?.perHour).toBeCloseTo(expected.perHour);
      expect(estimate?.chainMs).toBe(expected.chainMs);
    }
  });
});

describe('small readers', () => {
  it.each([
    [[{ question: 'Which one?', options: ['a'] }], 'Which one?'],
    [['Plain text?'], 'Plain text?'],
    [{ text: 'An object' }, 'An object'],
    [null, 'the agent asked a question'],
    [[{ other: 1 }], '{"other":1}'],
  ])('firstQuestion(%j)', (questions, expected) => {
    expect(firstQuestion(questions)).toBe(expected);
  });

  it('summarizeHosts caps a host that reports more running than slots', () => {
    expect(summarizeHosts([host('a', 5, 4), host('b', 0, 4)])).toEqual({
      total: 2,
      busy: 1,
      idle: 1,
      slots: 8,
      running: 4,
    });
  });
});
