/**
 * The host's own file-system monitor (src/workers/workspace/inotify-monitor.ts) on real folders: every
 * change made after a clock is named by the next answer, and whenever it may have missed one it
 * answers null, never a short list.
 */
import { execFileSync } from 'node:child_process';
import {
  appendFile,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  readlink,
  rename,
  rm,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MonitoredChange } from '../../../src/workers/workspace/file-monitor.js';
import { monitorKind } from '../../../src/workers/workspace/file-monitor.js';
import { InotifyMonitor } from '../../../src/workers/workspace/inotify-monitor.js';

let root: string;
let counter = 0;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'flotilla-inotify-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** A tree of a few folders and files, watched by a new monitor, and its first clock. */
async function watched(options: { readonly overflowGuard?: number; readonly keptChanges?: number } = {}) {
  const dir = join(root, `tree-${++counter}`);
  await mkdir(join(dir, 'src', 'deep', 'er'), { recursive: true });
  await mkdir(join(dir, 'docs'), { recursive: true });
  await mkdir(join(dir, '.git', 'objects'), { recursive: true });
  await writeFile(join(dir, 'README'), 'readme\n');
  await writeFile(join(dir, 'src', 'deep', 'er', 'a.txt'), 'a\n');
  await writeFile(join(dir, 'docs', 'b.txt'), 'b\n');
  const monitor = new InotifyMonitor(options);
  const clock = await monitor.clock(dir);
  if (!clock) throw new Error('no clock');
  return { dir, monitor, clock };
}

function byName(changes: readonly MonitoredChange[] | undefined) {
  return Object.fromEntries((changes ?? []).map((change) => [change.name, change]));
}

