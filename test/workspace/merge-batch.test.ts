import { describe, expect, it } from 'vitest';
import {
  lostCompareAndSwap,
  type MergeRequest,
  mergeCommitMessage,
  parseRevList,
  planBatch,
} from '../../src/workspace/merge-batch.js';

const request = (attemptId: string, workCommit: string): MergeRequest => ({
  attemptId,
  workCommit,
  message: `merge ${attemptId}`,
});

describe('planBatch', () => {
  it.each([
    ['an empty batch', [], [], { alreadyIntegrated: [], merges: [] }],
    [
      'every request new: merged in arrival order',
      [request('a/a1', 'c1'), request('b/a1', 'c2'), request('c/a2', 'c3')],
      ['c1', 'c2', 'c3'],
      {
        alreadyIntegrated: [],
        merges: [
          { workCommit: 'c1', message: 'merge a/a1', attemptIds: ['a/a1'] },
          { workCommit: 'c2', message: 'merge b/a1', attemptIds: ['b/a1'] },
          { workCommit: 'c3', message: 'merge c/a2', attemptIds: ['c/a2'] },
        ],
      },
    ],
    [
      'a replayed gate whose merge was published before it could settle is not merged again',
      [request('a/a1', 'c1'), request('b/a1', 'c2')],
      ['c2'],
      {
        alreadyIntegrated: ['a/a1'],
        merges: [{ workCommit: 'c2', message: 'merge b/a1', attemptIds: ['b/a1'] }],
      },
    ],
    [
      'a job delivered twice into one batch is merged once and both deliveries get its outcome',
      [request('a/a1', 'c1'), request('a/a1', 'c1')],
      ['c1'],
      {
        alreadyIntegrated: [],
        merges: [{ workCommit: 'c1', message: 'merge a/a1', attemptIds: ['a/a1', 'a/a1'] }],
      },
    ],
    [
      'rev-list also prints commits below the work commits; only the work commits count',
      [request('a/a1', 'c1')],
      ['c0', 'c1'],
      { alreadyIntegrated: [], merges: [{ workCommit: 'c1', message: 'merge a/a1', attemptIds: ['a/a1'] }] },
    ],
    [
      'all integrated already',
      [request('a/a1', 'c1'), request('b/a1', 'c2')],
      [],
      { alreadyIntegrated: ['a/a1', 'b/a1'], merges: [] },
    ],
  ])('%s', (_name, requests, unmerged, expected) => {
    expect(planBatch(requests, new Set(unmerged))).toEqual(expected);
  });
});

describe('parseRevList', () => {
  it.each([
    ['', []],
    ['abc\n', ['abc']],
    ['abc\ndef\n\n', ['abc', 'def']],
  ])('%j', (stdout, expected) => {
    expect([...parseRevList(stdout)]).toEqual(expected);
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
