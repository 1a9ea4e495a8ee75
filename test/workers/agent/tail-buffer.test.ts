import { describe, expect, it } from 'vitest';
import { TailBuffer } from '../../../src/workers/agent/tail-buffer.js';

function kept(cap: number, chunks: readonly (string | Uint8Array)[]) {
  const tail = new TailBuffer(cap);
  for (const chunk of chunks) tail.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return { text: tail.text(), bytes: tail.bytes, truncated: tail.truncated };
}

const euro = Buffer.from('€');

describe('TailBuffer', () => {
  it.each([
    ['short output, whole', 16, ['ab\n', 'cd'], 'ab\ncd', false],
    ['exactly the cap, whole', 6, ['ab\n', 'cd\n'], 'ab\ncd\n', false],
    ['over the cap: from the first line start kept', 8, ['line1\n', 'line2\n', 'line3\n'], 'line3\n', true],
    ['over the cap in one chunk', 8, ['aaaa\nbbbb\ncc\n'], 'cc\n', true],
    ['a chunk larger than the cap', 5, ['x'.repeat(100)], 'xxxxx', true],
    ['no newline kept: the cut part as it is', 4, ['abcdefgh'], 'efgh', true],
    ['a newline only at the very end: the cut line kept', 4, ['abcdefg\n'], 'efg\n', true],
    ['many small chunks wrap the ring', 6, ['1\n', '2\n', '3\n', '4\n', '5\n'], '4\n5\n', true],
    ['nothing', 8, [], '', false],
    ['a cap of 0 keeps nothing and counts', 0, ['abc'], '', true],
  ])('%s', (_name, cap, chunks, text, truncated) => {
    const result = kept(cap, chunks);
    expect(result.text).toBe(text);
    expect(result.truncated).toBe(truncated);
    expect(result.bytes).toBe(chunks.reduce((n, c) => n + Buffer.byteLength(c), 0));
  });

  it('drops a character cut at the front rather than showing a broken one', () => {
    // "a€€" is 7 bytes; the last 5 start inside the first €.
    expect(kept(5, [Buffer.concat([Buffer.from('a'), euro, euro])]).text).toBe('€');
  });

  it('grows past its first ring and keeps the order across a wrap', () => {
    const lines = Array.from({ length: 30_000 }, (_, i) => `line ${i}\n`);
    const tail = new TailBuffer(100 * 1024);
    for (const line of lines) tail.push(Buffer.from(line));
    const text = tail.text();
    expect(text.endsWith('line 29999\n')).toBe(true);
    expect(text.split('\n').slice(0, -1)).toEqual(
      lines.slice(-text.split('\n').length + 1).map((line) => line.slice(0, -1)),
    );
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(100 * 1024);
  });
});