describe('the inotify monitor', () => {
  it('names a file edited in place deep in the tree, and nothing before the clock', async () => {
    const { dir, monitor, clock } = await watched();
    await appendFile(join(dir, 'src', 'deep', 'er', 'a.txt'), 'edited\n');
    const answer = await monitor.changedSince(dir, clock);
    expect(answer?.changes.map((c) => c.name)).toEqual(['src/deep/er/a.txt']);
    expect(byName(answer?.changes)['src/deep/er/a.txt']).toMatchObject({ exists: true, type: 'f' });
    // Its clock comes after the edit: asked again, nothing changed since.
    expect((await monitor.changedSince(dir, answer?.clock ?? ''))?.changes).toEqual([]);
    monitor.close();
  });

  it('names every file of a folder made after the clock, those written the instant it was made too', async () => {
    const { dir, monitor, clock } = await watched();
    // Made by another process while this one's event loop is blocked: every file is written
    // before any watch of the new folders can exist.
    execFileSync('sh', ['-c', 'mkdir -p new/sub && echo x > new/sub/x.txt && echo y > new/y.txt'], {
      cwd: dir,
    });
    const first = await monitor.changedSince(dir, clock);
    const names = byName(first?.changes);
    expect(names.new).toMatchObject({ type: 'd', new: true, exists: true });
    expect(names['new/sub']).toMatchObject({ type: 'd', new: true });
    expect(names['new/sub/x.txt']).toMatchObject({ type: 'f', exists: true });
    expect(names['new/y.txt']).toMatchObject({ type: 'f', exists: true });
    // The new folder is watched now: a later edit in it is named by the next answer.
    await appendFile(join(dir, 'new', 'sub', 'x.txt'), 'more\n');
    const second = await monitor.changedSince(dir, first?.clock ?? '');
    expect(second?.changes.map((c) => c.name)).toEqual(['new/sub/x.txt']);
    monitor.close();
  });

  it('names a deleted folder as a folder, and the files of one deleted and made again at the same name', async () => {
    const { dir, monitor, clock } = await watched();
    await rm(join(dir, 'docs'), { recursive: true });
    const gone = byName((await monitor.changedSince(dir, clock))?.changes);
    expect(gone.docs).toMatchObject({ type: 'd', exists: false, new: true });

    const again = await monitor.clock(dir);
    await rm(join(dir, 'src', 'deep'), { recursive: true });
    await mkdir(join(dir, 'src', 'deep', 'er'), { recursive: true });
    await writeFile(join(dir, 'src', 'deep', 'er', 'a.txt'), 'a\n');
    await writeFile(join(dir, 'src', 'deep', 'er', 'left.txt'), 'an untracked leftover\n');
    const names = byName((await monitor.changedSince(dir, again ?? ''))?.changes);
    expect(names['src/deep']).toMatchObject({ type: 'd', new: true, exists: true });
    expect(names['src/deep/er/left.txt']).toMatchObject({ exists: true });
    // And the folder made again is watched in place of the old one.
    const later = await monitor.clock(dir);
    await appendFile(join(dir, 'src', 'deep', 'er', 'a.txt'), 'edited\n');
    expect((await monitor.changedSince(dir, later ?? ''))?.changes.map((c) => c.name)).toEqual([
      'src/deep/er/a.txt',
    ]);
    monitor.close();
  });

  it('names both ends of a folder moved, and what is below the new name', async () => {
    const { dir, monitor, clock } = await watched();
    await rename(join(dir, 'src'), join(dir, 'lib'));
    const names = byName((await monitor.changedSince(dir, clock))?.changes);
    expect(names.src).toMatchObject({ type: 'd', exists: false });
    expect(names.lib).toMatchObject({ type: 'd', exists: true, new: true });
    expect(names['lib/deep/er/a.txt']).toMatchObject({ exists: true });
    monitor.close();
  });

  it('leaves out git’s own folder', async () => {
    const { dir, monitor, clock } = await watched();
    await writeFile(join(dir, '.git', 'objects', 'pack'), 'git writes here\n');
    await writeFile(join(dir, 'README'), 'changed\n');
    expect((await monitor.changedSince(dir, clock))?.changes.map((c) => c.name)).toEqual(['README']);
    monitor.close();
  });

  it('cannot answer across a read of the queue as long as an overflow would take (libuv drops the overflow event)', async () => {
    const { dir, monitor, clock } = await watched({ overflowGuard: 20 });
    // Written while this process's event loop is blocked: the 30 events wait in the queue and
    // come in one read.
    execFileSync('sh', ['-c', 'for i in $(seq 30); do echo $i > f$i.txt; done'], { cwd: dir });
    expect(await monitor.changedSince(dir, clock)).toBeNull();
    // A new clock starts again.
    const fresh = await monitor.clock(dir);
    await writeFile(join(dir, 'README'), 'changed\n');
    expect((await monitor.changedSince(dir, fresh ?? ''))?.changes.map((c) => c.name)).toEqual(['README']);
    monitor.close();
  });

  it('answers after as many events as that when they came as they were made (a steady stream, not an overflow)', async () => {
    const { dir, monitor, clock } = await watched({ overflowGuard: 20 });
    for (let i = 0; i < 30; i++) {
      await writeFile(join(dir, `f${i}.txt`), `${i}\n`);
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect((await monitor.changedSince(dir, clock))?.changes).toHaveLength(30);
    monitor.close();
  });

  it('answers an older clock after a newer one (two runs’ guards watching one repository)', async () => {
    const { dir, monitor, clock } = await watched();
    await writeFile(join(dir, 'README'), 'one\n');
    const later = await monitor.clock(dir);
    await writeFile(join(dir, 'docs', 'b.txt'), 'two\n');
    expect((await monitor.changedSince(dir, later ?? ''))?.changes.map((c) => c.name)).toEqual([
      'docs/b.txt',
    ]);
    expect((await monitor.changedSince(dir, clock))?.changes.map((c) => c.name).sort()).toEqual([
      'README',
      'docs/b.txt',
    ]);
    monitor.close();
  });

  it('forgets its older changes past a bound, and then cannot answer a clock from before them', async () => {
    const { dir, monitor, clock } = await watched({ keptChanges: 10 });
    await writeFile(join(dir, 'README'), 'early\n');
    const later = await monitor.clock(dir);
    for (let i = 0; i < 12; i++) await writeFile(join(dir, 'docs', `n${i}.txt`), `${i}\n`);
    expect(await monitor.changedSince(dir, clock)).toBeNull();
    const recent = await monitor.clock(dir);
    await writeFile(join(dir, 'README'), 'late\n');
    expect((await monitor.changedSince(dir, recent ?? ''))?.changes.map((c) => c.name)).toEqual(['README']);
    expect(later).not.toBeNull();
    monitor.close();
  });

  it('makes its cookie folder again when a /tmp cleaner removed it', async () => {
    const { dir, monitor, clock } = await watched();
    const cookies = (await readdir(tmpdir())).filter((name) => name.startsWith('flotilla-monitor-'));
    await writeFile(join(dir, 'README'), 'one\n');
    expect(await monitor.changedSince(dir, clock)).not.toBeNull();
    const made = (await readdir(tmpdir())).filter(
      (name) => name.startsWith('flotilla-monitor-') && !cookies.includes(name),
    );
    expect(made).toHaveLength(1);
    await rm(join(tmpdir(), made[0] ?? 'none'), { recursive: true });
    expect(await monitor.changedSince(dir, clock)).toBeNull();
    expect((await monitor.changedSince(dir, clock))?.changes.map((c) => c.name)).toEqual(['README']);
    monitor.close();
  });

  it('cannot answer for a clock of another process, or of a tree it stopped watching', async () => {
    const { dir, monitor, clock } = await watched();
    const other = new InotifyMonitor();
    expect(await other.changedSince(dir, clock)).toBeNull();
    other.close();
    await monitor.forgetUnder(root);
    expect(monitor.watchedFolders(dir)).toBe(0);
    expect(await monitor.changedSince(dir, clock)).toBeNull();
    monitor.close();
  });

  it('cannot answer once a name it cannot read faithfully appears, until the tree is watched afresh', async () => {
    const { dir, monitor, clock } = await watched();
    await writeFile(Buffer.from(`${dir}/bad-\xff-name`, 'latin1'), 'x\n');
    expect(await monitor.changedSince(dir, clock)).toBeNull();
    await rm(Buffer.from(`${dir}/bad-\xff-name`, 'latin1'));
    const fresh = await monitor.clock(dir);
    expect(fresh).not.toBeNull();
    await writeFile(join(dir, 'README'), 'changed\n');
    expect((await monitor.changedSince(dir, fresh ?? ''))?.changes.map((c) => c.name)).toEqual(['README']);
    monitor.close();
  });

  it('leaves a tree smaller than its bound to the walks, and says so without listing it again', async () => {
    const { dir } = await watched();
    // The tree holds 7 entries below its top (.git left out).
    const small = new InotifyMonitor({ minEntries: 8 });
    expect(await small.clock(dir)).toBeNull();
    expect(small.declines(dir)).toBe(true);
    expect(small.watchedFolders(dir)).toBe(0);
    small.close();
    const large = new InotifyMonitor({ minEntries: 7 });
    expect(await large.clock(dir)).not.toBeNull();
    expect(large.declines(dir)).toBe(false);
    large.close();
  });

  it('gives a second clock asked during the first listing only once every folder is watched', async () => {
    const { dir } = await watched();
    for (let i = 0; i < 30; i++) await mkdir(join(dir, `d${i}`, 'deep'), { recursive: true });
    const monitor = new InotifyMonitor();
    const first = monitor.clock(dir);
    const second = await monitor.clock(dir);
    // Written as soon as the second clock is given, the first listing perhaps not done.
    await writeFile(join(dir, 'd29', 'deep', 'late.txt'), 'x\n');
    await first;
    expect((await monitor.changedSince(dir, second ?? ''))?.changes.map((c) => c.name)).toEqual([
      'd29/deep/late.txt',
    ]);
    monitor.close();
  });

  it('cannot answer when the changes it forgets while the answer waits include ones after the clock', async () => {
    const { dir, monitor, clock } = await watched({ keptChanges: 10 });
    await writeFile(join(dir, 'README'), 'edited\n');
    // A folder of 20 files, listed while the answer waits for it: the README's change is forgotten.
    execFileSync('sh', ['-c', 'mkdir big && for i in $(seq 20); do echo $i > big/f$i; done'], { cwd: dir });
    expect(await monitor.changedSince(dir, clock)).toBeNull();
    monitor.close();
  });

  it('cannot answer a clock from before the tree was forgotten and watched again', async () => {
    const { dir, monitor, clock } = await watched();
    await monitor.forget(dir);
    await writeFile(join(dir, 'README'), 'written while nothing watched\n');
    expect(await monitor.clock(dir)).not.toBeNull();
    expect(await monitor.changedSince(dir, clock)).toBeNull();
    monitor.close();
  });

  it('cannot answer once the tree’s folder itself was replaced by another of the same name', async () => {
    const { dir, monitor, clock } = await watched();
    await rename(dir, `${dir}.old`);
    await mkdir(join(dir, 'src'), { recursive: true });
    await writeFile(join(dir, 'src', 'new.txt'), 'x\n');
    expect(await monitor.changedSince(dir, clock)).toBeNull();
    monitor.close();
  });

  it('cannot answer after an overflow-long read caused through another monitor of the process', async () => {
    const { dir, monitor, clock } = await watched({ overflowGuard: 20 });
    const other = await watched({ overflowGuard: 1_000_000 });
    execFileSync('sh', ['-c', 'for i in $(seq 30); do echo $i > f$i.txt; done'], { cwd: other.dir });
    expect(await monitor.changedSince(dir, clock)).toBeNull();
    // The other one's guard is not reached: it answers.
    expect((await other.monitor.changedSince(other.dir, other.clock))?.changes).toHaveLength(30);
    other.monitor.close();
    monitor.close();
  });

  it('holds no kernel watch after a tree is forgotten in the middle of its first listing', async () => {
    const { dir, monitor: first } = await watched();
    first.close();
    for (let i = 0; i < 30; i++) await mkdir(join(dir, `d${i}`, 'deep'), { recursive: true });
    const before = await inotifyWatches();
    const monitor = new InotifyMonitor();
    const clock = monitor.clock(dir);
    await new Promise((resolve) => setImmediate(resolve));
    await monitor.forget(dir);
    expect(await clock).toBeNull();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await inotifyWatches()).toBe(before);
    monitor.close();
  });

  it('never watches or lists what a link put in place of a folder above a new one points at', async () => {
    const { dir, monitor, clock } = await watched();
    const outside = join(root, `outside-${++counter}`);
    await mkdir(join(outside, 'lib', 'a'), { recursive: true });
    await writeFile(join(outside, 'lib', 'a', 'secret'), 'not the tree’s\n');
    execFileSync('sh', ['-c', `mkdir docs/lib && mv docs docs.old && ln -s ${outside} docs`], { cwd: dir });
    const names = (await monitor.changedSince(dir, clock))?.changes.map((c) => c.name) ?? [];
    expect(names).toContain('docs');
    expect(names.filter((name) => name.includes('secret'))).toEqual([]);
    // The top, src, src/deep, src/deep/er, docs.old and docs.old/lib; nothing through the link.
    expect(monitor.watchedFolders(dir)).toBe(6);
    monitor.close();
  });

  it('watches one folder per folder of the tree', async () => {
    const { dir, monitor } = await watched();
    // The top, src, src/deep, src/deep/er and docs; not .git.
    expect(monitor.watchedFolders(dir)).toBe(5);
    monitor.close();
  });
});

