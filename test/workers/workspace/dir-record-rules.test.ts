import { describe, expect, it } from 'vitest';
import {
  cleanPlan,
  dirChange,
  entriesToLook,
  outermost,
  parentOf,
  sameKeep,
} from '../../../src/workers/workspace/dir-record-rules.js';

describe('a directory record’s rules', () => {
  it.each([
    { case: 'as recorded', now: { ino: 7, ctimeMs: 1_000.25 }, change: 'same' },
    { case: 'an entry made or removed', now: { ino: 7, ctimeMs: 1_300.5 }, change: 'changed' },
    { case: 'replaced by another folder', now: { ino: 70, ctimeMs: 1_000.25 }, change: 'changed' },
    { case: 'gone, or a file now', now: null, change: 'gone' },
  ] as const)('tells a recorded folder $case: $change', ({ now, change }) => {
    expect(dirChange([7, 1_000.25], now, 2_000)).toBe(change);
  });

  it.each([
    { ctimeMs: 1_999.999, marker: 2_000, change: 'same' },
    { ctimeMs: 2_000, marker: 2_000, change: 'changed' },
    { ctimeMs: 2_000.5, marker: 2_000, change: 'changed' },
  ] as const)(
    'reads a folder recorded at $ctimeMs again when the record was written at $marker: $change',
    ({ ctimeMs, marker, change }) => {
      expect(dirChange([7, ctimeMs], { ino: 7, ctimeMs }, marker)).toBe(change);
    },
  );

  it('looks at a changed directory’s entries but its recorded folders, setup’s outputs and the top .git', () => {
    const recorded = (path: string) => ['src', 'src/lib'].includes(path);
    const top = [
      { name: '.git', isDirectory: false },
      { name: 'src', isDirectory: true },
      { name: 'new', isDirectory: true },
      { name: 'node_modules', isDirectory: true },
      { name: 'a.txt', isDirectory: false },
    ];
    expect(entriesToLook('', top, recorded, ['/node_modules/'])).toEqual(['new', 'a.txt']);
    const inner = [
      { name: 'lib', isDirectory: true },
      { name: '.git', isDirectory: true },
      { name: 'x.c', isDirectory: false },
    ];
    expect(entriesToLook('src', inner, recorded, [])).toEqual(['src/.git', 'src/x.c']);
    // A recorded name that is a file now is looked at.
    expect(entriesToLook('src', [{ name: 'lib', isDirectory: false }], recorded, [])).toEqual(['src/lib']);
  });

  it.each([
    { paths: ['x', 'x/build/o.o', 'y/z', 'xy'], out: ['x', 'y/z', 'xy'] },
    { paths: ['a/b/c', 'a/b', 'a/b'], out: ['a/b'] },
    { paths: [], out: [] },
  ])('keeps only the outermost of $paths', ({ paths, out }) => {
    expect(outermost(paths)).toEqual(out);
  });

  it('compares keep lists as sets', () => {
    expect(sameKeep(['/a/', '/b/'], ['/b/', '/a/'])).toBe(true);
    expect(sameKeep(['/a/'], ['/a/', '/b/'])).toBe(false);
    expect(sameKeep([], [])).toBe(true);
  });

  it.each([
    {
      case: 'the changed folders’ entries alone',
      entries: ['a.txt', 'new'],
      changed: [''],
      unstaged: [''],
      plan: { paths: ['a.txt', 'new'], touched: [''] },
    },
    {
      case: 'a path the index alone moved, in a folder that did not change',
      entries: [],
      changed: [],
      unstaged: ['lib/deep/two.txt', ''],
      plan: { paths: ['lib/deep/two.txt'], touched: ['lib/deep'] },
    },
    {
      case: 'a staged file inside a new folder: the folder alone, whole',
      entries: ['made'],
      changed: [''],
      unstaged: ['made/deep/staged.txt'],
      plan: { paths: ['made'], touched: ['', 'made/deep'] },
    },
    {
      case: 'setup’s kept output staged: left alone',
      entries: [],
      changed: [],
      unstaged: ['node_modules/pkg/index.js'],
      plan: { paths: [], touched: [] },
    },
  ])('plans the scanned reset’s clean: $case', ({ entries, changed, unstaged, plan }) => {
    expect(cleanPlan(entries, changed, unstaged, ['/node_modules/'])).toEqual(plan);
  });

  it.each([
    ['a.txt', ''],
    ['lib/deep/two.txt', 'lib/deep'],
  ])('puts %s in folder %j', (path, parent) => {
    expect(parentOf(path)).toBe(parent);
  });
});
