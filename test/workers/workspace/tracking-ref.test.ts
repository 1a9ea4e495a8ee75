import { describe, expect, it } from 'vitest';
import { attemptRef, integrationBranch } from '../../../src/shared/contracts.js';
import { trackingRef } from '../../../src/workers/workspace/repo-cache.js';

describe('trackingRef', () => {
  it.each([
    [
      'a branch name goes under refs/remotes/origin/',
      integrationBranch('m-1'),
      'refs/remotes/origin/flotilla/m-1',
    ],
    [
      'an attempt ref keeps its own name in the cache',
      attemptRef('m-1', 'mean', 2),
      'refs/flotilla/m-1/mean/a2',
    ],
  ])('%s', (_name, ref, expected) => {
    expect(trackingRef(ref)).toBe(expected);
  });
});

describe('attemptRef', () => {
  it('is outside refs/heads/, one folder per mission and task, so `git branch` never lists it', () => {
    expect(attemptRef('m-1', 'mean', 2)).toBe('refs/flotilla/m-1/mean/a2');
    expect(attemptRef('m-1', 'mean', 2).startsWith('refs/heads/')).toBe(false);
  });
});
