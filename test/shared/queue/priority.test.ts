import { describe, expect, it } from 'vitest';
import type { DagTask } from '../../../src/shared/dag.js';
import {
  chainLengths,
  PRIORITY_LEVELS,
  runPriorities,
  TOP_PRIORITY,
} from '../../../src/shared/queue/priority.js';

/** `graph('b:a', 'c:a,b')`: task b depends on a, c on a and b. */
function graph(...specs: string[]): DagTask[] {
  return specs.map((spec) => {
    const [id = '', deps = ''] = spec.split(':');
    return { id, dependsOn: deps ? deps.split(',') : [] };
  });
}

const chain = (n: number) =>
  graph(...Array.from({ length: n }, (_, i) => (i === 0 ? 't0' : `t${i}:t${i - 1}`)));

describe('chainLengths', () => {
  it.each([
    ['one task', graph('a'), { a: 1 }],
    ['independent', graph('a', 'b'), { a: 1, b: 1 }],
    ['chain', graph('a', 'b:a', 'c:b'), { a: 3, b: 2, c: 1 }],
    ['diamond', graph('a', 'b:a', 'c:a', 'd:b,c'), { a: 3, b: 2, c: 2, d: 1 }],
    ['side task beside a chain', graph('a', 'b:a', 'c:b', 's:a'), { a: 3, b: 2, c: 1, s: 1 }],
  ])('%s', (_name, tasks, expected) => {
    expect(Object.fromEntries(chainLengths(tasks))).toEqual(expected);
  });

  it('walks a chain of 5,000 without overflowing the stack', () => {
    expect(chainLengths(chain(5_000)).get('t0')).toBe(5_000);
  });
});

describe('runPriorities', () => {
  it.each([
    // Relative to the mission's longest chain: a flat mission is all top level.
    ['flat mission', graph('a', 'b', 'c'), { a: 1, b: 1, c: 1 }],
    ['chain of 2', graph('a', 'b:a'), { a: 1, b: 5 }],
    ['chain of 3 with a side task', graph('a', 'b:a', 'c:b', 's'), { a: 1, b: 3, c: 6, s: 6 }],
    // Depth 8 is ordered exactly: one level per link.
    ['chain of 8', chain(8), { t0: 1, t1: 2, t2: 3, t3: 4, t4: 5, t5: 6, t6: 7, t7: 8 }],
  ])('%s', (_name, tasks, expected) => {
    expect(Object.fromEntries(runPriorities(tasks))).toEqual(expected);
  });

  it('stays within the levels however deep the mission, and never uses 0 (BullMQ: unprioritized)', () => {
    const priorities = [...runPriorities(chain(1_000)).values()];
    expect(Math.min(...priorities)).toBe(TOP_PRIORITY);
    expect(Math.max(...priorities)).toBe(PRIORITY_LEVELS);
    expect(new Set(priorities).size).toBe(PRIORITY_LEVELS);
  });

  it('a longer chain never gets a later level than a shorter one', () => {
    const tasks = graph('a', 'b:a', 'c:b', 'd:c', 'e:d', 'x', 'y:x', 'z');
    const lengths = chainLengths(tasks);
    const priorities = runPriorities(tasks);
    for (const p of tasks)
      for (const q of tasks)
        if (lengths.get(p.id)! > lengths.get(q.id)!)
          expect(priorities.get(p.id)!).toBeLessThanOrEqual(priorities.get(q.id)!);
  });
});
