/**
 * Warm checkouts scanned by the record of their directories (src/workers/workspace/scanned-checkout.ts),
 * as hosts run them on large trees without a file-system monitor. These tests hold them to the
 * whole-tree answers: after any change an attempt can make, the listing equals `git status` of the
 * whole tree, and the reset leaves exactly what a fresh checkout of the target holds (every file,
 * folder, mode and link), plus setup's output.
 */
import {
  chmod,
  mkdir,
  mkdtemp,
  readdir,
  rename,
  rm,
  stat,
  symlink,
  utimes,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkoutPool } from '../../../src/workers/workspace/checkout-pool.js';
import { dirRecordFile, readDirRecord, scanChanges } from '../../../src/workers/workspace/dir-record.js';
import { fileMonitor, resetFileMonitor } from '../../../src/workers/workspace/file-monitor.js';
import { runGit } from '../../../src/workers/workspace/git.js';
import { openRepoCache } from '../../../src/workers/workspace/repo-cache.js';
import { scannedWorktree } from '../../../src/workers/workspace/scanned-checkout.js';
import { readWorktree } from '../../../src/workers/workspace/snapshot-changes.js';
import {
  ensureSetup,
  leaseCheckout,
  readLeasedWorktree,
  resetCheckout,
} from '../../../src/workers/workspace/warm-checkout.js';
import {
  bash,
  changeEverything,
  freshTree,
  git,
  ID,
  leasedAtBase,
  repo,
  SETUP,
  sorted,
  treeOf,
  wholeStatus,
  write,
} from '../../helpers/checkout-changes.js';
import { createRandom, type Random } from '../../helpers/random.js';

let root: string;
let counter = 0;
const scratch = (name: string) => join(root, `${name}-${++counter}`);
const saved = {
  watchman: process.env.FLOTILLA_WATCHMAN,
  monitor: process.env.FLOTILLA_MONITOR,
  scan: process.env.FLOTILLA_CHECKOUT_SCAN,
};

function setEnv(name: string, value: string | undefined): void {
  if (value === undefined) delete process.env[name];
  else process.env[name] = value;
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'flotilla-scanned-'));
  // The suite runs warm checkouts under a private Watchman; a host without one scans.
  setEnv('FLOTILLA_WATCHMAN', 'off');
  setEnv('FLOTILLA_MONITOR', 'off');
  setEnv('FLOTILLA_CHECKOUT_SCAN', 'on');
  resetFileMonitor();
  expect(await fileMonitor()).toBeNull();
});
afterAll(async () => {
  setEnv('FLOTILLA_WATCHMAN', saved.watchman);
  setEnv('FLOTILLA_MONITOR', saved.monitor);
  setEnv('FLOTILLA_CHECKOUT_SCAN', saved.scan);
  resetFileMonitor();
  await rm(root, { recursive: true, force: true });
});