describe('FLOTILLA_MONITOR', () => {
  it.each([
    ['unset: the host’s own watches, for large trees', {}, 'auto'],
    ['auto', { FLOTILLA_MONITOR: 'auto' }, 'auto'],
    ['auto over a Watchman socket', { FLOTILLA_MONITOR: 'auto', FLOTILLA_WATCHMAN: '/s' }, 'auto'],
    ['inotify', { FLOTILLA_MONITOR: 'inotify' }, 'inotify'],
    ['inotify over a Watchman socket', { FLOTILLA_MONITOR: 'inotify', FLOTILLA_WATCHMAN: '/s' }, 'inotify'],
    ['watchman', { FLOTILLA_MONITOR: 'watchman' }, 'watchman'],
    ['off over a Watchman socket', { FLOTILLA_MONITOR: 'off', FLOTILLA_WATCHMAN: '/s' }, 'off'],
    ['FLOTILLA_WATCHMAN=on alone, as before', { FLOTILLA_WATCHMAN: 'on' }, 'watchman'],
    ['FLOTILLA_WATCHMAN=off alone: no Watchman, the default', { FLOTILLA_WATCHMAN: 'off' }, 'auto'],
    ['an unknown word', { FLOTILLA_MONITOR: 'fswatch' }, 'off'],
  ])('%s', (_name, env: Record<string, string>, kind) => {
    expect(monitorKind(env)).toBe(kind);
  });
});

/** The inotify watches this process holds (every monitor's, through libuv's one instance). */
async function inotifyWatches(): Promise<number> {
  let count = 0;
  for (const fd of await readdir('/proc/self/fd')) {
    const target = await readlink(`/proc/self/fd/${fd}`).catch(() => '');
    if (target !== 'anon_inode:inotify') continue;
    const info = await readFile(`/proc/self/fdinfo/${fd}`, 'utf8').catch(() => '');
    count += info.split('\n').filter((line) => line.startsWith('inotify wd:')).length;
  }
  return count;
}
