/**
 * Packs written in-process (src/workers/workspace/pack-files.ts) are packs git reads and checks (`fsck`,
 * `verify-pack`, `cat-file`), and the reader gives back every object of git's own packs, deltas
 * included, byte for byte as `git cat-file` does.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32 as zlibCrc32 } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readGit, runGit } from '../../../src/workers/workspace/git.js';
import {
  applyDelta,
  crc32,
  packBytes,
  packedHere,
  readPacked,
  writePack,
} from '../../../src/workers/workspace/pack-files.js';
import { packObject } from '../../helpers/git-objects.js';

let root: string;
let counter = 0;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'flotilla-pack-files-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

async function newRepo(): Promise<string> {
  const dir = join(root, `repo-${++counter}`);
  await runGit(['init', '--quiet', dir], { cwd: root });
  return dir;
}

const git = (dir: string, ...args: string[]) => readGit(args, { cwd: dir });

/** An object's body as git reads it, bytes and all. */
function catFile(dir: string, type: string, id: string): Buffer {
  return execFileSync('git', ['cat-file', type, id], { cwd: dir });
}

describe('writePack', () => {
  it('writes objects git finds, reads back and checks clean', async () => {
    const dir = await newRepo();
    const small = packObject('blob', Buffer.from('hello\n'));
    // Sizes that take one, two and three bytes of the pack's size header.
    const middling = packObject('blob', randomBytes(300));
    const large = packObject('blob', randomBytes(70_000));
    const empty = packObject('blob', Buffer.alloc(0));
    const tree = packObject(
      'tree',
      Buffer.concat([
        Buffer.from('100644 a.txt\0'),
        Buffer.from(small.id, 'hex'),
        Buffer.from('100644 b.bin\0'),
        Buffer.from(large.id, 'hex'),
      ]),
    );
    const commit = packObject(
      'commit',
      Buffer.from(`tree ${tree.id}\nauthor A <a@a> 1 +0000\ncommitter A <a@a> 1 +0000\n\nmessage\n`),
    );
    const objects = [small, middling, large, empty, tree, commit, small];
    expect(writePack(join(dir, '.git', 'objects'), objects)).toBe(true);

    const folder = join(dir, '.git', 'objects', 'pack');
    const names = (await readdir(folder)).sort();
    // The pack and its index, nothing else: the temporary files are gone.
    expect(names).toHaveLength(2);
    expect(names[0]).toMatch(/^pack-[0-9a-f]{40}\.idx$/);
    expect(names[1]).toBe(names[0]?.replace(/\.idx$/, '.pack'));
    // verify-pack checks the pack's checksum, the index's and every object's CRC.
    const verified = await git(dir, 'verify-pack', '-v', join(folder, names[0] ?? ''));
    expect(verified).toContain('ok');
    expect(verified).toMatch(/non delta: 6 objects/);
    for (const each of [small, middling, large, empty, tree, commit]) {
      expect(await git(dir, 'cat-file', '-t', each.id)).toBe(each.type);
      expect(catFile(dir, each.type, each.id).equals(each.body)).toBe(true);
    }
    await git(dir, 'update-ref', 'refs/heads/main', commit.id);
    expect((await runGit(['fsck', '--strict', '--no-dangling'], { cwd: dir })).exitCode).toBe(0);
  });

  it('reads its own packs back, and says what it does not hold', async () => {
    const dir = await newRepo();
    const objects = join(dir, '.git', 'objects');
    const blobs = Array.from({ length: 40 }, (_, i) => packObject('blob', Buffer.from(`blob ${i}\n`)));
    writePack(objects, blobs.slice(0, 20));
    writePack(objects, blobs.slice(20));
    for (const blob of blobs) {
      expect(packedHere(objects, blob.id)).toBe(true);
      expect(readPacked(objects, blob.id)).toEqual({ type: 'blob', body: blob.body });
    }
    const absent = packObject('blob', Buffer.from('not written')).id;
    expect(packedHere(objects, absent)).toBe(false);
    expect(readPacked(objects, absent)).toBeNull();
  });

  it('sees a pack another process wrote after it last looked', async () => {
    const dir = await newRepo();
    const objects = join(dir, '.git', 'objects');
    const first = packObject('blob', Buffer.from('first\n'));
    writePack(objects, [first]);
    expect(packedHere(objects, first.id)).toBe(true);
    await writeFile(join(dir, 'later.txt'), 'later\n');
    await git(dir, 'add', 'later.txt');
    const later = await git(dir, 'rev-parse', ':later.txt');
    // The index's objects go into a new pack; the loose one goes with -d.
    await git(dir, 'repack', '-d', '-q');
    expect(await readdir(join(objects, 'pack'))).toHaveLength(4);
    expect(readPacked(objects, later)).toEqual({ type: 'blob', body: Buffer.from('later\n') });
  });

  it('orders sizes in the index as git does: ids across every first byte', () => {
    const many = Array.from({ length: 600 }, (_, i) => packObject('blob', Buffer.from(`${i}`)));
    const bytes = packBytes(many);
    if (!bytes) throw new Error('no pack');
    const count = bytes.index.readUInt32BE(8 + 255 * 4);
    expect(count).toBe(600);
    let previous = -1;
    for (let byte = 0; byte < 256; byte++) {
      const upTo = bytes.index.readUInt32BE(8 + byte * 4);
      expect(upTo).toBeGreaterThanOrEqual(previous);
      previous = upTo;
    }
  });
});

