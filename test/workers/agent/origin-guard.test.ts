import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  diffOrigin,
  diffPlaces,
  originGuardNeeded,
  placesToLook,
  snapshotWithout,
  watchOrigin,
} from '../../../src/workers/agent/origin-guard.js';
import {
  BEFORE_REUSE_MS,
  createOriginStatusReads,
  type OriginStatus,
  porcelainEntries,
} from '../../../src/workers/agent/origin-status.js';
import { classifyOriginChanges, foldersToList } from '../../../src/workers/agent/origin-verdict.js';
import { fileMonitor } from '../../../src/workers/workspace/file-monitor.js';
import { InotifyMonitor } from '../../../src/workers/workspace/inotify-monitor.js';

const snap = (entries: Record<string, number>) => ({ root: '/r', entries: new Map(Object.entries(entries)) });

describe('porcelainEntries', () => {
  it.each([
    ['', []],
    [' M a.txt\0?? b/\0', [' M a.txt', '?? b/']],
    // A rename's source path is a record of its own and is not an entry.
    ['R  new.txt\0old.txt\0 M c\0', ['R  new.txt', ' M c']],
  ])('%j', (output, expected) => {
    expect(porcelainEntries(output)).toEqual(expected);
  });
});

describe('diffOrigin', () => {
  it.each([
    ['nothing changed', { ' M a': 1 }, { ' M a': 1 }, []],
    ['a new untracked file', {}, { '?? x.txt': 5 }, ['x.txt']],
    ['a dirty file written again', { ' M a': 1 }, { ' M a': 2 }, ['a']],
    ['a change reverted', { ' M a': 1 }, {}, ['a']],
    ['status letters changed', { '?? a': 1 }, { 'A  a': 1 }, ['a']],
  ])('%s', (_name, before, after, expected) => {
    expect(diffOrigin(snap(before), snap(after))).toEqual(expected);
  });
});

describe('snapshotWithout', () => {
  const status = snap({
    ' M src/a.ts': 1,
    '?? .flotilla/': 2,
    '?? ws/checkout/x': 3,
    '?? ws/': 4,
    '?? b': 5,
  });
  it.each([
    ['nothing excluded', [], [' M src/a.ts', '?? .flotilla/', '?? ws/checkout/x', '?? ws/', '?? b']],
    // An untracked folder that holds an excluded one is left out too: flotilla's writes show as it.
    ['a home inside the repository', ['/r/.flotilla'], [' M src/a.ts', '?? ws/checkout/x', '?? ws/', '?? b']],
    ['a checkout inside an untracked folder', ['/r/ws/checkout'], [' M src/a.ts', '?? .flotilla/', '?? b']],
    [
      'a directory elsewhere',
      ['/elsewhere'],
      [' M src/a.ts', '?? .flotilla/', '?? ws/checkout/x', '?? ws/', '?? b'],
    ],
  ])('%s', (_name, exclude, expected) => {
    expect([...snapshotWithout(status, exclude).entries.keys()]).toEqual(expected);
  });
});

describe('originGuardNeeded', () => {
  const exclude = ['/home/u/.flotilla', '/home/u/.flotilla/checkouts/c1'];
  it.each([
    ['unsandboxed', '/home/u/project', null, true],
    ['sandboxed, nothing writable but the checkout', '/home/u/project', [], false],
    [
      'sandboxed, config folders elsewhere',
      '/home/u/project',
      ['/home/u/.claude', '/home/u/.cache/x'],
      false,
    ],
    // A home folder under git (dotfiles): ~/.claude is in the repository.
    ['sandboxed, a writable folder inside the repository', '/home/u', ['/home/u/.claude'], true],
    ['sandboxed, a writable folder holding the repository', '/home/u/project', ['/home/u'], true],
    ['sandboxed, the repository itself writable', '/home/u/project', ['/home/u/project/'], true],
    ['sandboxed, a sibling with a common prefix', '/home/u/project', ['/home/u/project-cache'], false],
    // Inside flotilla's home, which the guard leaves out anyway.
    ['sandboxed, a writable folder in an excluded one', '/home/u', ['/home/u/.flotilla/cache'], false],
  ])('%s', (_name, root, writable, expected) => {
    expect(originGuardNeeded({ root, writable, exclude })).toBe(expected);
  });
});

