import { describe, expect, it } from 'vitest';
import { parseCheckpointInterval } from '../../../../src/shared/mission.js';
import {
  checkpointIntervalMs,
  decideResume,
  mayHaveCheckpoint,
  type ResumeDecision,
} from '../../../../src/workers/stages/run/checkpoint-plan.js';
import type { FoundCheckpoint } from '../../../../src/workers/workspace/resume-checkpoint.js';

const BASE = 'b'.repeat(40);
const COMMIT = 'c'.repeat(40);
const TREE = 't'.repeat(40);

describe('parseCheckpointInterval', () => {
  it.each<[unknown, number | undefined]>([
    ['2m', 120_000],
    ['1s', 1_000],
    ['1h30m', 5_400_000],
    [30_000, 30_000],
    ['off', 0],
    ['OFF', 0],
    [false, 0],
    [0, 0],
    ['0', 0],
    ['999ms', undefined],
    [500, undefined],
    ['often', undefined],
    [true, undefined],
    [-5, undefined],
    [null, undefined],
    [[], undefined],
  ])('%j → %j', (value, expected) => {
    expect(parseCheckpointInterval(value)).toBe(expected);
  });
});

describe('checkpointIntervalMs', () => {
  it.each<[number | undefined, number]>([
    [undefined, 120_000],
    [0, 0],
    [5_000, 5_000],
  ])('mission checkpointMs %j → %j', (checkpointMs, expected) => {
    expect(checkpointIntervalMs(checkpointMs === undefined ? {} : { checkpointMs })).toBe(expected);
  });
});

describe('mayHaveCheckpoint', () => {
  it.each<[number | undefined, number, boolean]>([
    // The first delivery of a run job never looks: no earlier run of the attempt existed.
    [1, 120_000, false],
    [0, 120_000, false],
    [undefined, 120_000, false],
    // Delivered again (stalled after a crash, lock lost, handed back, retried by BullMQ).
    [2, 120_000, true],
    [3, 1_000, true],
    // Checkpoints off: none were written, so none is looked for.
    [2, 0, false],
  ])('attemptsStarted %j, interval %j → %j', (attemptsStarted, interval, expected) => {
    const delivery = attemptsStarted === undefined ? {} : { attemptsStarted };
    expect(mayHaveCheckpoint(delivery, interval)).toBe(expected);
  });
});

describe('decideResume', () => {
  it.each<[string, FoundCheckpoint | null, ResumeDecision]>([
    ['no checkpoint ref', null, { resume: false }],
    [
      'a checkpoint on its base',
      { commit: COMMIT, parents: [BASE], tree: TREE },
      { resume: true, checkpoint: { commit: COMMIT, baseCommit: BASE }, tree: TREE },
    ],
    [
      'a root commit is no checkpoint',
      { commit: COMMIT, parents: [], tree: TREE },
      { resume: false, ignored: 'cccccccccccc has 0 parents, not the one base a checkpoint has' },
    ],
    [
      'a merge is no checkpoint',
      { commit: COMMIT, parents: [BASE, 'd'.repeat(40)], tree: TREE },
      { resume: false, ignored: 'cccccccccccc has 2 parents, not the one base a checkpoint has' },
    ],
  ])('%s', (_name, found, expected) => {
    expect(decideResume(found)).toEqual(expected);
  });
});
