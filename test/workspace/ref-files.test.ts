import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { looseRefValue, packedRefValue, readRefFile } from '../../src/workspace/ref-files.js';

const A = 'a'.repeat(40);
const B = 'b'.repeat(40);
const SHA256 = 'c'.repeat(64);

describe('looseRefValue', () => {
  it.each([
    ['an object id and a newline', `${A}\n`, { kind: 'commit', commit: A }],
    ['a SHA-256 object id', SHA256, { kind: 'commit', commit: SHA256 }],
    ['a symbolic ref', 'ref: refs/heads/main\n', { kind: 'unknown' }],
    ['an id cut short (a torn write git never makes)', A.slice(0, 20), { kind: 'unknown' }],
    ['upper case', A.toUpperCase(), { kind: 'unknown' }],
    ['empty', '', { kind: 'unknown' }],
  ])('%s', (_name, text, expected) => {
    expect(looseRefValue(text)).toEqual(expected);
  });
});

describe('packedRefValue', () => {
  const packed = [
    '# pack-refs with: peeled fully-peeled sorted ',
    `${A} refs/heads/flotilla/m`,
    `${B} refs/heads/flotilla/m/sub`,
    `${B} refs/tags/v1`,
    `^${A}`,
    '',
  ].join('\n');
  it.each([
    ['a listed ref', 'refs/heads/flotilla/m', { kind: 'commit', commit: A }],
    ['a ref below a listed name is its own line', 'refs/heads/flotilla/m/sub', { kind: 'commit', commit: B }],
    ['a tag: the tag object, not the peeled line', 'refs/tags/v1', { kind: 'commit', commit: B }],
    ['a prefix of a listed ref is not that ref', 'refs/heads/flotilla', { kind: 'missing' }],
    ['an absent ref', 'refs/heads/other', { kind: 'missing' }],
  ])('%s', (_name, ref, expected) => {
    expect(packedRefValue(packed, ref)).toEqual(expected);
  });

  it('reads a file with Windows line ends', () => {
    expect(packedRefValue(`${A} refs/heads/x\r\n`, 'refs/heads/x')).toEqual({ kind: 'commit', commit: A });
  });
});

describe('readRefFile', () => {
  let root: string;
  let made = 0;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'flotilla-ref-files-'));
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  async function gitDir(files: Record<string, string>): Promise<string> {
    const dir = join(root, String(++made));
    await mkdir(dir);
    for (const [name, text] of Object.entries(files)) {
      // `link:<path>`: a symbolic link at <path> to `text` (dangling here, as git would leave one).
      const path = name.replace(/^link:/, '');
      await mkdir(join(dir, path, '..'), { recursive: true });
      if (name.startsWith('link:')) await symlink(text, join(dir, path));
      else await writeFile(join(dir, path), text);
    }
    return dir;
  }

  it.each([
    ['a loose ref', { 'refs/heads/x': `${A}\n` }, 'refs/heads/x', { kind: 'commit', commit: A }],
    [
      'the loose file wins over a packed line (a ref moved after `pack-refs`)',
      { 'refs/heads/x': `${B}\n`, 'packed-refs': `${A} refs/heads/x\n` },
      'refs/heads/x',
      { kind: 'commit', commit: B },
    ],
    ['a packed ref', { 'packed-refs': `${A} refs/heads/x\n` }, 'refs/heads/x', { kind: 'commit', commit: A }],
    ['no such ref, no packed-refs', {}, 'refs/heads/x', { kind: 'missing' }],
    ['a folder of refs is not a ref', { 'refs/heads/x/y': `${A}\n` }, 'refs/heads/x', { kind: 'unknown' }],
    ['below a loose ref', { 'refs/heads/x': `${A}\n` }, 'refs/heads/x/y', { kind: 'missing' }],
    ['a symbolic ref', { 'refs/heads/x': 'ref: refs/heads/y\n' }, 'refs/heads/x', { kind: 'unknown' }],
    ['a reftable repository', { 'reftable/tables.list': '' }, 'refs/heads/x', { kind: 'unknown' }],
    ['HEAD is not read here', { HEAD: `${A}\n` }, 'HEAD', { kind: 'unknown' }],
    [
      'a link in place of a ref file (git reads it as a symbolic ref), never the packed value below it',
      { 'packed-refs': `${A} refs/heads/x\n`, 'link:refs/heads/x': 'refs/heads/main' },
      'refs/heads/x',
      { kind: 'unknown' },
    ],
    ['a name climbing out', { 'refs/heads/x': `${A}\n` }, 'refs/../refs/heads/x', { kind: 'unknown' }],
  ])('%s', async (_name, files, ref, expected) => {
    expect(await readRefFile(await gitDir(files), ref)).toEqual(expected);
  });
});
