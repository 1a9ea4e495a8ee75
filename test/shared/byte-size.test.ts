import { describe, expect, it } from 'vitest';
import { formatByteSize, parseByteSize } from '../../src/shared/byte-size.js';

describe('parseByteSize', () => {
  it.each([
    ['500MB', 500 * 1024 ** 2],
    ['500 MB', 500 * 1024 ** 2],
    ['500MiB', 500 * 1024 ** 2],
    ['500m', 500 * 1024 ** 2],
    ['64KB', 64 * 1024],
    ['2GB', 2 * 1024 ** 3],
    ['1TB', 1024 ** 4],
    ['0.5GB', 512 * 1024 ** 2],
    ['4096', 4096],
    ['4096B', 4096],
    [' 7MB ', 7 * 1024 ** 2],
  ])('%j is %d bytes', (text, bytes) => {
    expect(parseByteSize(text)).toBe(bytes);
  });

  it.each(['', 'MB', 'lots', '-1MB', '0', '0MB', '5PB', '1,000', '5 M B'])('%j is not a size', (text) => {
    expect(parseByteSize(text)).toBeUndefined();
  });
});

describe('formatByteSize', () => {
  it.each([
    [500 * 1024 ** 2, '500 MB'],
    [20 * 1024 ** 2, '20 MB'],
    [1.5 * 1024 ** 3, '1.5 GB'],
    [1024 ** 2 + 1, '1 MB'],
    [64 * 1024, '64 KB'],
    [900, '900 bytes'],
    [209_715_269, '200 MB'],
  ])('%d bytes reads %j', (bytes, text) => {
    expect(formatByteSize(bytes)).toBe(text);
  });
});
