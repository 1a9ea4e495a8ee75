import { describe, expect, it } from 'vitest';
import {
  compareVersions,
  gitVersionProblem,
  parseGitVersion,
} from '../../../src/workers/workspace/git-version.js';

describe('parseGitVersion', () => {
  it.each([
    ['git version 2.39.5', [2, 39, 5]],
    ['git version 2.39.5\n', [2, 39, 5]],
    ['git version 2.37.1 (Apple Git-137.1)', [2, 37, 1]],
    ['git version 2.45.2.windows.1', [2, 45, 2]],
    ['git version 2.40.0-rc1', [2, 40, 0]],
    ['git version 3.0', [3, 0, 0]],
    ['hub version 2.14.2\ngit version 2.38.0', [2, 38, 0]],
    ['', null],
    ['not git', null],
  ])('%j', (text, expected) => {
    expect(parseGitVersion(text)).toEqual(expected);
  });
});

describe('compareVersions', () => {
  it.each([
    [[2, 38, 0], [2, 38, 0], 0],
    [[2, 39, 0], [2, 38, 0], 1],
    [[2, 37, 9], [2, 38, 0], -1],
    [[2, 38, 1], [2, 38, 0], 1],
    [[3, 0, 0], [2, 99, 99], 1],
    [[1, 99, 99], [2, 0, 0], -1],
    // Numbers, not strings: 2.100 is newer than 2.38.
    [[2, 100, 0], [2, 38, 0], 1],
  ] as const)('%j against %j', (a, b, expected) => {
    expect(compareVersions(a, b)).toBe(expected);
  });
});

describe('gitVersionProblem', () => {
  it.each([
    ['git version 2.38.0', null],
    ['git version 2.39.5', null],
    ['git version 2.100.1', null],
    [
      'git version 2.37.1 (Apple Git-137.1)',
      "git 2.37.1 is too old: flotilla needs git 2.38.0 or newer (for 'git merge-tree --write-tree')",
    ],
    [
      'git version 1.8.3.1',
      "git 1.8.3 is too old: flotilla needs git 2.38.0 or newer (for 'git merge-tree --write-tree')",
    ],
    [
      'garbage',
      `could not read the git version from 'git --version' ("garbage"); flotilla needs git 2.38.0 or newer`,
    ],
  ])('%j', (text, expected) => {
    expect(gitVersionProblem(text)).toBe(expected);
  });
});
