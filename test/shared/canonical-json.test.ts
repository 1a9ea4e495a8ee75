import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { canonicalJson, hashJson, sha256Hex } from '../../src/shared/canonical-json.js';

describe('canonicalJson', () => {
  it.each([
    ['sorted keys, no white space', { b: 1, a: [true, null, 'x'] }, '{"a":[true,null,"x"],"b":1}'],
    ['nested objects sorted too', { z: { y: 2, x: 1 } }, '{"z":{"x":1,"y":2}}'],
    ['undefined members left out', { a: undefined, b: 2 }, '{"b":2}'],
    ['undefined in a list becomes null', [1, undefined], '[1,null]'],
    ['empty containers kept', { a: [], b: {} }, '{"a":[],"b":{}}'],
    ['strings escaped as JSON does', { s: 'a"b\n\u00e9' }, `{"s":${JSON.stringify('a"b\n\u00e9')}}`],
    ['key order by code unit, not locale', { B: 1, a: 2, _: 3 }, '{"B":1,"_":3,"a":2}'],
  ])('%s', (_name, value, expected) => {
    expect(canonicalJson(value)).toBe(expected);
  });

  it('gives the same text for the same value however it was built', () => {
    expect(canonicalJson({ a: 1, b: { c: [1, 2] } })).toBe(canonicalJson({ b: { c: [1, 2] }, a: 1 }));
  });

  it('round-trips: parsing its output and encoding again gives the same bytes', () => {
    const value = { at: '2026-12-01T09:00:00.000Z', n: 1e21, neg: -0.5, text: 'line\u2028two', list: [] };
    const once = canonicalJson(value);
    expect(canonicalJson(JSON.parse(once))).toBe(once);
  });

  it.each([[Number.NaN], [Number.POSITIVE_INFINITY]])('refuses %s', (n) => {
    expect(() => canonicalJson({ n })).toThrow(/not a finite number/);
  });

  it('refuses functions and bigints', () => {
    expect(() => canonicalJson({ f: () => 1 })).toThrow(/cannot encode a function/);
    expect(() => canonicalJson({ b: 1n })).toThrow(/cannot encode a bigint/);
  });
});

describe('hashes', () => {
  it('sha256Hex is SHA-256 of the UTF-8 bytes', () => {
    expect(sha256Hex('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(sha256Hex('é')).toBe(createHash('sha256').update(Buffer.from('é', 'utf8')).digest('hex'));
  });

  it('hashJson hashes the canonical form', () => {
    expect(hashJson({ b: 1, a: 2 })).toBe(sha256Hex('{"a":2,"b":1}'));
  });
});
