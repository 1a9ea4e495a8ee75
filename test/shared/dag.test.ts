import { describe, expect, it } from 'vitest';
import type { TaskStatus } from '../../src/shared/contracts.js';
import {
  type DagTask,
  dependentsOf,
  findCycle,
  findCycles,
  longestPath,
  readyTasks,
  topologicalOrder,
  transitiveDependents,
} from '../../src/shared/dag.js';

/** `graph('b:a', 'c:a,b')`: task b depends on a, c on a and b. */
function graph(...specs: string[]): DagTask[] {
  return specs.map((spec) => {
    const [id = '', deps = ''] = spec.split(':');
    return { id, dependsOn: deps ? deps.split(',') : [] };
  });
}

const DIAMOND = graph('a', 'b:a', 'c:a', 'd:b,c');
const CHAIN = graph('a', 'b:a', 'c:b', 'd:c');
const INDEPENDENT = graph('a', 'b', 'c');
const CYCLE = graph('a:c', 'b:a', 'c:b', 'd:a');

describe('dependentsOf', () => {
  it.each([
    ['diamond', DIAMOND, { a: ['b', 'c'], b: ['d'], c: ['d'], d: [] }],
    ['chain', CHAIN, { a: ['b'], b: ['c'], c: ['d'], d: [] }],
    ['independent', INDEPENDENT, { a: [], b: [], c: [] }],
    ['cycle', CYCLE, { a: ['b', 'd'], b: ['c'], c: ['a'], d: [] }],
    ['unknown and repeated deps', graph('a:zz', 'b:a,a'), { a: ['b'], b: [] }],
  ])('%s', (_name, tasks, expected) => {
    expect(Object.fromEntries(dependentsOf(tasks))).toEqual(expected);
  });
});

describe('findCycle', () => {
  it.each([
    ['diamond', DIAMOND, null],
    ['chain', CHAIN, null],
    ['independent', INDEPENDENT, null],
    ['cycle, from the earliest task in the file', CYCLE, ['a', 'c', 'b', 'a']],
    ['cycle listed out of order', graph('c:a', 'a:b', 'b:c'), ['c', 'a', 'b', 'c']],
    ['self-dependency', graph('a:a'), ['a', 'a']],
    ['shortest way round a knot', graph('a:b', 'b:c,a', 'c:a'), ['a', 'b', 'a']],
    ['unknown dependencies are not edges', graph('a:ghost', 'b:a'), null],
  ])('%s', (_name, tasks, expected) => {
    expect(findCycle(tasks)).toEqual(expected);
  });

  it('reports each separate knot once', () => {
    const tasks = graph('a:b', 'b:a', 'c', 'd:e', 'e:f', 'f:d,a', 'g:g');
    expect(findCycles(tasks)).toEqual([
      ['a', 'b', 'a'],
      ['d', 'e', 'f', 'd'],
      ['g', 'g'],
    ]);
  });
});

describe('readyTasks', () => {
  const cases: Array<[string, DagTask[], Record<string, TaskStatus>, string[]]> = [
    ['diamond, nothing run yet', DIAMOND, {}, ['a']],
    ['diamond, one branch done', DIAMOND, { a: 'completed', b: 'completed', c: 'running', d: 'pending' }, []],
    [
      'diamond, both branches done',
      DIAMOND,
      { a: 'completed', b: 'completed', c: 'completed', d: 'pending' },
      ['d'],
    ],
    ['diamond, a failed', DIAMOND, { a: 'failed', b: 'pending', c: 'pending', d: 'pending' }, []],
    ['chain, middle', CHAIN, { a: 'completed', b: 'completed', c: 'pending', d: 'pending' }, ['c']],
    ['independent', INDEPENDENT, { a: 'queued', b: 'pending' }, ['b', 'c']],
    ['cycle never releases', CYCLE, { d: 'pending' }, []],
    ['unknown dependency never completes', graph('a:ghost'), {}, []],
  ];
  it.each(cases)('%s', (_name, tasks, states, expected) => {
    expect(readyTasks(tasks, states)).toEqual(expected);
  });
});

describe('transitiveDependents', () => {
  it.each([
    ['diamond root', DIAMOND, 'a', ['b', 'c', 'd']],
    ['diamond branch', DIAMOND, 'b', ['d']],
    ['diamond sink', DIAMOND, 'd', []],
    ['chain', CHAIN, 'b', ['c', 'd']],
    ['independent', INDEPENDENT, 'a', []],
    ['cycle terminates and leaves out the task itself', CYCLE, 'a', ['b', 'c', 'd']],
    ['unknown id', DIAMOND, 'nope', []],
  ])('%s', (_name, tasks, id, expected) => {
    expect(transitiveDependents(tasks, id)).toEqual(expected);
  });
});

describe('topologicalOrder', () => {
  it.each([
    ['diamond', DIAMOND, ['a', 'b', 'c', 'd']],
    ['chain listed backwards', graph('d:c', 'c:b', 'b:a', 'a'), ['a', 'b', 'c', 'd']],
    ['independent keeps file order', INDEPENDENT, ['a', 'b', 'c']],
    ['a task moves only as far as its dependencies need', graph('c:a', 'a', 'b'), ['a', 'c', 'b']],
  ])('%s', (_name, tasks, expected) => {
    expect(topologicalOrder(tasks)).toEqual(expected);
  });

  it('throws mission/invalid with the cycle', () => {
    expect(() => topologicalOrder(CYCLE)).toThrow(
      expect.objectContaining({ code: 'mission/invalid', message: 'dependency cycle: a → c → b → a' }),
    );
  });

  it('handles a chain far longer than the call stack', () => {
    const tasks = Array.from({ length: 50_000 }, (_, i) => ({
      id: `t${i}`,
      dependsOn: i === 0 ? [] : [`t${i - 1}`],
    }));
    const order = topologicalOrder([...tasks].reverse());
    expect(order[0]).toBe('t0');
    expect(order.at(-1)).toBe('t49999');
    expect(findCycle(tasks)).toBeNull();
  });
});

describe('longestPath', () => {
  const minutes: Record<string, number> = { a: 1, b: 5, c: 2, d: 1 };
  it.each([
    ['diamond takes the slower branch', DIAMOND, 7],
    ['chain adds everything', CHAIN, 9],
    ['independent takes the slowest task', INDEPENDENT, 5],
    ['empty mission', [], 0],
  ])('%s', (_name, tasks, expected) => {
    expect(longestPath(tasks, (task) => minutes[task.id] ?? 0)).toBe(expected);
  });

  it('counts the longest chain with unit durations', () => {
    expect(longestPath(DIAMOND, () => 1)).toBe(3);
    expect(longestPath(CHAIN, () => 1)).toBe(4);
  });
});