describe('classifyOriginChanges', () => {
  const run = {
    name: 't1-a1',
    promptPath: '.planning/dispatch/t1-a1-PROMPT.md',
    resultPath: '.planning/dispatch/t1-a1-RESULT.md',
  };
  const review = {
    ...run,
    name: 't1-a1-review',
    promptPath: '.planning/dispatch/t1-a1-review-PROMPT.md',
    resultPath: '.planning/dispatch/t1-a1-review-RESULT.md',
  };
  const elsewhere = { ...run, resultPath: 'out/t1-a1.md' };
  it.each([
    ['nothing', [], run, []],
    ['someone else’s edits', ['README.md', 'src/a.ts'], run, []],
    [
      'its result file',
      ['greeting.txt', '.planning/dispatch/t1-a1-RESULT.md'],
      run,
      ['.planning/dispatch/t1-a1-RESULT.md'],
    ],
    [
      'its prompt file',
      ['./.planning/dispatch/t1-a1-PROMPT.md'],
      run,
      ['./.planning/dispatch/t1-a1-PROMPT.md'],
    ],
    [
      'another dispatch file of its name',
      ['.planning/dispatch/t1-a1-NOTES.md'],
      run,
      ['.planning/dispatch/t1-a1-NOTES.md'],
    ],
    ['the review’s files are not the run’s', ['.planning/dispatch/t1-a1-review-RESULT.md'], run, []],
    ['the run’s files are not the review’s', ['.planning/dispatch/t1-a1-RESULT.md'], review, []],
    ['attempt 10 is not attempt 1', ['.planning/dispatch/t1-a10-RESULT.md'], run, []],
    ['another attempt of the task', ['.planning/dispatch/t1-a2-RESULT.md'], run, []],
    ['a new folder alone is not proof', ['.planning/'], run, []],
    ['a result path outside the dispatch folder', ['out/t1-a1.md'], elsewhere, ['out/t1-a1.md']],
    ['its name outside the dispatch folder', ['docs/t1-a1-RESULT.md'], run, []],
  ])('%s', (_name, paths, files, expected) => {
    expect(classifyOriginChanges(paths, files)).toEqual(expected);
  });
});

describe('foldersToList', () => {
  const files = {
    name: 't1-a1',
    promptPath: '.planning/dispatch/t1-a1-PROMPT.md',
    resultPath: 'out/r/t1-a1.md',
  };
  it.each([
    ['no folder changed', ['README.md', '.planning/dispatch/x'], []],
    ['a new .planning/', ['.planning/'], ['.planning/dispatch']],
    ['a new dispatch folder', ['.planning/dispatch/'], ['.planning/dispatch']],
    ['a new out/', ['out/', 'src/'], ['out/r']],
    ['an unrelated folder', ['.planningx/', 'src/'], []],
  ])('%s', (_name, paths, expected) => {
    expect(foldersToList(paths, files)).toEqual(expected);
  });
});

describe('placesToLook', () => {
  it.each([
    [
      'started at the top',
      '/r',
      ['.planning/dispatch/t1-a1-PROMPT.md', '.planning/dispatch/t1-a1-RESULT.md'],
      ['.planning/dispatch'],
    ],
    [
      'a result file elsewhere',
      '/r',
      ['.planning/dispatch/t1-a1-PROMPT.md', 'out/t1-a1.json'],
      ['.planning/dispatch', 'out'],
    ],
    ['a result at the top', '/r', ['RESULT.md'], ['', '.planning/dispatch']],
    [
      'started in a subfolder',
      '/r/pkg',
      ['.planning/dispatch/t1-a1-PROMPT.md'],
      ['.planning/dispatch', 'pkg/.planning/dispatch'],
    ],
    ['a result outside the repository', '/r', ['../elsewhere/R.md'], ['.planning/dispatch']],
  ])('%s', (_, dir, own, places) => {
    expect(placesToLook('/r', dir, own)).toEqual(places);
  });
});

