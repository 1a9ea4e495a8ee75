import { describe, expect, it } from 'vitest';
import { parsePorcelainZ } from '../../src/workspace/snapshot-changes.js';
import { describeViolations, scopeViolations } from '../../src/workspace/write-scope.js';

describe('scopeViolations', () => {
  const cases: Array<{
    name: string;
    changed: string[];
    allowed: string[] | undefined;
    readOnly: boolean;
    expected: string[];
  }> = [
    {
      name: 'no allowed paths means no limit',
      changed: ['a.ts', 'src/b.ts'],
      allowed: undefined,
      readOnly: false,
      expected: [],
    },
    { name: 'an empty list means no limit', changed: ['a.ts'], allowed: [], readOnly: false, expected: [] },
    { name: 'blank entries are ignored', changed: ['a.ts'], allowed: ['  '], readOnly: false, expected: [] },
    {
      name: 'a file under a directory entry',
      changed: ['src/a.ts', 'src/x/y.ts'],
      allowed: ['src/'],
      readOnly: false,
      expected: [],
    },
    {
      name: 'a file outside every entry',
      changed: ['src/a.ts', 'README.md'],
      allowed: ['src/'],
      readOnly: false,
      expected: ['README.md'],
    },
    {
      name: 'an exact file entry',
      changed: ['package.json', 'package-lock.json'],
      allowed: ['package.json'],
      readOnly: false,
      expected: ['package-lock.json'],
    },
    {
      name: 'a directory named without a slash',
      changed: ['src/a.ts'],
      allowed: ['src'],
      readOnly: false,
      expected: [],
    },
    {
      name: 'a prefix is not a directory',
      changed: ['src2/a.ts', 'srcfile'],
      allowed: ['src'],
      readOnly: false,
      expected: ['src2/a.ts', 'srcfile'],
    },
    {
      name: 'a leading ./ is ignored',
      changed: ['test/a.test.ts'],
      allowed: ['./test/'],
      readOnly: false,
      expected: [],
    },
    {
      name: 'dir/** reads as the directory',
      changed: ['docs/a/b.md', 'doc.md'],
      allowed: ['docs/**'],
      readOnly: false,
      expected: ['doc.md'],
    },
    { name: '. allows everything', changed: ['a', 'b/c'], allowed: ['.'], readOnly: false, expected: [] },
    {
      name: 'several entries',
      changed: ['src/a.ts', 'test/a.ts', 'bin/x'],
      allowed: ['src/', 'test/'],
      readOnly: false,
      expected: ['bin/x'],
    },
    {
      name: '.planning is never a violation',
      changed: ['.planning/dispatch/t-a1-RESULT.md', 'x'],
      allowed: ['src/'],
      readOnly: false,
      expected: ['x'],
    },
    {
      name: 'read-only: every change is a violation',
      changed: ['src/a.ts', 'b'],
      allowed: ['src/'],
      readOnly: true,
      expected: ['b', 'src/a.ts'],
    },
    {
      name: 'read-only without allowed paths',
      changed: ['a'],
      allowed: undefined,
      readOnly: true,
      expected: ['a'],
    },
    {
      name: 'read-only still spares .planning',
      changed: ['.planning/dispatch/t-PROMPT.md'],
      allowed: undefined,
      readOnly: true,
      expected: [],
    },
    {
      name: 'duplicates are reported once, sorted',
      changed: ['z', 'a', 'z'],
      allowed: ['src/'],
      readOnly: false,
      expected: ['a', 'z'],
    },
    {
      name: 'a look-alike of .planning is not spared',
      changed: ['.planning-notes.md'],
      allowed: ['src/'],
      readOnly: false,
      expected: ['.planning-notes.md'],
    },
  ];

  for (const { name, changed, allowed, readOnly, expected } of cases) {
    it(name, () => {
      expect(scopeViolations(changed, allowed, readOnly)).toEqual(expected);
    });
  }
});

describe('describeViolations', () => {
  it('is empty without violations and cuts long lists', () => {
    expect(describeViolations([])).toBe('');
    expect(describeViolations(['a', 'b'])).toBe('a, b');
    expect(describeViolations(['a', 'b', 'c'], 2)).toBe('a, b and 1 more');
  });
});

describe('parsePorcelainZ', () => {
  it('reads modified, untracked, deleted and renamed entries, with names that need no quoting', () => {
    const output = [
      ' M src/a.ts',
      '?? new file.txt',
      ' D gone.md',
      'R  to.ts',
      'from.ts',
      'A  "q".ts',
      '',
    ].join('\0');
    expect(parsePorcelainZ(output)).toEqual([
      { path: 'src/a.ts', untracked: false },
      { path: 'new file.txt', untracked: true },
      { path: 'gone.md', untracked: false },
      { path: 'to.ts', untracked: false },
      { path: 'from.ts', untracked: false },
      { path: '"q".ts', untracked: false },
    ]);
  });

  it('returns nothing for a clean tree', () => {
    expect(parsePorcelainZ('')).toEqual([]);
  });
});
