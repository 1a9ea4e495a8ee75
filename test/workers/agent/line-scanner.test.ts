import { describe, expect, it } from 'vitest';
import { LineScanner } from '../../../src/workers/agent/line-scanner.js';

/** Every line the scanner hands on, for chunks cut where the table says. */
function scan(chunks: readonly (string | Uint8Array)[], maxLineBytes = 1024) {
  const lines: string[] = [];
  const scanner = new LineScanner((line) => lines.push(line), maxLineBytes);
  for (const chunk of chunks) scanner.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  scanner.end();
  return { lines, skipped: scanner.skipped };
}

const euro = Buffer.from('€'); // three bytes

describe('LineScanner', () => {
  it.each([
    ['one chunk, lines ending in a newline', ['a\nbb\nccc\n'], ['a', 'bb', 'ccc']],
    ['the last line without a newline', ['a\nb'], ['a', 'b']],
    ['a line cut across chunks', ['ab', 'c\nd', 'e\n'], ['abc', 'de']],
    ['a chunk that is only a newline', ['a', '\n', '\n', 'b'], ['a', '', 'b']],
    ['empty lines kept', ['\n\nx\n'], ['', '', 'x']],
    ['CRLF left to the reader', ['a\r\nb\r\n'], ['a\r', 'b\r']],
    [
      'a character cut across chunks',
      [
        Buffer.concat([Buffer.from('x'), euro.subarray(0, 1)]),
        Buffer.concat([euro.subarray(1), Buffer.from('y\n')]),
      ],
      ['x€y'],
    ],
    ['nothing at all', [], []],
    ['an empty chunk', ['', 'a\n', ''], ['a']],
  ])('%s', (_name, chunks, expected) => {
    expect(scan(chunks).lines).toEqual(expected);
  });

  it.each([
    ['a long line inside one chunk', ['short\n', `${'x'.repeat(20)}\n`, 'after\n'], ['short', 'after'], 1],
    ['a long line across chunks', ['ok\nxxxxxx', 'xxxxxx', 'xxxxxx', 'xxx\nnext\n'], ['ok', 'next'], 1],
    ['a long last line without a newline', ['ok\n', 'x'.repeat(30)], ['ok'], 1],
    ['a line exactly at the limit', [`${'x'.repeat(10)}\n`], ['x'.repeat(10)], 0],
    ['a line one byte over, ended in the next chunk', ['x'.repeat(10), 'x\nnext\n'], ['next'], 1],
    ['a held part and its end over the limit', ['x'.repeat(6), `${'x'.repeat(5)}\nnext\n`], ['next'], 1],
    ['two long lines in a row', [`${'x'.repeat(11)}\n${'y'.repeat(11)}\nz\n`], ['z'], 2],
    ['multi-byte characters counted in bytes', [`${'€'.repeat(4)}\n${'€'.repeat(3)}\n`], ['€€€'], 1],
  ])('skips %s', (_name, chunks, expected, skipped) => {
    expect(scan(chunks, 10)).toEqual({ lines: expected, skipped });
  });

  it('holds only the unfinished line between chunks, as a copy of its bytes', () => {
    const lines: string[] = [];
    const scanner = new LineScanner((line) => lines.push(line), 1024);
    const chunk = Buffer.from('done\npart');
    scanner.push(chunk);
    chunk.fill(0x21); // the stream may reuse its memory
    scanner.push(Buffer.from('ial\n'));
    expect(lines).toEqual(['done', 'partial']);
  });
});
