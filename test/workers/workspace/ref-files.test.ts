import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runGit } from '../../../src/workers/workspace/git.js';
import {
  looseRefValue,
  packedRefValue,
  readRefFile,
  writeRefFile,
} from '../../../src/workers/workspace/ref-files.js';
import { ROOT } from '../../helpers/paths.js';

/**
 * writeRefFile() in `count` processes of their own (the built module, as hosts run it), let go at
 * once: each loads, says `ready`, and writes when every one is ready. Their answers, in order.
 */
async function racingWriters(count: number, gitDir: string, ref: string, id: string, expected: string) {
  const module = join(ROOT, 'dist', 'workers', 'workspace', 'ref-files.js');
  const script = [
    `const { writeRefFile } = await import(${JSON.stringify(module)});`,
    "process.stdout.write('ready\\n');",
    "process.stdin.once('data', async () => {",
    `  const answer = await writeRefFile(${JSON.stringify(gitDir)}, ${JSON.stringify(ref)}, ${JSON.stringify(id)}, { expected: ${JSON.stringify(expected)} });`,
    '  process.stdout.write(answer, () => process.exit(0));',
    '});',
  ].join('\n');
  const children = Array.from({ length: count }, () =>
    spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['pipe', 'pipe', 'inherit'] }),
  );
  const outputs = children.map(() => '');
  const ready = children.map(
    (child, i) =>
      new Promise<void>((done) =>
        child.stdout.on('data', (chunk: Buffer) => {
          outputs[i] += chunk.toString();
          if (outputs[i]?.startsWith('ready\n')) done();
        }),
      ),
  );
  const closed = children.map((child) => new Promise((done) => child.on('close', done)));
  await Promise.all(ready);
  for (const child of children) child.stdin.end('go');
  await Promise.all(closed);
  return outputs.map((out) => out.replace('ready\n', ''));
}

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

