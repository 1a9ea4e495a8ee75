import { describe, expect, it } from 'vitest';
import { diffOrigin, porcelainEntries } from '../../src/agent/origin-guard.js';

const snap = (entries: Record<string, number>) => ({ root: '/r', entries: new Map(Object.entries(entries)) });

describe('porcelainEntries', () => {
  it.each([
    ['', []],
    [' M a.txt\0?? b/\0', [' M a.txt', '?? b/']],
    // A rename's source path is a record of its own and is not an entry.
    ['R  new.txt\0old.txt\0 M c\0', ['R  new.txt', ' M c']],
  ])('%j', (output, expected) => {
    expect(porcelainEntries(output)).toEqual(expected);
  });
});

describe('diffOrigin', () => {
  it.each([
    ['nothing changed', { ' M a': 1 }, { ' M a': 1 }, []],
    ['a new untracked file', {}, { '?? x.txt': 5 }, ['x.txt']],
    ['a dirty file written again', { ' M a': 1 }, { ' M a': 2 }, ['a']],
    ['a change reverted', { ' M a': 1 }, {}, ['a']],
    ['status letters changed', { '?? a': 1 }, { 'A  a': 1 }, ['a']],
  ])('%s', (_name, before, after, expected) => {
    expect(diffOrigin(snap(before), snap(after))).toEqual(expected);
  });
});