describe('a warm checkout scanned by its directory record', () => {
  it('records a new checkout’s directories and lists an attempt’s changes exactly as a whole-tree git status does', async () => {
    const { lease } = await leasedAtBase(scratch);
    const loaded = await readDirRecord(lease.dir);
    expect(loaded?.record.mode).toBe('scan');
    expect(Object.keys(loaded?.record.dirs ?? {}).sort()).toEqual(['', 'd', 'lib', 'lib/deep']);
    await changeEverything(lease.dir);

    const scanned = await scannedWorktree(lease.dir);
    expect(scanned).not.toBeNull();
    expect(sorted(scanned ?? { head: null, changes: [], ignored: [] })).toEqual(
      sorted(await readWorktree(lease.dir)),
    );
    expect(sorted(await readLeasedWorktree(lease.dir))).toEqual(sorted(await readWorktree(lease.dir)));
    await lease.release();
  });

  it('resets to a moved-on target leaving exactly a fresh checkout of it, plus setup’s output', async () => {
    const { repoDir, lease, target, keep } = await leasedAtBase(scratch);
    await changeEverything(lease.dir);

    expect((await resetCheckout(lease.dir, target, keep)).how).toBe('scanned');
    expect(await git(lease.dir, 'rev-parse', 'HEAD')).toBe(target);
    expect(await wholeStatus(lease.dir)).toBe('!! node_modules/');
    expect(await treeOf(lease.dir)).toEqual(await freshTree(repoDir, target, scratch('fresh')));
    expect(await readdir(join(lease.dir, 'node_modules/pkg'))).toEqual(['extra.js', 'index.js']);
    await lease.release();
  });

  it('resets an attempt’s committed link over a folder and nested repository (a gitlink) to a fresh checkout', async () => {
    const { repoDir, lease, target, keep } = await leasedAtBase(scratch);
    await rm(join(lease.dir, 'lib'), { recursive: true });
    await symlink('d', join(lease.dir, 'lib'));
    await write(lease.dir, 'nested/n.txt', 'nested\n');
    await git(join(lease.dir, 'nested'), 'init', '-q');
    await git(join(lease.dir, 'nested'), 'add', 'n.txt');
    await git(join(lease.dir, 'nested'), ...ID, 'commit', '-q', '-m', 'nested');
    await git(lease.dir, 'add', '-A');
    await git(lease.dir, ...ID, 'commit', '-q', '-m', 'as git add -A takes it');

    await resetCheckout(lease.dir, target, keep);
    expect(await git(lease.dir, 'rev-parse', 'HEAD')).toBe(target);
    expect(await wholeStatus(lease.dir)).toBe('!! node_modules/');
    expect(await treeOf(lease.dir)).toEqual(await freshTree(repoDir, target, scratch('fresh')));
    await lease.release();
  });

  it('leases again and again from records it keeps up to date, each listing and reset exact', async () => {
    const { repoDir, lease: first, pool, base, target } = await leasedAtBase(scratch);
    const dir = first.dir;
    let lease = first;
    for (const [round, commit] of [target, base, target, target].entries()) {
      await changeEverything(lease.dir);
      await write(dir, `round-${round}/deep/file.txt`, 'this attempt’s new folders\n');
      await lease.release();
      lease = await leaseCheckout(pool, commit, SETUP);
      expect(lease.dir).toBe(dir);
      expect((await readDirRecord(dir))?.record.commit).toBe(commit);
      expect(await wholeStatus(dir), `round ${round}`).toBe('!! node_modules/');
      expect(await treeOf(dir), `round ${round}`).toEqual(await freshTree(repoDir, commit, scratch('fresh')));
      await write(dir, `work-${round}.txt`, 'this attempt’s work\n');
      const scanned = await scannedWorktree(dir);
      expect(scanned?.changes.map((c) => c.path)).toEqual([`work-${round}.txt`]);
    }
    await lease.release();
  });

  it('removes a file the attempt only took out of the index (git rm --cached), in a folder nothing else changed', async () => {
    const { repoDir, lease, base, keep } = await leasedAtBase(scratch);
    // The target: the base without lib/deep/two.txt, so the checkout to it touches no folder.
    const index = { env: { GIT_INDEX_FILE: join(repoDir, '.git', 'index-minus') } };
    await runGit(['read-tree', base], { cwd: repoDir, ...index });
    await runGit(['update-index', '--force-remove', 'lib/deep/two.txt'], { cwd: repoDir, ...index });
    const tree = (await runGit(['write-tree'], { cwd: repoDir, ...index })).stdout.trim();
    const minus = await git(repoDir, ...ID, 'commit-tree', tree, '-p', base, '-m', 'minus');
    await git(lease.dir, 'rm', '--cached', '--quiet', 'lib/deep/two.txt');
    expect((await resetCheckout(lease.dir, minus, keep)).how).toBe('scanned');
    expect(await wholeStatus(lease.dir)).toBe('!! node_modules/');
    expect(await treeOf(lease.dir)).toEqual(await freshTree(repoDir, minus, scratch('fresh')));
    await lease.release();
  });

  it('removes a folder the attempt made and staged part of, whole', async () => {
    const { repoDir, lease, target, keep } = await leasedAtBase(scratch);
    await write(lease.dir, 'made/deep/staged.txt', 'staged\n');
    await write(lease.dir, 'made/loose.txt', 'not staged\n');
    await git(lease.dir, 'add', 'made/deep/staged.txt');
    expect((await resetCheckout(lease.dir, target, keep)).how).toBe('scanned');
    expect(await treeOf(lease.dir)).toEqual(await freshTree(repoDir, target, scratch('fresh')));
    await lease.release();
  });

  it('lists and removes a file written only into a folder the previous reset made (the target’s)', async () => {
    const { repoDir, lease: first, pool, target } = await leasedAtBase(scratch);
    await first.release();
    const lease = await leaseCheckout(pool, target, SETUP);
    // newdir/ is the target's; the record must have it, or this file sits in a folder no scan reads.
    await write(lease.dir, 'newdir/left.txt', 'an attempt’s file\n');
    const scanned = await scannedWorktree(lease.dir);
    expect(scanned?.changes.map((c) => c.path)).toEqual(['newdir/left.txt']);
    await lease.release();
    const again = await leaseCheckout(pool, target, SETUP);
    expect(await treeOf(again.dir)).toEqual(await freshTree(repoDir, target, scratch('fresh')));
    await again.release();
  });

  it('walks when a changed folder holds a name that is not UTF-8, which no path given to git could name', async () => {
    const { repoDir, lease, target, keep } = await leasedAtBase(scratch);
    const name = Buffer.concat([
      Buffer.from(join(lease.dir, 'lib/')),
      Buffer.from([0xff]),
      Buffer.from('-left.txt'),
    ]);
    await writeFile(name, 'an attempt’s file\n');
    expect(await scannedWorktree(lease.dir)).toBeNull();
    expect(sorted(await readLeasedWorktree(lease.dir))).toEqual(sorted(await readWorktree(lease.dir)));
    await resetCheckout(lease.dir, target, keep);
    expect(await wholeStatus(lease.dir)).toBe('!! node_modules/');
    expect(await treeOf(lease.dir)).toEqual(await freshTree(repoDir, target, scratch('fresh')));
    await lease.release();
  });

  it('leaves what setup made that git does not ignore to the walks, which list it and remove it, as without a record', async () => {
    const { dir: repoDir, base, target } = await repo(scratch('repo'));
    const cache = await openRepoCache({ repo: repoDir, cacheDir: scratch('cache') });
    const pool = await checkoutPool(cache, { root: scratch('checkouts'), keep: 1 });
    const setup = { commands: ['echo generated > lib/generated.c'], inputs: [] };
    const lease = await leaseCheckout(pool, base, setup);
    await ensureSetup({ lease, commit: base, setup, runCommand: bash });
    expect(await readDirRecord(lease.dir)).toBeNull();
    const listed = await readLeasedWorktree(lease.dir);
    expect(sorted(listed)).toEqual(sorted(await readWorktree(lease.dir)));
    expect(listed.changes.map((c) => c.path)).toContain('lib/generated.c');
    await lease.release();
    const next = await leaseCheckout(pool, target, setup);
    expect(await treeOf(next.dir)).toEqual(await freshTree(repoDir, target, scratch('fresh')));
    expect((await readDirRecord(next.dir))?.record.mode).toBe('scan');
    await next.release();
  });

  it('walks the listing of a tree with submodules: -uno hides their untracked files', async () => {
    const { dir: sub } = await repo(scratch('sub'));
    const { dir: repoDir, base } = await repo(scratch('repo'));
    await git(repoDir, '-c', 'protocol.file.allow=always', 'submodule', 'add', '--quiet', sub, 'sub');
    await git(repoDir, ...ID, 'commit', '--quiet', '-m', 'a submodule');
    const withSub = await git(repoDir, 'rev-parse', 'HEAD');
    const cache = await openRepoCache({ repo: repoDir, cacheDir: scratch('cache') });
    const pool = await checkoutPool(cache, { root: scratch('checkouts'), keep: 1 });
    const lease = await leaseCheckout(pool, withSub, undefined);
    await git(lease.dir, '-c', 'protocol.file.allow=always', 'submodule', 'update', '--init', '--quiet');
    await write(lease.dir, 'sub/untracked-in-sub.txt', 'left in the submodule\n');
    expect(await scannedWorktree(lease.dir)).toBeNull();
    expect(sorted(await readLeasedWorktree(lease.dir))).toEqual(sorted(await readWorktree(lease.dir)));
    expect(base).not.toBe(withSub);
    await lease.release();
  });

  it('reads a folder again when it changed in the same clock tick as its record was written', async () => {
    const { lease } = await leasedAtBase(scratch);
    const dir = lease.dir;
    await write(dir, 'lib/late.txt', 'written in the tick of the record\n');
    // As if the record had been taken a moment after this write, in the same tick: lib's
    // signature is its current one, and the record file's time is no later than lib's ctime.
    const info = await stat(join(dir, 'lib'));
    const file = dirRecordFile(dir);
    const loaded = await readDirRecord(dir);
    const record = loaded?.record;
    if (!record) throw new Error('no record');
    await writeFile(
      file,
      JSON.stringify({ ...record, dirs: { ...record.dirs, lib: [info.ino, info.ctimeMs] } }),
    );
    const tick = info.ctimeMs / 1000 - 1e-6;
    await utimes(file, tick, tick);
    const reloaded = await readDirRecord(dir);
    if (!reloaded) throw new Error('no record');
    expect(reloaded.markerMs <= info.ctimeMs).toBe(true);
    expect((await scanChanges(dir, reloaded))?.paths).toContain('lib/late.txt');
    expect((await scannedWorktree(dir))?.changes.map((c) => c.path)).toContain('lib/late.txt');
    await lease.release();
  });

  it('walks instead when the agent moved HEAD, and when the setup kept is another', async () => {
    const { lease, target, keep, base } = await leasedAtBase(scratch);
    await write(lease.dir, 'committed.txt', 'the agent committed this\n');
    await git(lease.dir, 'add', 'committed.txt');
    await git(lease.dir, ...ID, 'commit', '--quiet', '-m', 'agent');
    await write(lease.dir, 'loose.txt', 'and left this\n');
    expect(await scannedWorktree(lease.dir)).toBeNull();
    expect(sorted(await readLeasedWorktree(lease.dir))).toEqual(sorted(await readWorktree(lease.dir)));
    // The record's setup is not the one to keep now: its outputs must go, which a walk sees to.
    expect((await resetCheckout(lease.dir, target, [])).how).toBe('whole-tree');
    expect(await wholeStatus(lease.dir)).toBe('');
    expect((await readDirRecord(lease.dir))?.record.keep).toEqual([]);
    expect((await resetCheckout(lease.dir, base, [])).how).toBe('scanned');
    expect(keep).toEqual(['/node_modules/']);
    await lease.release();
  });

  it('keeps a tree too small to be worth it on git’s walks unless told to scan it', async () => {
    setEnv('FLOTILLA_CHECKOUT_SCAN', 'auto');
    try {
      const { lease, target, keep } = await leasedAtBase(scratch);
      expect((await readDirRecord(lease.dir))?.record.mode).toBe('walk');
      await changeEverything(lease.dir);
      expect(await scannedWorktree(lease.dir)).toBeNull();
      expect((await resetCheckout(lease.dir, target, keep)).how).toBe('whole-tree');
      expect(await wholeStatus(lease.dir)).toBe('!! node_modules/');
      await lease.release();
    } finally {
      setEnv('FLOTILLA_CHECKOUT_SCAN', 'on');
    }
  });
});