describe('readPacked on git’s own packs', () => {
  it('gives back every object of a repacked history, deltas followed', async () => {
    const dir = await newRepo();
    const id = ['-c', 'user.name=t', '-c', 'user.email=t@t'];
    // One file grown commit by commit: git stores most versions as deltas of another.
    let text = '';
    for (let i = 0; i < 30; i++) {
      text += `line ${i} ${'x'.repeat(i * 7)}\n`;
      await writeFile(join(dir, 'grown.txt'), text);
      await writeFile(join(dir, `f${i % 5}.txt`), `${i}\n`.repeat(50 + i));
      await git(dir, 'add', '-A');
      await git(dir, ...id, 'commit', '--quiet', '-m', `c${i}`);
    }
    await git(dir, 'repack', '-a', '-d', '-q', '--depth=50', '--window=50');
    const listed = await git(
      dir,
      'cat-file',
      '--batch-all-objects',
      '--batch-check=%(objectname) %(objecttype)',
    );
    const objects = join(dir, '.git', 'objects');
    const packs = (await readdir(join(objects, 'pack'))).filter((name) => name.endsWith('.idx'));
    const deltas = (await git(dir, 'verify-pack', '-v', join(objects, 'pack', packs[0] ?? ''))).match(
      /^[0-9a-f]{40} \w+ +\d+ \d+ \d+ \d+ [0-9a-f]{40}$/gm,
    );
    expect(deltas?.length ?? 0).toBeGreaterThan(10);
    const lines = listed.split('\n');
    expect(lines.length).toBeGreaterThan(100);
    for (const line of lines) {
      const [name = '', type = ''] = line.split(' ');
      const read = readPacked(objects, name);
      expect(read?.type).toBe(type);
      expect(read?.body.equals(catFile(dir, type, name))).toBe(true);
    }
  });
});

describe('crc32', () => {
  it('is zlib’s, on empty, short and long input', () => {
    const inputs = [Buffer.alloc(0), Buffer.from('a'), Buffer.from('123456789'), randomBytes(70_001)];
    expect(crc32(Buffer.from('123456789'))).toBe(0xcbf43926);
    for (const input of inputs) expect(crc32(input)).toBe(zlibCrc32(input));
  });
});

describe('applyDelta', () => {
  const source = Buffer.from('0123456789abcdef');
  const cases: { name: string; delta: number[]; out?: string; error?: RegExp }[] = [
    { name: 'a copy and an insert', delta: [16, 7, 0x91, 2, 4, 3, 0x78, 0x79, 0x7a], out: '2345xyz' },
    { name: 'a copy from offset 0 (no offset bytes)', delta: [16, 3, 0x90, 3], out: '012' },
    { name: 'another source size', delta: [15, 1, 1, 0x41], error: /another source/ },
    { name: 'a copy past the source', delta: [16, 4, 0x91, 14, 4], error: /past its ends/ },
    { name: 'a target left short', delta: [16, 4, 1, 0x41], error: /does not fill/ },
    { name: 'the reserved instruction', delta: [16, 1, 0], error: /reserved/ },
  ];
  for (const each of cases) {
    it(each.name, () => {
      const run = () => applyDelta(source, Buffer.from(each.delta)).toString();
      if (each.error) expect(run).toThrow(each.error);
      else expect(run()).toBe(each.out);
    });
  }
});
