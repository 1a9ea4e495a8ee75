import { describe, expect, it } from 'vitest';
import {
  normalizeScore,
  parseLooseValue,
  parseVerdict,
} from '../../../../src/workers/stages/critic/verdict.js';

describe('parseVerdict', () => {
  it.each([
    [
      'plain JSON',
      '{"score": 8, "verdict": "approve", "issues": []}',
      { score: 8, verdict: 'approve', issues: [] },
    ],
    [
      'in a json fence inside a result file',
      '**Status**: Complete\n**Summary**: Reviewed.\n\n```json\n{"score": 5, "verdict": "reject", "issues": ["no tests for empty input"]}\n```\n',
      { score: 5, verdict: 'reject', issues: ['no tests for empty input'] },
    ],
    [
      'prose around it',
      'Overall the change is solid. My verdict: {"score": 9, "verdict": "approve", "issues": ["rename s to sorted"]} Thanks!',
      { score: 9, verdict: 'approve', issues: ['rename s to sorted'] },
    ],
    [
      'single quotes',
      "{'score': 6, 'verdict': 'reject', 'issues': ['it's missing a test', 'sort mutates']}",
      { score: 6, verdict: 'reject', issues: ["it's missing a test", 'sort mutates'] },
    ],
    [
      'score as "8/10"',
      '{"score": "8/10", "verdict": "approve", "issues": []}',
      { score: 8, verdict: 'approve', issues: [] },
    ],
    ['score as "80/100"', '{"score": "80/100", "issues": []}', { score: 8, verdict: 'approve', issues: [] }],
    ['score as "7 out of 10"', '{"score": "7 out of 10"}', { score: 7, verdict: 'approve', issues: [] }],
    ['unquoted 8/10', '{score: 8/10, verdict: approve}', { score: 8, verdict: 'approve', issues: [] }],
    [
      'verdict missing, score below min',
      '{"score": 6, "issues": ["x"]}',
      { score: 6, verdict: 'reject', issues: ['x'] },
    ],
    ['verdict missing, score at min', '{"score": 7}', { score: 7, verdict: 'approve', issues: [] }],
    [
      'verdict spelled approved',
      '{"score": 9, "verdict": "APPROVED"}',
      { score: 9, verdict: 'approve', issues: [] },
    ],
    [
      'verdict needs_revision',
      '{"score": 8, "verdict": "needs revision"}',
      { score: 8, verdict: 'reject', issues: [] },
    ],
    ['verdict unrecognised', '{"score": 3, "verdict": "meh"}', { score: 3, verdict: 'reject', issues: [] }],
    ['approved boolean', '{"score": 8, "approved": false}', { score: 8, verdict: 'reject', issues: [] }],
    [
      'issues as one string',
      '{"score": 4, "issues": "tests fail on empty input"}',
      { score: 4, verdict: 'reject', issues: ['tests fail on empty input'] },
    ],
    [
      'issues as a bulleted string',
      '{"score": 4, "issues": "- first\\n- second\\n"}',
      { score: 4, verdict: 'reject', issues: ['first', 'second'] },
    ],
    [
      'issues as objects',
      '{"score": 5, "verdict": "reject", "issues": [{"severity": "high", "file": "src/stats.ts", "line": 12, "description": "median mutates its input"}, {"message": "no test for []"}, {"weird": 1}]}',
      {
        score: 5,
        verdict: 'reject',
        issues: ['[high] src/stats.ts:12: median mutates its input', 'no test for []', '{"weird":1}'],
      },
    ],
    [
      'trailing commas, Python literals and capital keys',
      '{"Score": 8, "Verdict": "approve", "Issues": ["a",], "blocking": None,}',
      { score: 8, verdict: 'approve', issues: ['a'] },
    ],
    [
      'the template restated first, then the real verdict',
      'Format: {"score": N, "verdict": "approve"|"reject", "issues": [...]}\n\n{"score": 8, "verdict": "approve", "issues": []}',
      { score: 8, verdict: 'approve', issues: [] },
    ],
    [
      'nested inside another object',
      '{"review": {"score": 7.5, "verdict": "approve", "issues": []}}',
      { score: 7.5, verdict: 'approve', issues: [] },
    ],
    [
      'prose only',
      'Score: 8/10\nVerdict: approve\n\nIssues:\n- rename s\n- add a doc comment\n',
      { score: 8, verdict: 'approve', issues: ['rename s', 'add a doc comment'] },
    ],
    [
      'prose with a range before the score',
      'The score ranges from 1 to 10.\nFinal score: 4',
      { score: 4, verdict: 'reject', issues: [] },
    ],
    [
      'double quotes inside a string',
      '{"score": 6, "issues": ["call it "sorted" instead"]}',
      { score: 6, verdict: 'reject', issues: ['call it "sorted" instead'] },
    ],
  ])('%s', (_name, text, expected) => {
    expect(parseVerdict(text)).toEqual(expected);
  });

  it.each([
    ['no score at all', '{"verdict": "approve", "issues": []}'],
    ['the template only', '{"score": N, "verdict": "approve"|"reject", "issues": [...]}'],
    ['score out of range', '{"score": 85}'],
    ['empty', ''],
    ['garbage', '}{ ]] "score" : : {'],
  ])('null for %s', (_name, text) => {
    expect(parseVerdict(text)).toBeNull();
  });

  it('derives the verdict from the given min score', () => {
    expect(parseVerdict('{"score": 8}', 9)?.verdict).toBe('reject');
    expect(parseVerdict('{"score": 8}', 8)?.verdict).toBe('approve');
  });

  it('keeps an explicit reject even with a high score', () => {
    expect(parseVerdict('{"score": 9, "verdict": "reject"}')?.verdict).toBe('reject');
  });

  it('does not let __proto__ keys reach the prototype', () => {
    const verdict = parseVerdict('{"__proto__": {"polluted": true}, "score": 8}');
    expect(verdict?.score).toBe(8);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('normalizeScore', () => {
  it.each([
    [8, 8],
    ['8', 8],
    [' 8 / 10 ', 8],
    ['3/5', 6],
    ['8.5', 8.5],
    [0, 0],
    [11, undefined],
    [-1, undefined],
    ['N', undefined],
    [null, undefined],
    ['8/0', undefined],
  ])('%j → %j', (value, score) => {
    expect(normalizeScore(value)).toBe(score);
  });
});

describe('parseLooseValue', () => {
  it('reads JSON and its forgiving variants', () => {
    expect(parseLooseValue('{a: [1, \'two\', "three",], b: True}')?.value).toEqual({
      a: [1, 'two', 'three'],
      b: true,
    });
  });

  it('reports where the value ends', () => {
    expect(parseLooseValue('xx{"a": 1} tail', 2)).toEqual({ value: { a: 1 }, end: 10 });
  });

  it('is null on what it cannot read', () => {
    expect(parseLooseValue('{"a": ')).toBeNull();
    expect(parseLooseValue('{"a" 1}')).toBeNull();
  });
});
