/**
 * Warm checkouts with a file-system monitor (src/workers/workspace/watchman.ts): a reset and an attempt's
 * listing look only at what the monitor says changed. These tests hold them to the whole-tree
 * answers: after every kind of change an agent can make, the reset leaves exactly a fresh checkout
 * of the target, and the listing equals `git status` of the whole tree.
 */
import { lstat, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileMonitor, resetFileMonitor } from '../../../src/workers/workspace/file-monitor.js';
import { monitoredWorktree } from '../../../src/workers/workspace/monitored-checkout.js';
import { readCheckoutState } from '../../../src/workers/workspace/setup.js';
import { readWorktree } from '../../../src/workers/workspace/snapshot-changes.js';
import {
  leaseCheckout,
  noteLeftIgnored,
  readLeasedWorktree,
  resetCheckout,
} from '../../../src/workers/workspace/warm-checkout.js';
import {
  changeEverything,
  freshTree,
  git,
  ID,
  leasedAtBase,
  SETUP,
  sorted,
  treeOf,
  wholeStatus,
  write,
} from '../../helpers/checkout-changes.js';
import { startWatchman } from '../../helpers/watchman.js';

let root: string;
let counter = 0;
const scratch = (name: string) => join(root, `${name}-${++counter}`);

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'flotilla-monitored-'));
  resetFileMonitor();
  if (!(await fileMonitor()))
    throw new Error('no Watchman: install it (apt-get install watchman); the suite starts its own');
});
afterAll(async () => {
  resetFileMonitor();
  await rm(root, { recursive: true, force: true });
});

/**
 * Both monitors run every test of this block: the suite's private Watchman (as hosts with
 * FLOTILLA_WATCHMAN=on) and the host's own inotify watches (FLOTILLA_MONITOR=inotify).
 */
const MONITORS = { Watchman: {}, inotify: { FLOTILLA_MONITOR: 'inotify' } } as const;

