import { describe, expect, it } from 'vitest';
import {
  criticalPath,
  type DagTask,
  depthsOf,
  longestChain,
  neighbourhood,
  topologicalOrder,
} from '../../src/board/task-dag.js';

function graph(...specs: string[]): DagTask[] {
  return specs.map((spec) => {
    const [id = '', deps = ''] = spec.split(':');
    return { id, dependsOn: deps ? deps.split(',') : [] };
  });
}

const DIAMOND = graph('a', 'b:a', 'c:a', 'd:b,c');

describe('topologicalOrder and depthsOf', () => {
  it.each([
    ['diamond', DIAMOND, { a: 0, b: 1, c: 1, d: 2 }],
    ['dependency listed later', graph('b:a', 'a'), { a: 0, b: 1 }],
    ['longest chain decides', graph('a', 'b:a', 'c:a,b'), { a: 0, b: 1, c: 2 }],
    ['unknown dependency ignored', graph('a:ghost'), { a: 0 }],
    ['a cycle is left out, the rest kept', graph('x', 'a:c', 'b:a', 'c:b'), { x: 0 }],
  ])('%s', (_name, tasks, expected) => {
    expect(Object.fromEntries(depthsOf(tasks))).toEqual(expected);
    const order = topologicalOrder(tasks);
    for (const task of tasks) {
      for (const dep of task.dependsOn) {
        if (order.includes(dep) && order.includes(task.id))
          expect(order.indexOf(dep)).toBeLessThan(order.indexOf(task.id));
      }
    }
  });

  it('handles a 10,000-task chain without recursion', () => {
    const chain = Array.from({ length: 10_000 }, (_, i) => ({
      id: `t${i}`,
      dependsOn: i ? [`t${i - 1}`] : [],
    }));
    expect(depthsOf(chain).get('t9999')).toBe(9_999);
    expect(criticalPath(chain, () => 1)).toHaveLength(10_000);
  });
});

describe('criticalPath', () => {
  const weights = (w: Record<string, number>) => (id: string) => w[id] ?? 0;
  it.each([
    ['the heavier branch of a diamond', DIAMOND, { a: 1, b: 5, c: 2, d: 1 }, ['a', 'b', 'd'], 7],
    ['the other branch when it is heavier', DIAMOND, { a: 1, b: 1, c: 9, d: 1 }, ['a', 'c', 'd'], 11],
    ['a tie goes to the task listed first', DIAMOND, { a: 1, b: 2, c: 2, d: 1 }, ['a', 'b', 'd'], 4],
    ['a heavy lone task beats a light chain', graph('a', 'b:a', 'z'), { a: 1, b: 1, z: 5 }, ['z'], 5],
    ['negative weights count as zero', graph('a', 'b:a'), { a: -3, b: 2 }, ['b'], 2],
    ['empty', [], {}, [], 0],
  ])('%s', (_name, tasks, w, path, total) => {
    expect(criticalPath(tasks, weights(w))).toEqual(path);
    expect(longestChain(tasks, weights(w))).toBe(total);
  });
});

describe('neighbourhood', () => {
  // a → b → c → d → e, and x → c, c → y
  const tasks = graph('a', 'b:a', 'x', 'c:b,x', 'd:c', 'e:d', 'y:c');
  it.each([
    ['one level each way', 'c', 1, 150, ['b', 'c', 'd', 'x', 'y'], false],
    ['two levels each way', 'c', 2, 150, ['a', 'b', 'c', 'd', 'e', 'x', 'y'], false],
    ['a root: dependents only', 'a', 2, 150, ['a', 'b', 'c'], false],
    ['zero levels: the task alone', 'c', 0, 150, ['c'], false],
    ['the limit cuts a level, dependencies first', 'c', 1, 3, ['b', 'c', 'x'], true],
    ['an unknown task: nothing', 'ghost', 2, 150, [], false],
  ])('%s', (_name, id, levels, limit, expected, truncated) => {
    const near = neighbourhood(tasks, id, levels, limit);
    expect([...near.ids].sort()).toEqual(expected);
    expect(near.truncated).toBe(truncated);
  });
});
