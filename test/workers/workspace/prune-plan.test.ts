import { describe, expect, it } from 'vitest';
import { type PruneInput, planPrune } from '../../../src/workers/workspace/prune.js';

const DAY = 86_400_000;
const NOW = 100 * DAY;
const at = (daysAgo: number) => NOW - daysAgo * DAY;

const cache = (key: string, daysAgo: number, partial = false) => ({
  path: `/h/repos/${key}${partial ? '.tmp-1' : ''}`,
  key,
  partial,
  mtimeMs: at(daysAgo),
});
const slot = (name: string, daysAgo: number, free = true) => ({
  path: `/h/checkouts/${name}`,
  mtimeMs: at(daysAgo),
  free,
});
const pool = (slotName: string, key: string, own: boolean, checkoutAges: number[]) => ({
  path: `/h/checkouts/${slotName}/${key}`,
  slot: `/h/checkouts/${slotName}`,
  key,
  own,
  mtimeMs: at(0),
  checkouts: checkoutAges.map((daysAgo, i) => ({
    path: `/h/checkouts/${slotName}/${key}/c${i + 1}`,
    mtimeMs: at(daysAgo),
  })),
});

const input = (parts: Partial<PruneInput>): PruneInput => ({
  now: NOW,
  maxAgeMs: 14 * DAY,
  keep: 2,
  caches: [],
  slots: [],
  pools: [],
  ...parts,
});

describe('planPrune', () => {
  const cases: [string, PruneInput, string[]][] = [
    [
      'nothing old: nothing goes',
      input({
        caches: [cache('a', 1)],
        slots: [slot('p0', 0, false)],
        pools: [pool('p0', 'a', true, [0, 1])],
      }),
      [],
    ],
    [
      'a cache unused past the limit goes, with its pools',
      input({ caches: [cache('a', 20)], slots: [slot('p0', 0, false)], pools: [pool('p0', 'a', true, [0])] }),
      ['/h/repos/a', '/h/checkouts/p0/a'],
    ],
    [
      'a pool whose cache is gone goes',
      input({ caches: [], slots: [slot('p0', 0, false)], pools: [pool('p0', 'b', true, [0])] }),
      ['/h/checkouts/p0/b'],
    ],
    [
      'this host keeps its newest `keep` checkouts per pool',
      input({
        caches: [cache('a', 0)],
        slots: [slot('p0', 0, false)],
        pools: [pool('p0', 'a', true, [3, 1, 2, 0])],
      }),
      ['/h/checkouts/p0/a/c1', '/h/checkouts/p0/a/c3'],
    ],
    [
      "a free slot's checkouts are not trimmed to keep (its next owner may have more slots)",
      input({
        caches: [cache('a', 0)],
        slots: [slot('p1', 1)],
        pools: [pool('p1', 'a', false, [3, 1, 2, 0])],
      }),
      [],
    ],
    [
      'old checkouts go anywhere',
      input({ caches: [cache('a', 0)], slots: [slot('p1', 1)], pools: [pool('p1', 'a', false, [30, 1])] }),
      ['/h/checkouts/p1/a/c1'],
    ],
    [
      'a free slot unused past the limit goes whole',
      input({ caches: [cache('a', 0)], slots: [slot('p1', 30)], pools: [pool('p1', 'a', false, [30])] }),
      ['/h/checkouts/p1'],
    ],
    [
      'a half-made clone goes after an hour, and is never taken for the cache',
      input({ caches: [cache('a', 0), { ...cache('a', 0, true), mtimeMs: NOW - 2 * 3_600_000 }] }),
      ['/h/repos/a.tmp-1'],
    ],
    [
      'a half-made clone younger than an hour stays (a clone in progress)',
      input({ caches: [cache('a', 0, true)] }),
      [],
    ],
  ];
  it.each(cases)('%s', (_name, plan, expected) => {
    expect(planPrune(plan).sort()).toEqual([...expected].sort());
  });
});