describe.each(Object.entries(MONITORS))('with %s', (_name, env: Record<string, string>) => {
  beforeAll(() => {
    Object.assign(process.env, env);
    resetFileMonitor();
  });
  afterAll(() => {
    for (const name of Object.keys(env)) delete process.env[name];
    resetFileMonitor();
  });

  describe('a warm checkout with a file-system monitor', () => {
    it('lists an attempt’s changes exactly as a whole-tree git status does, from the changed paths alone', async () => {
      const { lease, state } = await leasedAtBase(scratch);
      expect(state.clean?.clock).toBeTruthy();
      await changeEverything(lease.dir);

      const monitored = await readLeasedWorktree(lease.dir);
      expect(sorted(monitored)).toEqual(sorted(await readWorktree(lease.dir)));
      expect(monitored.changes.map((c) => c.path)).toEqual(
        expect.arrayContaining(['a.txt', 'newdir/sub/x.txt', 'link']),
      );
      await lease.release();
    });

    it('resets by the changed paths to a moved-on target, leaving exactly a fresh checkout of it plus setup’s output', async () => {
      const { lease, target, state, keep } = await leasedAtBase(scratch);
      await changeEverything(lease.dir);

      expect((await resetCheckout(lease.dir, target, keep, state.clean)).how).toBe('changed-paths');
      expect(await git(lease.dir, 'rev-parse', 'HEAD')).toBe(target);
      expect(await git(lease.dir, 'diff-index', '--cached', '--name-only', target)).toBe('');
      // Nothing differs from the target; git ignores setup's folder, which stays as setup left it and the attempt changed it.
      expect(await wholeStatus(lease.dir)).toBe('!! node_modules/');
      expect(await git(lease.dir, 'ls-files', '-s', 'e.sh')).toMatch(/^100644 /);
      await lease.release();
    });

    it.each([
      [
        'a link over a folder out of the checkout, a latin-1 name and a nested repository, left as they are',
        false,
        true,
      ],
      ['the same, committed as git add -A takes them (a link, the bytes, a gitlink)', true, true],
      ['a link over a folder and a nested repository, committed', true, false],
    ])('resets what an attempt left to a fresh checkout: %s', async (_how, committed, latin1) => {
      const { repoDir, lease, target, state, keep } = await leasedAtBase(scratch);
      const outside = scratch('outside');
      await write(outside, 'kept.txt', 'behind the link\n');
      await rm(join(lease.dir, 'lib'), { recursive: true });
      await symlink(outside, join(lease.dir, 'lib'));
      if (latin1) await writeFile(Buffer.from(`${lease.dir}/caf\xe9.txt`, 'latin1'), 'latin-1 name\n');
      await write(lease.dir, 'nested/n.txt', 'nested\n');
      await git(join(lease.dir, 'nested'), 'init', '-q');
      await git(join(lease.dir, 'nested'), 'add', 'n.txt');
      await git(join(lease.dir, 'nested'), ...ID, 'commit', '-q', '-m', 'nested');

      // Committed too (the attempt's commit holds the link and the gitlink), or left as they are.
      if (committed) {
        await git(lease.dir, 'add', '-A');
        await git(lease.dir, ...ID, 'commit', '-q', '-m', 'as git add -A takes it');
      }

      // The monitor's reset declines these (a link above a path, HEAD moved, a name it cannot
      // give git) and git walks; either way the checkout must be a fresh one.
      await resetCheckout(lease.dir, target, keep, state.clean);
      expect(await git(lease.dir, 'rev-parse', 'HEAD')).toBe(target);
      expect(await wholeStatus(lease.dir)).toBe('!! node_modules/');
      const own = (tree: Record<string, string>) =>
        Object.fromEntries(Object.entries(tree).filter(([path]) => !path.startsWith('.planning')));
      expect(own(await treeOf(lease.dir))).toEqual(await freshTree(repoDir, target, scratch('fresh')));
      expect(await readFile(join(outside, 'kept.txt'), 'utf8')).toBe('behind the link\n');
      await lease.release();
    });

    it('resets by the changed paths again and again from one record: it covers every change made since, its own too', async () => {
      const { lease, base, target } = await leasedAtBase(scratch);
      await changeEverything(lease.dir);
      await lease.release();
      const { dir } = lease;
      const state = await readCheckoutState(`${dir}.json`);
      expect((await resetCheckout(dir, target, state.setup?.keep ?? [], state.clean)).how).toBe(
        'changed-paths',
      );
      expect(await wholeStatus(dir)).toBe('!! node_modules/');
      await writeFile(join(dir, 't-new.txt'), 'changed again\n');
      await write(dir, 'later.txt', 'a later attempt’s file\n');
      expect(
        (
          await resetCheckout(
            dir,
            base,
            state.setup?.keep ?? [],
            (
              await readCheckoutState(`${dir}.json`)
            ).clean,
          )
        ).how,
      ).toBe('changed-paths');
      expect(await git(dir, 'rev-parse', 'HEAD')).toBe(base);
      expect(await wholeStatus(dir)).toBe('!! node_modules/');
    });
  });

  describe('a warm checkout whose index is as the reset and the commit left it', () => {
    it('lists and resets without git reading the whole index: two trees compared in-process, exact all the same', async () => {
      const { repoDir, lease: first, pool, target } = await leasedAtBase(scratch);
      const dir = first.dir;
      // The agent writes, deletes and makes folders, and stages nothing.
      await writeFile(join(dir, 'a.txt'), 'a, edited\n');
      await rm(join(dir, 'b.txt'));
      await write(dir, 'newdir/sub/x.txt', 'a new folder\n');
      const listing = await gitCalls(() => readLeasedWorktree(dir));
      expect(sorted(listing.result)).toEqual(sorted(await readWorktree(dir)));
      expect(listing.calls.filter(readsWholeIndex)).toEqual([]);

      // The run stage's commit: the index then holds the published commit's tree.
      await git(dir, 'add', '--all');
      await git(dir, ...ID, 'commit', '--quiet', '-m', 'the attempt');
      await noteLeftIgnored(dir, await git(dir, 'rev-parse', 'HEAD'), []);
      await first.release();

      const reset = await gitCalls(() => leaseCheckout(pool, target, SETUP));
      expect(reset.result.dir).toBe(dir);
      expect(reset.calls.filter(readsWholeIndex)).toEqual([]);
      // The paths are written, and the index moved, in-process: no git restore either.
      expect(reset.calls.filter((call) => / restore /.test(` ${call} `))).toEqual([]);
      expect(await git(dir, 'rev-parse', 'HEAD')).toBe(target);
      expect(await git(dir, 'diff-index', '--cached', '--name-only', target)).toBe('');
      expect(await wholeStatus(dir)).toBe('!! node_modules/');
      expect(await treeOf(dir)).toEqual({
        ...(await freshTree(repoDir, target, scratch('fresh'))),
        '.planning': 'dir',
        '.planning/dispatch': 'dir',
        '.planning/dispatch/archive': 'dir',
      });
      await reset.result.release();
    });

    it('asks git where the index differs once anything wrote the index (a criterion’s `git add`)', async () => {
      const { lease: first, pool, target } = await leasedAtBase(scratch);
      const dir = first.dir;
      await write(dir, 'staged.txt', 'staged by a criterion\n');
      await git(dir, 'add', 'staged.txt');
      await rm(join(dir, 'staged.txt'));
      // Only the index shows it: the file is gone from disk again, and the monitor saw it come and go.
      const listing = await gitCalls(() => readLeasedWorktree(dir));
      expect(listing.calls.some((call) => call.includes('diff-index'))).toBe(true);
      expect(sorted(listing.result)).toEqual(sorted(await readWorktree(dir)));
      expect(listing.result.changes.map((c) => c.path)).toContain('staged.txt');
      await first.release();
      const lease = await leaseCheckout(pool, target, SETUP);
      expect(await git(dir, 'diff-index', '--cached', '--name-only', target)).toBe('');
      expect(await wholeStatus(dir)).toBe('!! node_modules/');
      await lease.release();
    });
  });

  describe('a warm checkout leased again and again', () => {
    it('records each monitored reset’s own clock as clean, and the next attempt’s listing and reset by it are exact', async () => {
      const { lease: first, pool, base, target, state } = await leasedAtBase(scratch);
      const dir = first.dir;
      let clock = state.clean?.clock;
      let lease = first;
      for (const [round, commit] of [target, base, target].entries()) {
        await changeEverything(lease.dir);
        await lease.release();
        lease = await leaseCheckout(pool, commit, SETUP);
        expect(lease.dir).toBe(dir);
        const record = (await readCheckoutState(`${dir}.json`)).clean;
        expect(record?.commit).toBe(commit);
        // A new clock each time, from the reset's own question: no `clock` command after it.
        expect(record?.clock).not.toBe(clock);
        clock = record?.clock;
        expect(await wholeStatus(dir), `round ${round}`).toBe('!! node_modules/');
        await write(dir, `round-${round}.txt`, 'this attempt’s work\n');
        const monitored = await readLeasedWorktree(dir);
        expect(sorted(monitored)).toEqual(sorted(await readWorktree(dir)));
        expect(monitored.changes.map((c) => c.path)).toContain(`round-${round}.txt`);
      }
      await lease.release();
    });
  });
});

