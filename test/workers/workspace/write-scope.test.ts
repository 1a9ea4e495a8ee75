import { describe, expect, it } from 'vitest';
import { parsePorcelainV2Z } from '../../../src/workers/workspace/snapshot-changes.js';
import {
  describeViolations,
  limitsWrites,
  scopeViolations,
} from '../../../src/workers/workspace/write-scope.js';

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

describe('limitsWrites', () => {
  const cases: [string, string[] | undefined, boolean, boolean][] = [
    ['no list, guarded: no limit (no git status needed)', undefined, false, false],
    ['blank entries only: no limit', ['', '  '], false, false],
    ['a list: a limit', ['src/'], false, true],
    ['read-only: a limit even without a list', undefined, true, true],
  ];
  it.each(cases)('%s', (_name, allowed, readOnly, expected) => {
    expect(limitsWrites(allowed, readOnly)).toBe(expected);
    // Consistent with scopeViolations: without a limit nothing is ever a violation.
    if (!expected) expect(scopeViolations(['a', 'src/b'], allowed, readOnly)).toEqual([]);
  });
});

describe('describeViolations', () => {
  it('is empty without violations and cuts long lists', () => {
    expect(describeViolations([])).toBe('');
    expect(describeViolations(['a', 'b'])).toBe('a, b');
    expect(describeViolations(['a', 'b', 'c'], 2)).toBe('a, b and 1 more');
  });
});

describe('parsePorcelainV2Z', () => {
  const oid = 'a'.repeat(40);
  const entry = (xy: string, path: string) => `1 ${xy} N... 100644 100644 100644 ${oid} ${oid} ${path}`;
  it('reads HEAD and modified, untracked, deleted, renamed and unmerged entries, names with spaces kept', () => {
    const output = [
      `# branch.oid ${oid}`,
      '# branch.head (detached)',
      entry('.M', 'src/a.ts'),
      '? new file.txt',
      entry('.D', 'gone.md'),
      `2 R. N... 100644 100644 100644 ${oid} ${oid} R100 to.ts`,
      'from.ts',
      entry('A.', '"q".ts'),
      `u UU N... 100644 100644 100644 100644 ${oid} ${oid} ${oid} both.txt`,
      '! build/',
      entry('.M', 'src/a.ts'),
      '',
    ].join('\0');
    expect(parsePorcelainV2Z(output)).toEqual({
      head: oid,
      changes: [
        { path: 'src/a.ts', untracked: false },
        { path: 'new file.txt', untracked: true },
        { path: 'gone.md', untracked: false },
        { path: 'to.ts', untracked: false },
        { path: 'from.ts', untracked: false },
        { path: '"q".ts', untracked: false },
        { path: 'both.txt', untracked: false },
      ],
      ignored: ['build/'],
    });
  });

  it('returns nothing for a clean tree, and no HEAD before the first commit', () => {
    expect(parsePorcelainV2Z(`# branch.oid ${oid}\0`)).toEqual({ head: oid, changes: [], ignored: [] });
    expect(parsePorcelainV2Z('# branch.oid (initial)\0? a\0')).toEqual({
      head: null,
      changes: [{ path: 'a', untracked: true }],
      ignored: [],
    });
  });
});