const NAMES = [
  'a.txt',
  'b.txt',
  'd',
  'lib',
  'lib/deep',
  'lib/deep/two.txt',
  'newdir',
  'x',
  'x/y.log',
  'build',
  'q',
];

/** One random change an agent or a criterion could make; errors (a path in the way) are skipped. */
async function randomChange(dir: string, random: Random): Promise<void> {
  const { next, pick } = random;
  const path = pick(NAMES);
  const full = join(dir, path);
  const actions = [
    () => write(dir, path, `content ${next()}\n`),
    () => write(dir, `${path}/inside-${Math.floor(next() * 3)}.txt`, 'below\n'),
    () => rm(full, { recursive: true, force: true }),
    () => mkdir(full, { recursive: true }),
    () => write(dir, `${pick(['', 'lib/', 'x/'])}${pick(['n.log', 'build/o.o', 'new.txt'])}`, 'made\n'),
    () => chmod(full, 0o755),
    () => symlink(pick(['a.txt', 'lib', 'missing']), full),
    () => git(dir, 'add', '--force', '--', path),
    () => git(dir, 'rm', '-r', '--cached', '--quiet', '--', path),
    () => rename(full, join(dir, pick(NAMES))),
    () => write(dir, `.planning/dispatch/t${Math.floor(next() * 3)}-RESULT.md`, 'a result\n'),
  ];
  await pick(actions)().catch(() => undefined);
}

describe('a scanned checkout under random changes', () => {
  it.each([20261202, 12, 61])(
    'lists and resets exactly as the whole-tree walks do, lease after lease (seed %i)',
    async (seed) => {
      const { repoDir, lease: first, pool, base, target } = await leasedAtBase(scratch);
      const random = createRandom(seed);
      const dir = first.dir;
      let lease = first;
      for (let round = 0; round < 12; round++) {
        for (let n = 0; n < 6; n++) await randomChange(dir, random);
        const scanned = await scannedWorktree(dir);
        if (scanned) expect(sorted(scanned), `round ${round}`).toEqual(sorted(await readWorktree(dir)));
        for (let n = 0; n < 3; n++) await randomChange(dir, random);
        await lease.release();
        const commit = random.chance(0.5) ? base : target;
        lease = await leaseCheckout(pool, commit, SETUP);
        expect(await wholeStatus(dir), `round ${round}`).toBe('!! node_modules/');
        expect(await treeOf(dir), `round ${round}`).toEqual(
          await freshTree(repoDir, commit, scratch('fresh')),
        );
      }
      await lease.release();
    },
  );
});