describe('diffPlaces', () => {
  it('lists what appeared, vanished or changed', () => {
    const before = new Map([
      ['a', '1:1'],
      ['b', '1:1'],
      ['c', '1:1'],
    ]);
    const after = new Map([
      ['a', '1:1'],
      ['b', '2:5'],
      ['d', '1:1'],
    ]);
    expect(diffPlaces(before, after)).toEqual(['b', 'c', 'd']);
  });
});

describe('shared status reads', () => {
  /** A status reader whose reads finish when the test says, counting them. */
  function fakeReader() {
    const pending: Array<{ root: string; finish: () => void }> = [];
    const read = (root: string) =>
      new Promise<OriginStatus>((resolve) => {
        pending.push({
          root,
          finish: () => resolve({ root, entries: new Map([[`?? read-${pending.length}`, 1]]) }),
        });
      });
    return { read, pending };
  }

  it('lets a before join a status in flight, or take one that finished within a second', async () => {
    const fake = fakeReader();
    let time = 0;
    const reads = createOriginStatusReads(fake.read, () => time);
    const a = reads.before('/r');
    const b = reads.before('/r');
    expect(fake.pending).toHaveLength(1);
    fake.pending[0]?.finish();
    expect(await a).toBe(await b);
    time += BEFORE_REUSE_MS;
    expect(await reads.before('/r')).toBe(await a);
    expect(fake.pending).toHaveLength(1);
    // Older than that: read again.
    time += 1;
    const c = reads.before('/r');
    expect(fake.pending).toHaveLength(2);
    fake.pending[1]?.finish();
    expect(await c).not.toBe(await a);
  });

  it('never lets an after take a finished status, however fresh', async () => {
    const fake = fakeReader();
    const reads = createOriginStatusReads(fake.read, () => 0);
    const before = reads.before('/r');
    fake.pending[0]?.finish();
    await before;
    const after = reads.after('/r', reads.mark());
    expect(fake.pending).toHaveLength(2);
    fake.pending[1]?.finish();
    expect(await after).not.toBe(await before);
    // What an after read is the freshest state: the next run's before takes it.
    expect(await reads.before('/r')).toBe(await after);
  });

  it('lets an after join only a status that started after the CLI exited', async () => {
    const fake = fakeReader();
    const reads = createOriginStatusReads(fake.read);
    // A run's CLI exits (exitedA), then another run's after starts a status…
    const exitedA = reads.mark();
    const first = reads.after('/r', exitedA);
    expect(fake.pending).toHaveLength(1);
    // …which a run that exited before it started may join,
    const joined = reads.after('/r', exitedA);
    expect(fake.pending).toHaveLength(1);
    // but a run that exited after it started may not: it starts its own.
    const exitedB = reads.mark();
    const own = reads.after('/r', exitedB);
    expect(fake.pending).toHaveLength(2);
    // The newest status in flight is the one a later before joins.
    const before = reads.before('/r');
    expect(fake.pending).toHaveLength(2);
    for (const read of fake.pending) read.finish();
    expect(await joined).toBe(await first);
    expect(await own).not.toBe(await first);
    expect(await before).toBe(await own);
  });

  it('keeps repositories apart and drops a failed read', async () => {
    const fake = fakeReader();
    let fail = true;
    const reads = createOriginStatusReads((root) =>
      fail ? Promise.reject(new Error('git gone')) : fake.read(root),
    );
    expect(await reads.before('/r')).toBeNull();
    fail = false;
    const r = reads.before('/r');
    const s = reads.before('/s');
    expect(fake.pending.map((p) => p.root)).toEqual(['/r', '/s']);
    for (const read of fake.pending) read.finish();
    expect((await r)?.root).toBe('/r');
    expect((await s)?.root).toBe('/s');
  });
});

