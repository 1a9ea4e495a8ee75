import { describe, expect, it } from 'vitest';
import type { MonitoredChange } from '../../../src/workers/workspace/file-monitor.js';
import {
  ancestorsOf,
  candidatePaths,
  parseLsTree,
  resetPlan,
  type TreeEntry,
} from '../../../src/workers/workspace/monitored-paths.js';

const file = (name: string, exists = true, isNew = false): MonitoredChange => ({
  name,
  exists,
  type: 'f',
  new: isNew,
});
const dir = (name: string, exists = true, isNew = false): MonitoredChange => ({
  name,
  exists,
  type: 'd',
  new: isNew,
});

describe('candidatePaths', () => {
  it.each([
    ['a changed file', [file('a.txt')], [], { files: ['a.txt'], dirs: [] }],
    ['a deleted file', [file('b.txt', false)], [], { files: ['b.txt'], dirs: [] }],
    [
      'a folder that only changed is not listed',
      [dir('src'), file('src/x.ts')],
      [],
      { files: ['src/x.ts'], dirs: [] },
    ],
    [
      'a new folder is',
      [dir('new', true, true), file('new/a', true, true)],
      [],
      { files: ['new/a'], dirs: ['new'] },
    ],
    ['a removed folder is', [dir('lib', false)], [], { files: [], dirs: ['lib'] }],
    [
      'a symlink counts as a file',
      [{ name: 'l', exists: true, type: 'l', new: true }],
      [],
      { files: ['l'], dirs: [] },
    ],
    [
      "setup's kept output is left out",
      [file('node_modules/x/i.js'), file('a')],
      ['/node_modules/'],
      { files: ['a'], dirs: [] },
    ],
    [
      'so is a nested kept folder itself',
      [dir('pkg/node_modules', true, true)],
      ['/pkg/node_modules/'],
      { files: [], dirs: [] },
    ],
    [
      'a file or a link where a kept folder was is looked at',
      [file('node_modules'), { name: 'pkg/node_modules', exists: true, type: 'l', new: true }],
      ['/node_modules/', '/pkg/node_modules/'],
      { files: ['node_modules', 'pkg/node_modules'], dirs: [] },
    ],
    ["a kept file's own change is not", [file('out.log')], ['/out.log'], { files: [], dirs: [] }],
    [
      'a kept name is a path, not a prefix of names',
      [file('node_modules2')],
      ['/node_modules/'],
      { files: ['node_modules2'], dirs: [] },
    ],
    ["git's own file and the root are left out", [file('.git'), dir('', true)], [], { files: [], dirs: [] }],
    ['each path once, sorted', [file('b'), file('a'), file('b')], [], { files: ['a', 'b'], dirs: [] }],
  ])('%s', (_name, changes, keep, expected) => {
    expect(candidatePaths(changes, keep)).toEqual(expected);
  });

  it('gives up (null) beyond the limit, so the caller walks', () => {
    const changes = Array.from({ length: 11 }, (_, i) => file(`f${i}`));
    expect(candidatePaths(changes, [], 10)).toBeNull();
    expect(candidatePaths(changes.slice(0, 10), [], 10)?.files).toHaveLength(10);
  });
});

describe('parseLsTree', () => {
  it('reads mode, id and path, tabs and spaces in names included', () => {
    const out = '100644 blob aaaa\ta b.txt\u0000120000 blob bbbb\tlink\u0000100755 blob cccc\tdir/x\ty\u0000';
    expect(parseLsTree(out)).toEqual([
      { mode: '100644', oid: 'aaaa', path: 'a b.txt' },
      { mode: '120000', oid: 'bbbb', path: 'link' },
      { mode: '100755', oid: 'cccc', path: 'dir/x\ty' },
    ]);
  });
});

const entry = (path: string, oid = 'o'.repeat(4), mode = '100644'): TreeEntry => ({ mode, oid, path });

describe('resetPlan', () => {
  it.each([
    {
      name: 'a changed tracked file is put back from the target',
      files: ['a'],
      dirs: [],
      indexDiff: [],
      target: [entry('a')],
      plan: { remove: [], removeUnlessDir: [], restore: ['a'] },
    },
    {
      name: 'an untracked file goes from disk; one staged goes from the index too',
      files: ['new.txt', 'loose.txt'],
      dirs: [],
      indexDiff: ['new.txt'],
      target: [],
      plan: { remove: ['loose.txt', 'new.txt'], removeUnlessDir: [], restore: ['new.txt'] },
    },
    {
      name: 'a path moved in the index alone (the base moved, or the agent staged it) is restored',
      files: [],
      dirs: [],
      indexDiff: ['moved.txt', 'dropped.txt'],
      target: [entry('moved.txt')],
      plan: { remove: [], removeUnlessDir: [], restore: ['dropped.txt', 'moved.txt'] },
    },
    {
      name: 'a new folder the target lacks goes whole',
      files: ['build/a.o'],
      dirs: ['build'],
      indexDiff: [],
      target: [],
      plan: { remove: ['build', 'build/a.o'], removeUnlessDir: [], restore: [] },
    },
    {
      name: 'a removed folder comes back with every file the target has below it',
      files: [],
      dirs: ['lib'],
      indexDiff: [],
      target: [entry('lib/x'), entry('lib/y/z', 'zzzz', '100755')],
      plan: { remove: [], removeUnlessDir: ['lib'], restore: ['lib/x', 'lib/y/z'] },
    },
    {
      name: 'a file where the target has a folder is removed unless it is that folder',
      files: ['d'],
      dirs: [],
      indexDiff: [],
      target: [entry('d/f')],
      plan: { remove: [], removeUnlessDir: ['d'], restore: ['d/f'] },
    },
    {
      name: 'a new folder of the attempt that the target also has keeps the target’s files only',
      files: ['both/mine.txt', 'both/theirs.txt'],
      dirs: ['both'],
      indexDiff: [],
      target: [entry('both/theirs.txt')],
      plan: { remove: ['both/mine.txt'], removeUnlessDir: ['both'], restore: ['both/theirs.txt'] },
    },
  ])('$name', ({ files, dirs, indexDiff, target, plan }) => {
    expect(resetPlan({ files, dirs }, indexDiff, target)).toEqual(plan);
  });

  it('empties the folders it is told to keep instead of removing them', () => {
    const candidates = {
      files: ['.planning/dispatch/t1-a1-PROMPT.md', 'new/x'],
      dirs: ['.planning', '.planning/dispatch', 'new'],
    };
    expect(resetPlan(candidates, [], [], ['.planning', '.planning/dispatch'])).toEqual({
      remove: ['.planning/dispatch/t1-a1-PROMPT.md', 'new', 'new/x'],
      removeUnlessDir: [],
      restore: [],
    });
  });
});

describe('ancestorsOf', () => {
  it.each([
    ['a top-level file has none', ['a'], [], []],
    ['each folder above, once', ['x/y/a', 'x/y/b', 'x/c'], [], ['x', 'x/y']],
    ['a listed folder is not asked about', ['x/y/a'], ['x/y'], ['x']],
    ['a folder made where a file was is asked about', ['c.txt/inner'], [], ['c.txt']],
  ])('%s', (_name, files, dirs, expected) => {
    expect(ancestorsOf({ files, dirs })).toEqual(expected);
  });
});
