import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rewriteInPlace } from '../../src/shared/file-in-place.js';

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'flotilla-in-place-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('rewriteInPlace', () => {
  it('makes a missing file, then rewrites it in place, longer and shorter, never leaving the old tail', async () => {
    const file = join(root, 'state.json');
    rewriteInPlace(file, '{"a":"a long first version"}\n');
    const first = await stat(file);
    rewriteInPlace(file, '{"b":1}\n');
    expect(await readFile(file, 'utf8')).toBe('{"b":1}\n');
    rewriteInPlace(file, '{"c":"longer than the one before"}\n');
    expect(await readFile(file, 'utf8')).toBe('{"c":"longer than the one before"}\n');
    // The same file, not a new one renamed over it.
    expect((await stat(file)).ino).toBe(first.ino);
  });

  it('writes a blank for nothing: the file is never emptied', async () => {
    const file = join(root, 'slot');
    rewriteInPlace(file, '{"pgid":1}');
    rewriteInPlace(file, '');
    expect(await readFile(file, 'utf8')).toBe(' ');
  });
});
