import { describe, expect, it } from 'vitest';
import {
  changedDirs,
  entriesToLook,
  isRacy,
  outermost,
  sameKeep,
  signature,
} from '../../src/workspace/dir-record-rules.js';

describe('a directory record’s rules', () => {
  it.each([
    { recorded: signature(7n, 1_000n), marker: 2_000n, racy: false },
    { recorded: signature(7n, 2_000n), marker: 2_000n, racy: true },
    { recorded: signature(7n, 2_001n), marker: 2_000n, racy: true },
    { recorded: '7:', marker: 2_000n, racy: true },
  ])('counts $recorded as racy against a marker of $marker: $racy', ({ recorded, marker, racy }) => {
    expect(isRacy(recorded, marker)).toBe(racy);
  });

  it('finds the directories that changed, may have changed in the record’s tick, or went', () => {
    const record = {
      dirs: {
        '': signature(1n, 100n),
        same: signature(2n, 100n),
        touched: signature(3n, 100n),
        replaced: signature(4n, 100n),
        racy: signature(5n, 500n),
        gone: signature(6n, 100n),
        file: signature(7n, 100n),
      },
    };
    const now = new Map<string, string | null>([
      ['', signature(1n, 100n)],
      ['same', signature(2n, 100n)],
      ['touched', signature(3n, 300n)],
      ['replaced', signature(40n, 100n)],
      ['racy', signature(5n, 500n)],
      ['gone', null],
      ['file', null],
    ]);
    expect(changedDirs(record, now, 500n)).toEqual({
      changed: ['touched', 'replaced', 'racy'],
      gone: ['gone', 'file'],
    });
  });

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
});
