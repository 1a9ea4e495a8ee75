import { describe, expect, it } from 'vitest';
import {
  type AcquireDecision,
  canClaim,
  decideAcquire,
  type EntryState,
  keepOnRelease,
  type PoolEntry,
} from '../../../src/workers/workspace/pool-rules.js';
import { claimCleanup, setupOutputs } from '../../../src/workers/workspace/setup.js';

const NOW = 100_000;
const limits = { keep: 2, max: 4, growAfterMs: 2_000, stealAfterMs: 5_000 };
const idle = (since: number): EntryState => ({ kind: 'idle', since });
const leased: EntryState = { kind: 'leased' };
const parked = (since: number, until: number, key = 'm/t/1'): EntryState => ({
  kind: 'parked',
  key,
  commit: 'c1',
  since,
  until,
});
const entries = (...states: EntryState[]): PoolEntry[] =>
  states.map((state, i) => ({ id: `c${i + 1}`, state }));

describe('decideAcquire', () => {
  const cases: [string, PoolEntry[], number, AcquireDecision][] = [
    ['empty pool: make one', entries(), 0, { action: 'create' }],
    ['an idle one before making one', entries(leased, idle(NOW - 10)), 0, { action: 'take', id: 'c2' }],
    ['the longest idle first', entries(idle(NOW - 10), idle(NOW - 500)), 0, { action: 'take', id: 'c2' }],
    ['below keep with all busy: make one', entries(leased), 0, { action: 'create' }],
    [
      'a parked one is not taken while the pool may grow',
      entries(parked(NOW - 9_000, NOW + 1)),
      0,
      { action: 'create' },
    ],
    ['at keep, all leased, a short wait: wait', entries(leased, leased), 1_000, { action: 'wait' }],
    [
      'at keep, all leased, waited long: grow beyond keep',
      entries(leased, leased),
      2_000,
      { action: 'create' },
    ],
    [
      'at max, all leased: wait however long',
      entries(leased, leased, leased, leased),
      60_000,
      { action: 'wait' },
    ],
    [
      'at keep, parked recently, a short wait: wait for its verify',
      entries(leased, parked(NOW - 100, NOW + 60_000)),
      1_000,
      { action: 'wait' },
    ],
    [
      'at max, parked recently: wait for its verify however long',
      entries(leased, leased, leased, parked(NOW - 100, NOW + 60_000)),
      60_000,
      { action: 'wait' },
    ],
    [
      'at keep, parked long ago but the caller just came: wait',
      entries(leased, parked(NOW - 9_000, NOW + 60_000)),
      0,
      { action: 'wait' },
    ],
    [
      'at max, parked long ago and the caller waited: steal it',
      entries(leased, leased, leased, parked(NOW - 9_000, NOW + 60_000)),
      5_000,
      { action: 'take', id: 'c4' },
    ],
    [
      'an expired park is free at once',
      entries(leased, parked(NOW - 200_000, NOW - 1)),
      0,
      { action: 'take', id: 'c2' },
    ],
    [
      'an expired park before making one',
      entries(parked(NOW - 200_000, NOW - 1)),
      0,
      { action: 'take', id: 'c1' },
    ],
    [
      'beyond max (a shrunk pool): still wait',
      entries(leased, leased, leased, leased, leased),
      60_000,
      { action: 'wait' },
    ],
  ];
  it.each(cases)('%s', (_name, list, waited, expected) => {
    expect(decideAcquire(list, limits, NOW, waited)).toEqual(expected);
  });
});

describe('canClaim', () => {
  const cases: [string, EntryState, string, string, boolean][] = [
    ['the parked attempt at its commit', parked(NOW - 1, NOW + 1), 'm/t/1', 'c1', true],
    ['another attempt', parked(NOW - 1, NOW + 1), 'm/t/2', 'c1', false],
    ['another commit (a re-delivered run pushed anew)', parked(NOW - 1, NOW + 1), 'm/t/1', 'c2', false],
    ['expired', parked(NOW - 10, NOW), 'm/t/1', 'c1', false],
    ['idle (taken meanwhile and released)', idle(NOW), 'm/t/1', 'c1', false],
    ['leased by someone else', leased, 'm/t/1', 'c1', false],
  ];
  it.each(cases)('%s', (_name, state, key, commit, expected) => {
    expect(canClaim(state, key, commit, NOW)).toBe(expected);
  });
});

describe('keepOnRelease', () => {
  const cases: [string, number, number, boolean, boolean][] = [
    ['within max, healthy', 4, 4, true, true],
    ['a failed reset: discarded', 1, 4, false, false],
    ['beyond max: discarded', 5, 4, true, false],
  ];
  it.each(cases)('%s', (_name, total, max, healthy, expected) => {
    expect(keepOnRelease({ total, max, healthy })).toBe(expected);
  });
});

describe('setupOutputs', () => {
  const cases: [string, string[], string[], string[], string[]][] = [
    ['first setup keeps what it made', [], ['/node_modules/'], [], ['/node_modules/']],
    [
      'kept outputs stay kept',
      ['/node_modules/'],
      ['/node_modules/', '/.cache/'],
      ['/node_modules/'],
      ['/node_modules/', '/.cache/'],
    ],
    [
      'an agent’s ignored output present before setup is not kept',
      ['/dist/'],
      ['/dist/', '/node_modules/'],
      [],
      ['/node_modules/'],
    ],
    ['outputs setup no longer makes are dropped', ['/node_modules/'], [], ['/node_modules/'], []],
  ];
  it.each(cases)('%s', (_name, before, after, earlier, expected) => {
    expect(setupOutputs(before, after, earlier)).toEqual(expected);
  });
});

describe('claimCleanup', () => {
  it.each([
    { name: 'nothing ignored', ignored: [], keep: [], expected: { kind: 'none' } },
    {
      name: "only setup's output",
      ignored: ['node_modules/'],
      keep: ['/node_modules/'],
      expected: { kind: 'none' },
    },
    {
      name: "the agent's build output goes, setup's stays",
      ignored: ['dist/', 'node_modules/', 'a.log'],
      keep: ['/node_modules/'],
      expected: { kind: 'remove', paths: ['dist', 'a.log'] },
    },
    {
      name: 'a file inside a kept folder stays',
      ignored: ['src/build/y.log'],
      keep: ['/src/build/'],
      expected: { kind: 'none' },
    },
    {
      name: "flotilla's .planning/ is never touched",
      ignored: ['.planning/'],
      keep: [],
      expected: { kind: 'none' },
    },
    {
      name: 'an ignored folder holding a kept one is left to git clean',
      ignored: ['build/'],
      keep: ['/build/gen/'],
      expected: { kind: 'git-clean' },
    },
    {
      name: 'a prefix is not a parent',
      ignored: ['node_modules2/'],
      keep: ['/node_modules/'],
      expected: { kind: 'remove', paths: ['node_modules2'] },
    },
  ])('$name', ({ ignored, keep, expected }) => {
    expect(claimCleanup(ignored, keep)).toEqual(expected);
  });
});