/** The git commands that read a checkout's whole index to say where it differs from a commit. */
const readsWholeIndex = (call: string) => / (diff-index|ls-tree|cat-file) /.test(` ${call} `);

/** `body`'s result and the git commands it ran (each a line of its arguments), by a logging git on PATH. */
async function gitCalls<T>(body: () => Promise<T>): Promise<{ result: T; calls: string[] }> {
  const shim = scratch('git-shim');
  await mkdir(shim);
  const log = join(shim, 'calls.log');
  const real = (await execa('sh', ['-c', 'command -v git'])).stdout.trim();
  await writeFile(join(shim, 'git'), `#!/bin/sh\necho "$*" >> '${log}'\nexec '${real}' "$@"\n`, {
    mode: 0o755,
  });
  const path = process.env.PATH;
  process.env.PATH = `${shim}:${path}`;
  try {
    const result = await body();
    const calls = (await readFile(log, 'utf8').catch(() => '')).split('\n').filter(Boolean);
    return { result, calls };
  } finally {
    process.env.PATH = path;
  }
}

/** Runs `body` with FLOTILLA_WATCHMAN set to `setting`, the shared monitor found again before and after. */
async function withMonitorSetting(setting: string, body: () => Promise<void>): Promise<void> {
  const before = process.env.FLOTILLA_WATCHMAN;
  process.env.FLOTILLA_WATCHMAN = setting;
  // Off means no monitor at all, not the default one.
  if (setting === 'off') process.env.FLOTILLA_MONITOR = 'off';
  resetFileMonitor();
  try {
    await body();
  } finally {
    process.env.FLOTILLA_WATCHMAN = before;
    delete process.env.FLOTILLA_MONITOR;
    resetFileMonitor();
  }
}

describe('stopping watching before a delete', () => {
  it('forgets every watched checkout below a folder (a pruned cache), and only those', async () => {
    const { lease } = await leasedAtBase(scratch);
    const other = await leasedAtBase(scratch);
    const monitor = await fileMonitor();
    const watchList = async () =>
      JSON.parse(
        (await execa('watchman', [`--sockname=${process.env.FLOTILLA_WATCHMAN}`, '--no-spawn', 'watch-list']))
          .stdout,
      ).roots as string[];
    expect(await watchList()).toEqual(expect.arrayContaining([lease.dir, other.lease.dir]));
    await monitor?.forgetUnder(join(lease.dir, '..'));
    const roots = await watchList();
    expect(roots).not.toContain(lease.dir);
    expect(roots).toContain(other.lease.dir);
    await other.lease.release();
  });
});