describe('writeRefFile, against git', () => {
  let root: string;
  let made = 0;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'flotilla-ref-write-'));
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });
  const IDENT = 'Ada Gate <ada@example.org>';
  const LOG = { committer: IDENT, message: 'flotilla:  integrate\n', mode: 'normal' as const };

  const git = async (cwd: string, ...args: string[]) =>
    (
      await runGit(['-c', 'user.name=Ada Gate', '-c', 'user.email=ada@example.org', ...args], { cwd })
    ).stdout.trim();

  /** A repository (bare or not) with two commits and branch `flotilla/m` at the first. */
  async function repo(bare = false) {
    const dir = join(root, String(++made));
    await mkdir(dir);
    await git(dir, 'init', '--quiet', '--initial-branch', 'main', ...(bare ? ['--bare'] : []));
    const tree = await git(dir, 'mktree');
    const first = await git(dir, 'commit-tree', tree, '-m', 'first');
    const second = await git(dir, 'commit-tree', tree, '-p', first, '-m', 'second');
    await git(dir, 'update-ref', '-m', 'made', 'refs/heads/flotilla/m', first);
    return { dir, gitDir: bare ? dir : join(dir, '.git'), first, second };
  }

  it('swaps from the expected value, with the reflog line git writes', async () => {
    const { dir, gitDir, first, second } = await repo();
    expect(await writeRefFile(gitDir, 'refs/heads/flotilla/m', second, { expected: first, log: LOG })).toBe(
      'written',
    );
    expect(await git(dir, 'rev-parse', 'refs/heads/flotilla/m')).toBe(second);
    // git's own update-ref, for the same line format: old, new, identity, time, zone, message.
    await git(dir, 'update-ref', '-m', 'flotilla:  integrate\n', 'refs/heads/flotilla/m', first, second);
    const lines = (await readFile(join(gitDir, 'logs/refs/heads/flotilla/m'), 'utf8')).split('\n');
    const shape = (line: string) => line.replace(/ \d+ [+-]\d{4}\t/, ' <time>\t');
    expect(shape(lines[1] ?? '')).toBe(`${first} ${second} ${IDENT} <time>\tflotilla: integrate`);
    expect(shape(lines[1] ?? '').replace(`${first} ${second}`, `${second} ${first}`)).toBe(
      shape(lines[2] ?? ''),
    );
    expect(await git(dir, 'fsck', '--strict', '--no-progress')).toBe('');
    expect(await readdir(join(gitDir, 'refs/heads/flotilla'))).toEqual(['m']);
  });

  it('leaves the ref as it is when it moved, and declines while another writer holds its lock', async () => {
    const { dir, gitDir, first, second } = await repo();
    expect(await writeRefFile(gitDir, 'refs/heads/flotilla/m', first, { expected: second })).toBe('moved');
    expect(await writeRefFile(gitDir, 'refs/heads/flotilla/m', second, { expected: null })).toBe('moved');
    expect(await git(dir, 'rev-parse', 'refs/heads/flotilla/m')).toBe(first);
    const lock = join(gitDir, 'refs/heads/flotilla/m.lock');
    await writeFile(lock, '');
    expect(await writeRefFile(gitDir, 'refs/heads/flotilla/m', second, { expected: first })).toBe('locked');
    expect(await readFile(lock, 'utf8')).toBe('');
    // However old, a lock is never taken away: git cannot tell a killed writer's from a live one's.
    const old = (Date.now() - 3_600_000) / 1000;
    await utimes(lock, old, old);
    expect(await writeRefFile(gitDir, 'refs/heads/flotilla/m', second, { expected: first })).toBe('locked');
    expect(await readFile(lock, 'utf8')).toBe('');
    expect(await git(dir, 'rev-parse', 'refs/heads/flotilla/m')).toBe(first);
  });

  it('waits for a lock its holder lets go of, then writes', async () => {
    const { dir, gitDir, first, second } = await repo();
    const lock = join(gitDir, 'refs/heads/flotilla/m.lock');
    await writeFile(lock, '');
    // The holder lets go while the writer waits (it polls with timers, so this one fires).
    const released = new Promise<void>((done) => setTimeout(() => void rm(lock).then(() => done()), 50));
    const answer = writeRefFile(gitDir, 'refs/heads/flotilla/m', second, { expected: first });
    await released;
    expect(await answer).toBe('written');
    expect(await git(dir, 'rev-parse', 'refs/heads/flotilla/m')).toBe(second);
    expect(await stat(lock).catch(() => null)).toBeNull();
  });

  it('takes a ref that is only in packed-refs, and creates one expected missing', async () => {
    const { dir, gitDir, first, second } = await repo();
    await git(dir, 'pack-refs', '--all');
    expect(await stat(join(gitDir, 'refs/heads/flotilla/m')).catch(() => null)).toBeNull();
    expect(await writeRefFile(gitDir, 'refs/heads/flotilla/m', first, { expected: second })).toBe('moved');
    expect(await writeRefFile(gitDir, 'refs/heads/flotilla/m', second, { expected: first })).toBe('written');
    expect(await writeRefFile(gitDir, 'refs/heads/flotilla/new', first, { expected: null })).toBe('written');
    expect(await git(dir, 'for-each-ref', '--format=%(objectname) %(refname)', 'refs/heads/flotilla/')).toBe(
      `${second} refs/heads/flotilla/m\n${first} refs/heads/flotilla/new`,
    );
  });

  it('keeps a reflog where git would: a bare repository none, unless the log exists', async () => {
    const { dir, gitDir, first, second } = await repo(true);
    const log = { ...LOG, mode: 'none' as const };
    expect(await writeRefFile(gitDir, 'refs/heads/flotilla/m', second, { expected: first, log })).toBe(
      'written',
    );
    expect(await stat(join(gitDir, 'logs/refs/heads/flotilla/m')).catch(() => null)).toBeNull();
    expect(await git(dir, 'rev-parse', 'refs/heads/flotilla/m')).toBe(second);
    // `always` makes one for any ref, as git does.
    const always = { ...LOG, mode: 'always' as const };
    expect(await writeRefFile(gitDir, 'refs/flotilla/x/a1', first, { log: always })).toBe('written');
    expect(await git(dir, 'reflog', 'show', '--format=%H %gs', 'refs/flotilla/x/a1')).toBe(
      `${first} flotilla: integrate`,
    );
  });

  it('leaves a branch HEAD names to git, which logs the write to HEAD too', async () => {
    const { dir, gitDir, first, second } = await repo();
    await git(dir, 'symbolic-ref', 'HEAD', 'refs/heads/flotilla/m');
    expect(await writeRefFile(gitDir, 'refs/heads/flotilla/m', second, { expected: first, log: LOG })).toBe(
      'declined',
    );
    expect(await git(dir, 'rev-parse', 'refs/heads/flotilla/m')).toBe(first);
  });

  it('lets one of several racing writers take the lock: one writes, no lock is left', async () => {
    const { dir, gitDir, first, second } = await repo();
    // Writers on other hosts of one machine (processes: the writer's file calls are synchronous,
    // so two in one process never interleave): one writes, the others wait and find the ref moved.
    const answers = await racingWriters(4, gitDir, 'refs/heads/flotilla/m', second, first);
    expect(answers.filter((answer) => answer === 'written')).toHaveLength(1);
    expect(answers.every((answer) => ['written', 'moved'].includes(answer))).toBe(true);
    expect(await git(dir, 'rev-parse', 'refs/heads/flotilla/m')).toBe(second);
    expect(await readdir(join(gitDir, 'refs/heads/flotilla'))).toEqual(['m']);
  });

  it.each([
    ['a symbolic ref', 'refs/heads/sym'],
    ['a name with a folder of refs in its place', 'refs/heads/flotilla'],
    ['a name below a ref file', 'refs/heads/flotilla/m/sub'],
    ['not under refs/', 'HEAD'],
  ])('declines %s, and changes nothing', async (_name, ref) => {
    const { dir, gitDir, second } = await repo();
    await git(dir, 'symbolic-ref', 'refs/heads/sym', 'refs/heads/main');
    const before = await git(dir, 'for-each-ref');
    expect(await writeRefFile(gitDir, ref, second)).toBe('declined');
    expect(await git(dir, 'for-each-ref')).toBe(before);
    expect(await git(dir, 'status', '--porcelain', '--ignored')).toBe('');
  });
});