describe('watchOrigin', () => {
  let repo: string;
  beforeAll(async () => {
    repo = await realpath(await mkdtemp(join(tmpdir(), 'flotilla-watch-')));
    execFileSync('git', ['init', '-q', repo]);
  });
  afterAll(async () => {
    await rm(repo, { recursive: true, force: true });
  });

  /** Reads that hand out the given statuses in turn, counting how many were taken. */
  function scripted(...statuses: Array<Record<string, number>>) {
    let taken = 0;
    const reads = createOriginStatusReads(async (root) => {
      const entries = statuses[taken++] ?? {};
      return { root, entries: new Map(Object.entries(entries)) };
    });
    return { reads, taken: () => taken };
  }

  it('shares one status between runs and leaves out each run’s own directories', async () => {
    const { reads, taken } = scripted({ '?? a/': 1, '?? b/': 1 }, { '?? a/': 2, '?? b/': 2, '?? c': 1 });
    const [first, second] = await Promise.all([
      watchOrigin({ dir: repo, exclude: [join(repo, 'a')], writable: null }, reads, null),
      watchOrigin({ dir: repo, exclude: [join(repo, 'b')], writable: null }, reads, null),
    ]);
    expect(taken()).toBe(1);
    // Both CLIs exited before the after status started: it serves both.
    const exited = reads.mark();
    const [firstChanges, secondChanges] = await Promise.all([
      first?.changes(exited),
      second?.changes(exited),
    ]);
    expect(taken()).toBe(2);
    expect(firstChanges).toEqual(['b/', 'c']);
    expect(secondChanges).toEqual(['a/', 'c']);
  });

  it('with a file-system monitor, walks nothing: the changes are the files it saw change, less ignored ones and excluded folders', async () => {
    const monitor = await fileMonitor();
    if (!monitor) throw new Error('no Watchman: the suite starts its own (test/helpers/watchman-global.ts)');
    await writeFile(join(repo, '.gitignore'), '*.log\n.planning/\n');
    await mkdir(join(repo, 'checkout'), { recursive: true });
    const { reads, taken } = scripted();
    const watch = await watchOrigin(
      { dir: repo, exclude: [join(repo, 'checkout')], writable: null },
      reads,
      monitor,
    );
    await writeFile(join(repo, 'edited.txt'), 'someone’s edit\n');
    await writeFile(join(repo, 'build.log'), 'ignored\n');
    await writeFile(join(repo, 'checkout', 'work.txt'), 'the run’s own checkout\n');
    await mkdir(join(repo, '.planning', 'dispatch'), { recursive: true });
    await writeFile(join(repo, '.planning', 'dispatch', 't1-a1-RESULT.md'), 'escaped\n');
    expect(await watch?.changes(reads.mark())).toEqual(['.planning/dispatch/t1-a1-RESULT.md', 'edited.txt']);
    expect(taken()).toBe(0);
  });

  /** A new repository watched by a new inotify monitor of its own, both gone after `body`. */
  async function withWatchedRepo(body: (repo: string, monitor: InotifyMonitor) => Promise<void>) {
    const dir = await realpath(await mkdtemp(join(tmpdir(), 'flotilla-watch-inotify-')));
    const monitor = new InotifyMonitor();
    try {
      execFileSync('git', ['init', '-q', dir]);
      await body(dir, monitor);
    } finally {
      monitor.close();
      await rm(dir, { recursive: true, force: true });
    }
  }

  it('with the host’s own watches, a file gone counts only when git tracks it: not one made and removed in the run, nor a folder’s own event', async () => {
    await withWatchedRepo(async (tracked, monitor) => {
      await mkdir(join(tracked, 'docs'), { recursive: true });
      await writeFile(join(tracked, 'docs', 'b.txt'), 'tracked\n');
      await writeFile(join(tracked, 'keep.txt'), 'tracked\n');
      execFileSync('git', ['-C', tracked, 'add', '.']);
      const { reads, taken } = scripted();
      const watch = await watchOrigin({ dir: tracked, exclude: [], writable: null }, reads, monitor);
      // A tracked folder deleted (its watcher also names `docs/docs` for its own deletion), a
      // scratch file made and removed, a tracked file edited.
      await rm(join(tracked, 'docs'), { recursive: true });
      await writeFile(join(tracked, 'scratch.tmp'), 'made and removed\n');
      await rm(join(tracked, 'scratch.tmp'));
      await writeFile(join(tracked, 'keep.txt'), 'edited\n');
      expect(await watch?.changes(reads.mark())).toEqual(['docs/b.txt', 'keep.txt']);
      expect(taken()).toBe(0);
    });
  });

  it('when the monitor loses track during the run (an agent can make the host’s own watches give up), still sees the run’s own files', async () => {
    await withWatchedRepo(async (lost, monitor) => {
      const own = ['.planning/dispatch/t1-a1-PROMPT.md'];
      const { reads, taken } = scripted();
      const watch = await watchOrigin({ dir: lost, exclude: [], writable: null, own }, reads, monitor);
      await mkdir(join(lost, '.planning', 'dispatch'), { recursive: true });
      await writeFile(join(lost, '.planning', 'dispatch', 't1-a1-PROMPT.md'), 'escaped\n');
      // A name that is not UTF-8: the watches cannot vouch for their answer any more.
      await writeFile(Buffer.from(`${lost}/bad-\xff.txt`, 'latin1'), 'x\n');
      expect(await watch?.changes(reads.mark())).toEqual(['.planning/dispatch/t1-a1-PROMPT.md']);
      expect(taken()).toBe(0);
    });
  });

  it('on a repository too big to walk, looks only where the run’s own files would land: no status at all', async () => {
    const big = await realpath(await mkdtemp(join(tmpdir(), 'flotilla-big-origin-')));
    try {
      execFileSync('git', ['init', '-q', big]);
      await writeFile(join(big, 'a.txt'), 'a\n');
      execFileSync('git', ['-C', big, 'add', 'a.txt']);
      const own = ['.planning/dispatch/t1-a1-PROMPT.md', 'out/t1-a1-RESULT.md'];
      const { reads, taken } = scripted();
      // An index over 0 bytes counts as too big here; the real bound is WALKED_INDEX_BYTES.
      const watch = await watchOrigin({ dir: big, exclude: [], writable: null, own }, reads, null, 0);
      await writeFile(join(big, 'a.txt'), 'someone’s edit, not looked at\n');
      await mkdir(join(big, '.planning', 'dispatch'), { recursive: true });
      await writeFile(join(big, '.planning', 'dispatch', 't1-a1-RESULT.md'), 'escaped\n');
      await mkdir(join(big, 'out'));
      await writeFile(join(big, 'out', 't1-a1-RESULT.md'), 'escaped too\n');
      expect(await watch?.changes(reads.mark())).toEqual([
        '.planning/dispatch/t1-a1-RESULT.md',
        'out/t1-a1-RESULT.md',
      ]);
      expect(taken()).toBe(0);
      // The same repository under the bound: the walk, as for any repository.
      const walked = scripted();
      await watchOrigin({ dir: big, exclude: [], writable: null, own }, walked.reads, null);
      expect(walked.taken()).toBe(1);
    } finally {
      await rm(big, { recursive: true, force: true });
    }
  });

  it('reads nothing under a sandbox that cannot write into the repository', async () => {
    const { reads, taken } = scripted();
    const elsewhere = await realpath(tmpdir());
    expect(await watchOrigin({ dir: repo, exclude: [], writable: [] }, reads, null)).toBeNull();
    expect(
      await watchOrigin({ dir: repo, exclude: [], writable: [join(elsewhere, 'not-there')] }, reads, null),
    ).toBeNull();
    expect(taken()).toBe(0);
    // A writable folder that holds the repository: the guard runs.
    expect(await watchOrigin({ dir: repo, exclude: [], writable: [elsewhere] }, reads, null)).not.toBeNull();
    expect(taken()).toBe(1);
  });
});
