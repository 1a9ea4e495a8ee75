import { describe, expect, it } from 'vitest';
import { type GraphTask, layoutGraph, taskDepths } from '../../src/board/graph-layout.js';
import { type GraphNodeInfo, renderGraphSvg, truncate } from '../../src/board/graph-svg.js';

function graph(...specs: string[]): GraphTask[] {
  return specs.map((spec) => {
    const [id = '', deps = ''] = spec.split(':');
    return { id, dependsOn: deps ? deps.split(',') : [] };
  });
}

const DIAMOND = graph('a', 'b:a', 'c:a', 'd:b,c');

describe('taskDepths', () => {
  it.each([
    ['diamond', DIAMOND, { a: 0, b: 1, c: 1, d: 2 }],
    ['chain', graph('a', 'b:a', 'c:b'), { a: 0, b: 1, c: 2 }],
    ['longest path wins', graph('a', 'b:a', 'c:a,b'), { a: 0, b: 1, c: 2 }],
    ['independent', graph('a', 'b'), { a: 0, b: 0 }],
    ['unknown dependency ignored', graph('a:ghost'), { a: 0 }],
    ['dependency listed later', graph('b:a', 'a'), { a: 0, b: 1 }],
  ])('%s', (_name, tasks, expected) => {
    expect(Object.fromEntries(taskDepths(tasks))).toEqual(expected);
  });

  it('terminates on a cycle', () => {
    const depths = taskDepths(graph('a:c', 'b:a', 'c:b'));
    expect([...depths.keys()].sort()).toEqual(['a', 'b', 'c']);
  });
});

describe('layoutGraph', () => {
  const options = { nodeWidth: 100, nodeHeight: 40, gapX: 50, gapY: 10, padding: 5 };

  it('puts each depth in its own column and centres short columns', () => {
    const layout = layoutGraph(DIAMOND, options);
    const at = Object.fromEntries(layout.nodes.map((n) => [n.id, { x: n.x, y: n.y, layer: n.layer }]));
    expect(at.a).toEqual({ x: 5, y: 30, layer: 0 });
    expect(at.b).toEqual({ x: 155, y: 5, layer: 1 });
    expect(at.c).toEqual({ x: 155, y: 55, layer: 1 });
    expect(at.d).toEqual({ x: 305, y: 30, layer: 2 });
    expect(layout.width).toBe(5 * 2 + 3 * 100 + 2 * 50);
    expect(layout.height).toBe(5 * 2 + 2 * 40 + 10);
  });

  it('has one edge per known dependency, duplicates merged', () => {
    const layout = layoutGraph(graph('a', 'b:a,a,ghost', 'c:a,b'), options);
    expect(layout.edges).toEqual([
      { from: 'a', to: 'b' },
      { from: 'a', to: 'c' },
      { from: 'b', to: 'c' },
    ]);
  });

  it('orders a column by the mean row of its dependencies', () => {
    // x depends on the bottom root, y on the top one: y is drawn above x.
    const layout = layoutGraph(graph('top', 'bottom', 'x:bottom', 'y:top'), options);
    const row = Object.fromEntries(layout.nodes.map((n) => [n.id, n.row]));
    expect(row).toEqual({ top: 0, bottom: 1, y: 0, x: 1 });
  });

  it('lays out nothing for no tasks', () => {
    expect(layoutGraph([], options)).toMatchObject({ nodes: [], edges: [], width: 0, height: 0 });
  });
});

describe('renderGraphSvg', () => {
  const tasks: GraphNodeInfo[] = DIAMOND.map((t, i) => ({
    ...t,
    title: i === 0 ? 'Set <b>up</b> & go' : `Task ${t.id}`,
    status: ['completed', 'failed', 'completed', 'skipped'][i] ?? 'pending',
    score: i === 0 ? 9 : null,
    attempts: i === 1 ? 3 : 1,
  }));
  const svg = renderGraphSvg(tasks).value;

  it('draws one node per task and one arrow per dependency', () => {
    expect(svg.match(/<a class="node"/g)).toHaveLength(4);
    expect(svg.match(/<path class="edge/g)).toHaveLength(4);
    expect(svg).toContain('data-from="b" data-to="d"');
    expect(svg).toContain('marker-end="url(#arrow)"');
  });

  it('colours nodes by status and says status, score and attempts', () => {
    expect(svg).toContain('data-task="b" data-status="failed"');
    expect(svg).toContain('stroke="#c62828"');
    expect(svg).toContain('completed · score 9');
    expect(svg).toContain('failed · 3 attempts');
    expect(svg).toContain('class="edge blocked" data-from="b" data-to="d"');
  });

  it('escapes titles', () => {
    expect(svg).toContain('Set &lt;b&gt;up&lt;/b&gt; &amp; go');
    expect(svg).not.toContain('<b>');
  });
});

describe('truncate', () => {
  it('keeps short text and cuts long text with an ellipsis, counting code points', () => {
    expect(truncate('short', 10)).toBe('short');
    expect(truncate('abcdefghijk', 5)).toBe('abcd…');
    expect(truncate('✓✓✓✓✓✓', 4)).toBe('✓✓✓…');
  });
});