describe('a warm checkout whose monitor cannot say what changed', () => {
  it('walks the whole tree when the daemon restarted since the checkout was clean, and is clean all the same', async () => {
    const own = await startWatchman();
    await withMonitorSetting(own.sockname, async () => {
      const { lease, target, state, keep } = await leasedAtBase(scratch);
      await changeEverything(lease.dir);
      await own.restart();
      expect(await monitoredWorktree(lease.dir)).toBeNull();
      expect(sorted(await readLeasedWorktree(lease.dir))).toEqual(sorted(await readWorktree(lease.dir)));
      expect((await resetCheckout(lease.dir, target, keep, state.clean)).how).toBe('whole-tree');
      expect(await wholeStatus(lease.dir)).toBe('!! node_modules/');
      await lease.release();
    }).finally(() => own.stop());
  });

  it('walks the whole tree when the host’s own watches are not those that saw it clean (a restarted host)', async () => {
    process.env.FLOTILLA_MONITOR = 'inotify';
    resetFileMonitor();
    try {
      const { lease, target, state, keep } = await leasedAtBase(scratch);
      expect(state.clean?.clock).toMatch(/^inotify:/);
      await changeEverything(lease.dir);
      resetFileMonitor();
      expect(await monitoredWorktree(lease.dir)).toBeNull();
      expect(sorted(await readLeasedWorktree(lease.dir))).toEqual(sorted(await readWorktree(lease.dir)));
      expect((await resetCheckout(lease.dir, target, keep, state.clean)).how).toBe('whole-tree');
      expect(await wholeStatus(lease.dir)).toBe('!! node_modules/');
      await lease.release();
    } finally {
      delete process.env.FLOTILLA_MONITOR;
      resetFileMonitor();
    }
  });

  it('keeps flotilla’s dispatch folders through a walked reset, emptied (Watchman 4.9 crawls the tree again for a deleted folder)', async () => {
    const { lease, target, keep } = await leasedAtBase(scratch);
    const dir = lease.dir;
    // An attempt's published commit tracks its archived dispatch files; the next target has none.
    await write(dir, '.planning/dispatch/archive/20261201-t1-PROMPT.md', 'prompt\n');
    await git(dir, 'add', '--force', '.planning');
    await git(dir, ...ID, 'commit', '--quiet', '-m', 'attempt with its dispatch files');
    await write(dir, '.planning/dispatch/RESULT-t2.md', 'an untracked result\n');
    await write(dir, '.planning/dispatch/scratch/note.txt', 'an agent’s folder in there\n');
    await write(dir, '.planning/notes.md', 'the agent’s own untracked planning file\n');
    const before = (await lstat(join(dir, '.planning'))).ino;
    expect((await resetCheckout(dir, target, keep, undefined)).how).toBe('whole-tree');
    expect(await wholeStatus(dir)).toBe('!! node_modules/');
    expect((await lstat(join(dir, '.planning'))).ino).toBe(before);
    expect(await readdir(join(dir, '.planning'))).toEqual(['dispatch']);
    expect(await readdir(join(dir, '.planning/dispatch'))).toEqual(['archive']);
    expect(await readdir(join(dir, '.planning/dispatch/archive'))).toEqual([]);
    await lease.release();
  });

  it('never follows a link standing where a dispatch folder would be: the walk removes the link alone', async () => {
    const { lease, target, keep } = await leasedAtBase(scratch);
    const outside = scratch('outside');
    await write(outside, 'precious.txt', 'not the checkout’s\n');
    await rm(join(lease.dir, '.planning/dispatch'), { recursive: true, force: true });
    await mkdir(join(lease.dir, '.planning'), { recursive: true });
    await symlink(outside, join(lease.dir, '.planning/dispatch'));
    expect((await resetCheckout(lease.dir, target, keep, undefined)).how).toBe('whole-tree');
    expect(await wholeStatus(lease.dir)).toBe('!! node_modules/');
    expect(await readdir(outside)).toEqual(['precious.txt']);
    await lease.release();
  });

  it('walks when Watchman is turned off', async () => {
    await withMonitorSetting('off', async () => {
      expect(await fileMonitor()).toBeNull();
      const { lease, target, state, keep } = await leasedAtBase(scratch);
      expect(state.clean).toBeUndefined();
      await changeEverything(lease.dir);
      expect((await resetCheckout(lease.dir, target, keep, state.clean)).how).toBe('whole-tree');
      expect(await wholeStatus(lease.dir)).toBe('!! node_modules/');
      await lease.release();
    });
  });
});
