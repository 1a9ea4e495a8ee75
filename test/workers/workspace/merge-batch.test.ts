import { describe, expect, it } from 'vitest';
import {
  lostCompareAndSwap,
  type MergeRequest,
  mergeCommitMessage,
  planBatch,
} from '../../../src/workers/workspace/merge-batch.js';

const request = (attemptId: string, workCommit: string): MergeRequest => ({
  attemptId,
  workCommit,
  message: `merge ${attemptId}`,
});

describe('planBatch', () => {
  it.each([
    ['an empty batch', [], []],
    [
      'every request merged in arrival order',
      [request('a/a1', 'c1'), request('b/a1', 'c2'), request('c/a2', 'c3')],
      [
        { workCommit: 'c1', message: 'merge a/a1', attemptIds: ['a/a1'] },
        { workCommit: 'c2', message: 'merge b/a1', attemptIds: ['b/a1'] },
        { workCommit: 'c3', message: 'merge c/a2', attemptIds: ['c/a2'] },
      ],
    ],
    [
      'a job delivered twice into one batch is merged once and both deliveries get its outcome',
      [request('a/a1', 'c1'), request('b/a1', 'c2'), request('a/a1', 'c1')],
      [
        { workCommit: 'c1', message: 'merge a/a1', attemptIds: ['a/a1', 'a/a1'] },
        { workCommit: 'c2', message: 'merge b/a1', attemptIds: ['b/a1'] },
      ],
    ],
  ])('%s', (_name, requests, expected) => {
    expect(planBatch(requests)).toEqual(expected);
  });
});

describe('mergeCommitMessage', () => {
  it('ends with a trailer naming the attempt', () => {
    expect(mergeCommitMessage('flotilla: merge mean (attempt 2)', 'm-1', 'mean/a2')).toBe(
      'flotilla: merge mean (attempt 2)\n\nFlotilla-Attempt: m-1/mean/a2\n',
    );
  });
});

describe('lostCompareAndSwap', () => {
  it.each([
    [
      "fatal: update_ref failed for ref 'refs/heads/flotilla/m': cannot lock ref 'refs/heads/flotilla/m': is at 7e4d34 but expected 4a7d9e",
      true,
    ],
    [
      " ! [rejected]        4a7d9e -> flotilla/m (stale info)\nerror: failed to push some refs to '/tmp/x.git'",
      true,
    ],
    [' ! [rejected] x -> y (non-fast-forward)', true],
    ["fatal: Unable to create '/r/.git/refs/heads/flotilla/m.lock': File exists.", true],
    [' ! [remote rejected] x -> y (failed to update ref)', true],
    ["error: 'refs/heads/flotilla/m' exists; cannot create 'refs/heads/flotilla/m/x'", false],
    [' ! [remote rejected] x -> y (pre-receive hook declined)', false],
    ['fatal: could not read Username', false],
  ])('%j', (stderr, expected) => {
    expect(lostCompareAndSwap(stderr)).toBe(expected);
  });
});
