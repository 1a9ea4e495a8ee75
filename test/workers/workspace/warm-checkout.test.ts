import {
  lstat,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rename,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CheckoutPool, checkoutPool } from '../../../src/workers/workspace/checkout-pool.js';
import { commitAttempt } from '../../../src/workers/workspace/commit.js';
import { resetFileMonitor } from '../../../src/workers/workspace/file-monitor.js';
import { runGit } from '../../../src/workers/workspace/git.js';
import { openRepoCache, type RepoCache } from '../../../src/workers/workspace/repo-cache.js';
import { readWorktree } from '../../../src/workers/workspace/snapshot-changes.js';
import { attemptKey, leaseAtCommit, leaseForRun } from '../../../src/workers/workspace/stage-checkout.js';
import {
  type CommandOutcome,
  describeSetupFailure,
  ensureSetup,
  leaseCheckout,
  noteLeftIgnored,
  readLeasedWorktree,
  type SetupFailure,
} from '../../../src/workers/workspace/warm-checkout.js';

let root: string;
let counter = 0;
const scratch = (name: string) => join(root, `${name}-${++counter}`);

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'flotilla-warm-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

const git = async (cwd: string, ...args: string[]) => (await runGit(args, { cwd })).stdout.trim();
const exists = (path: string) =>
  stat(path).then(
    () => true,
    () => false,
  );

const ID = ['-c', 'user.name=t', '-c', 'user.email=t@t'];

/** A repo with a tracked file, a .gitignore for node_modules/ and dist/, and a lockfile. */
async function repo(): Promise<{ dir: string; base: string }> {
  const dir = scratch('repo');
  await mkdir(join(dir, 'src'), { recursive: true });
  await writeFile(join(dir, 'src', 'a.txt'), 'original\n');
  await writeFile(join(dir, '.gitignore'), 'node_modules/\ndist/\n');
  await writeFile(join(dir, 'package-lock.json'), '{"v":1}\n');
  await git(dir, 'init', '--quiet', '--initial-branch=main');
  await git(dir, 'add', '-A');
  await git(dir, ...ID, 'commit', '--quiet', '-m', 'base');
  return { dir, base: await git(dir, 'rev-parse', 'HEAD') };
}

const caches = new Map<CheckoutPool, RepoCache>();
async function pool(
  repoDir: string,
  keep = 1,
  onDiscard?: (dir: string, reason: string) => void,
): Promise<CheckoutPool> {
  const cache = await openRepoCache({ repo: repoDir, cacheDir: scratch('cache') });
  const p = await checkoutPool(cache, {
    root: scratch('checkouts'),
    keep,
    ...(onDiscard ? { onDiscard } : {}),
  });
  caches.set(p, cache);
  return p;
}

async function bash(command: string, cwd: string): Promise<CommandOutcome> {
  const r = await execa('bash', ['-c', command], { cwd, reject: false, all: true });
  return { exitCode: r.exitCode ?? null, timedOut: false, output: r.all ?? '' };
}

/**
 * The ways a warm checkout finds what an attempt left: the suite's private Watchman (as hosts
 * with FLOTILLA_WATCHMAN=on), the host's own inotify watches (FLOTILLA_MONITOR=inotify; under the
 * default `auto` a tree this small is left to the scans, the last mode), the directory record hosts use on large trees without one,
 * and git's walks (small trees, FLOTILLA_CHECKOUT_SCAN=off). Each runs every test below.
 */
const MODES = {
  monitored: {},
  inotify: { FLOTILLA_MONITOR: 'inotify' },
  scanned: { FLOTILLA_MONITOR: 'off', FLOTILLA_CHECKOUT_SCAN: 'on' },
  walked: { FLOTILLA_MONITOR: 'off', FLOTILLA_CHECKOUT_SCAN: 'off' },
  'auto, a tree too small to watch': { FLOTILLA_MONITOR: 'auto', FLOTILLA_CHECKOUT_SCAN: 'on' },
} as const;

describe.each(Object.entries(MODES))('warm checkouts (%s)', (_mode, env: Record<string, string>) => {
  const saved = Object.fromEntries(Object.keys(env).map((name) => [name, process.env[name]]));
  beforeAll(() => {
    Object.assign(process.env, env);
    resetFileMonitor();
  });
  afterAll(() => {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    resetFileMonitor();
  });

  it('reuses one checkout across attempts without leaking any file of an earlier attempt', async () => {
    const { dir, base } = await repo();
    const p = await pool(dir);
    const first = await leaseCheckout(p, base, undefined);
    // Attempt 1 edits a tracked file, adds untracked, ignored and audit files, and commits some.
    await writeFile(join(first.dir, 'src', 'a.txt'), 'changed by attempt 1\n');
    await writeFile(join(first.dir, 'new.txt'), 'attempt 1\n');
    await mkdir(join(first.dir, 'dist'), { recursive: true });
    await writeFile(join(first.dir, 'dist', 'out.js'), 'built by attempt 1\n');
    await mkdir(join(first.dir, '.planning', 'dispatch'), { recursive: true });
    await writeFile(join(first.dir, '.planning', 'dispatch', 't-a1-PROMPT.md'), 'prompt\n');
    await git(first.dir, 'add', 'new.txt');
    await git(first.dir, ...ID, 'commit', '--quiet', '-m', 'attempt 1');
    await writeFile(join(first.dir, 'late.txt'), 'written after the commit\n');
    const firstDir = first.dir;
    await first.release();

    const second = await leaseCheckout(p, base, undefined);
    expect(second.dir).toBe(firstDir);
    expect(second.fresh).toBe(false);
    expect(await readFile(join(second.dir, 'src', 'a.txt'), 'utf8')).toBe('original\n');
    for (const leaked of ['new.txt', 'late.txt', 'dist', '.planning/dispatch/t-a1-PROMPT.md']) {
      expect(await exists(join(second.dir, leaked)), leaked).toBe(false);
    }
    // flotilla's dispatch folders may stay, empty (monitored-paths.ts, DISPATCH_FOLDERS): no file below them.
    const below = await readdir(join(second.dir, '.planning'), {
      recursive: true,
      withFileTypes: true,
    }).catch(() => []);
    expect(below.filter((entry) => !entry.isDirectory()).map((entry) => entry.name)).toEqual([]);
    expect(await git(second.dir, 'rev-parse', 'HEAD')).toBe(base);
    expect(await git(second.dir, 'status', '--porcelain', '--ignored')).toBe('');
    await second.release();
  });

  it('makes a cold host’s checkouts on demand, one per slot, each its own worktree, when asked for at once', async () => {
    const { dir, base } = await repo();
    const cache = await openRepoCache({ repo: dir, cacheDir: scratch('cache') });
    const p = await checkoutPool(cache, { root: scratch('checkouts'), keep: 4 });
    const leases = await Promise.all([1, 2, 3, 4].map(() => leaseCheckout(p, base, undefined)));
    expect(new Set(leases.map((l) => l.dir)).size).toBe(4);
    expect(leases.every((l) => l.fresh)).toBe(true);
    const { stdout } = await runGit(['worktree', 'list', '--porcelain'], { cwd: cache.dir });
    for (const lease of leases) expect(stdout).toContain(`worktree ${lease.dir}\n`);
    for (const lease of leases) expect(await git(lease.dir, 'rev-parse', 'HEAD')).toBe(base);
    // Each checked out whole, side by side with the others, its index split.
    for (const lease of leases) {
      expect(await git(lease.dir, 'status', '--porcelain', '--ignored')).toBe('');
      expect(await git(lease.dir, 'ls-files')).toBe(await git(dir, 'ls-tree', '-r', '--name-only', base));
      expect(await git(lease.dir, 'rev-parse', '--shared-index-path')).not.toBe('');
    }
    for (const lease of leases) await lease.release();
    expect(p.counts()).toEqual({ idle: 4, leased: 0, parked: 0 });
  });

  it('never hands one checkout to two jobs at once; the second waits for the release', async () => {
    const { dir, base } = await repo();
    const p = await pool(dir, 1);
    const first = await leaseCheckout(p, base, undefined);
    let secondDir: string | undefined;
    const second = leaseCheckout(p, base, undefined).then((lease) => {
      secondDir = lease.dir;
      return lease;
    });
    await new Promise((done) => setTimeout(done, 300));
    expect(secondDir).toBeUndefined();
    expect(p.counts()).toEqual({ idle: 0, leased: 1, parked: 0 });
    await first.release();
    const lease = await second;
    expect(lease.dir).toBe(first.dir);
    await lease.release();
  });

  it('parks the run checkout for its verify, which claims it as left; other attempts cannot', async () => {
    const { dir, base } = await repo();
    const p = await pool(dir, 2);
    const run = await leaseCheckout(p, base, undefined);
    await writeFile(join(run.dir, 'work.txt'), 'done\n');
    await git(run.dir, 'add', '-A');
    await git(run.dir, ...ID, 'commit', '--quiet', '-m', 'work');
    const commit = await git(run.dir, 'rev-parse', 'HEAD');
    run.park('m/t/1', commit);
    run.park('m/t/1', 'again'); // a second end of one lease is ignored
    expect(p.claim('m/t/2', commit)).toBeNull();
    expect(p.claim('m/t/1', base)).toBeNull();
    const verify = p.claim('m/t/1', commit);
    expect(verify?.dir).toBe(run.dir);
    expect(p.claim('m/t/1', commit)).toBeNull(); // claimed once
    expect(await readFile(join(run.dir, 'work.txt'), 'utf8')).toBe('done\n');
    await verify?.release();
    expect(p.counts()).toEqual({ idle: 1, leased: 0, parked: 0 });
  });

  it('verifies on the same host in the run’s checkout without a fetch, and elsewhere in a warm checkout of the pushed commit', async () => {
    const { dir, base } = await repo();
    await git(dir, 'branch', 'flotilla/m1', base);
    const hostA = {
      cache: await openRepoCache({ repo: dir, cacheDir: scratch('cache') }),
      root: scratch('co'),
    };
    const hostB = {
      cache: await openRepoCache({ repo: dir, cacheDir: scratch('cache') }),
      root: scratch('co'),
    };
    const place = (h: typeof hostA) => ({ root: h.root, keep: 2 });
    const run = await leaseForRun({ cache: hostA.cache, place: place(hostA), missionId: 'm1' });
    expect(run.baseCommit).toBe(base);
    await writeFile(join(run.dir, 'work.txt'), 'done\n');
    await git(run.dir, 'add', '-A');
    await git(run.dir, ...ID, 'commit', '--quiet', '-m', 'work');
    await git(run.dir, 'push', '--quiet', 'origin', 'HEAD:refs/heads/att');
    const commit = await git(run.dir, 'rev-parse', 'HEAD');
    // Left behind by the agent but ignored by git: not part of the pushed work.
    await mkdir(join(run.dir, 'dist'), { recursive: true });
    await writeFile(join(run.dir, 'dist', 'built.js'), 'ignored output\n');
    const key = attemptKey('m1', 't', 1);
    run.lease.park(key, commit);

    // The pushed branch is gone from the mission repo, so a fetch would find nothing: this host needs none.
    await rm(join(dir, '.git', 'refs', 'heads', 'att'), { force: true });
    const here = await leaseAtCommit({ cache: hostA.cache, place: place(hostA), key, branch: 'att', commit });
    expect(here).toMatchObject({ claimed: true, dir: run.dir, commit });
    // The criteria see what any host's checkout of the pushed commit holds, and nothing else.
    expect(await readFile(join(here.dir, 'work.txt'), 'utf8')).toBe('done\n');
    expect(await exists(join(here.dir, 'dist'))).toBe(false);
    await here.lease.release();

    await git(dir, 'update-ref', 'refs/heads/att', commit);
    const elsewhere = await leaseAtCommit({
      cache: hostB.cache,
      place: place(hostB),
      key,
      branch: 'att',
      commit,
    });
    expect(elsewhere.claimed).toBe(false);
    expect(elsewhere.commit).toBe(commit);
    expect(await readFile(join(elsewhere.dir, 'work.txt'), 'utf8')).toBe('done\n');
    await elsewhere.lease.release();
  });

  it("cleans the claimed checkout by the run's own listing of what git ignores, keeping setup's output and flotilla's files", async () => {
    const { dir, base } = await repo();
    // Like the kernel's: every dot-folder is ignored, flotilla's .planning/ too.
    await writeFile(join(dir, '.gitignore'), 'node_modules/\ndist/\n*.log\n.*\n!.gitignore\n');
    await git(dir, 'add', '-A');
    await git(dir, ...ID, 'commit', '--quiet', '-m', 'ignores');
    await git(dir, 'branch', 'flotilla/m2');
    const cache = await openRepoCache({ repo: dir, cacheDir: scratch('cache') });
    const place = { root: scratch('co'), keep: 1 };
    const setup = { commands: ['mkdir -p node_modules/x && echo dep > node_modules/x/i.js'], inputs: [] };
    const run = await leaseForRun({ cache, place, missionId: 'm2', setup });
    const ran = await ensureSetup({ lease: run.lease, commit: run.baseCommit, setup, runCommand: bash });
    expect(ran.failure).toBeUndefined();
    // The agent's work, its ignored build output, and flotilla's dispatch file.
    await writeFile(join(run.dir, 'work.txt'), 'done\n');
    await mkdir(join(run.dir, 'dist'), { recursive: true });
    await writeFile(join(run.dir, 'dist', 'built.js'), 'ignored output\n');
    await writeFile(join(run.dir, 'agent.log'), 'ignored log\n');
    await mkdir(join(run.dir, '.planning', 'dispatch'), { recursive: true });
    await writeFile(join(run.dir, '.planning', 'dispatch', 't-a1-RESULT.md'), 'result\n');
    const worktree = await readWorktree(run.dir);
    expect([...worktree.ignored].sort()).toEqual(['.planning/', 'agent.log', 'dist/', 'node_modules/']);
    const committed = await commitAttempt({
      dir: run.dir,
      message: 'work',
      ref: 'refs/flotilla/m2/t/a1',
      baseCommit: run.baseCommit,
      worktree,
      localRepo: dir,
    });
    await noteLeftIgnored(run.dir, committed.commit, worktree.ignored);
    const key = attemptKey('m2', 't', 1);
    run.lease.park(key, committed.commit);
    // Written after the listing: a walk (`git clean`) would take it, the listing does not know it.
    await writeFile(join(run.dir, 'after-the-listing.log'), 'x\n');

    const here = await leaseAtCommit({
      cache,
      place,
      key,
      branch: 'refs/flotilla/m2/t/a1',
      commit: committed.commit,
      setup,
    });
    expect(here.claimed).toBe(true);
    expect(await exists(join(here.dir, 'dist'))).toBe(false);
    expect(await exists(join(here.dir, 'agent.log'))).toBe(false);
    expect(await readFile(join(here.dir, 'node_modules', 'x', 'i.js'), 'utf8')).toBe('dep\n');
    expect(await readFile(join(here.dir, '.planning', 'dispatch', 't-a1-RESULT.md'), 'utf8')).toBe(
      'result\n',
    );
    expect(await readFile(join(here.dir, 'work.txt'), 'utf8')).toBe('done\n');
    expect(await exists(join(here.dir, 'after-the-listing.log'))).toBe(true);
    // Parked again at the same commit, but the listing was for another one: git cleans.
    await noteLeftIgnored(here.dir, base, []);
    here.lease.park(key, committed.commit);
    const again = await leaseAtCommit({
      cache,
      place,
      key,
      branch: 'refs/flotilla/m2/t/a1',
      commit: committed.commit,
      setup,
    });
    expect(again.claimed).toBe(true);
    expect(await exists(join(again.dir, 'after-the-listing.log'))).toBe(false);
    expect(await readFile(join(again.dir, 'node_modules', 'x', 'i.js'), 'utf8')).toBe('dep\n');
    await again.lease.release();
  });

  it('frees a parked checkout whose verify never comes (a lost job), so it is never held for ever', async () => {
    const { dir, base } = await repo();
    const cache = await openRepoCache({ repo: dir, cacheDir: scratch('cache') });
    const p = await checkoutPool(cache, { root: scratch('checkouts'), keep: 1, parkMs: 400 });
    const run = await leaseCheckout(p, base, undefined);
    run.park('m/t/1', base);
    // Another attempt needs the pool's only checkout: it waits while the park lasts, then gets it.
    const next = await leaseCheckout(p, base, undefined);
    expect(next.dir).toBe(run.dir);
    expect(p.claim('m/t/1', base)).toBeNull(); // the verify that comes late finds it gone
    await next.release();
    expect(p.counts()).toEqual({ idle: 1, leased: 0, parked: 0 });
  });

  it('puts back a folder an attempt moved away and linked to, the link gone and the moved folder untouched', async () => {
    const { dir, base } = await repo();
    const p = await pool(dir, 1);
    const first = await leaseCheckout(p, base, undefined);
    // Git sees src/a.txt through the link as it was (same inode, same times): unchanged.
    const away = join(root, `moved-away-${++counter}`);
    await rename(join(first.dir, 'src'), away);
    await symlink(away, join(first.dir, 'src'));
    await writeFile(join(away, 'left.txt'), 'written through the link\n');
    await first.release();

    const second = await leaseCheckout(p, base, undefined);
    expect(second.dir).toBe(first.dir);
    expect((await lstat(join(second.dir, 'src'))).isDirectory()).toBe(true);
    expect(await readFile(join(second.dir, 'src', 'a.txt'), 'utf8')).toBe('original\n');
    expect(await git(second.dir, 'status', '--porcelain', '--ignored')).toBe('');
    expect((await readdir(away)).sort()).toEqual(['a.txt', 'left.txt']);
    await second.release();
  });

  it('lists what setup made that git does not ignore as the attempt’s, and removes it at the next reset', async () => {
    const { dir, base } = await repo();
    const p = await pool(dir, 1);
    const setup = { commands: ['echo generated > src/generated.c'], inputs: [] };
    const first = await leaseCheckout(p, base, setup);
    await ensureSetup({ lease: first, commit: base, setup, runCommand: bash });
    const listed = await readLeasedWorktree(first.dir);
    expect(listed.changes.map((c) => c.path)).toEqual(['src/generated.c']);
    expect(listed).toEqual(await readWorktree(first.dir));
    await first.release();
    const second = await leaseCheckout(p, base, setup);
    expect(await git(second.dir, 'status', '--porcelain', '--ignored')).toBe('');
    await second.release();
  });

  it('discards a checkout whose reset fails and gives a clean one instead', async () => {
    const { dir, base } = await repo();
    const p = await pool(dir, 1);
    const first = await leaseCheckout(p, base, undefined);
    await writeFile(join(first.dir, 'stale.txt'), 'from attempt 1\n');
    // A lock file left by a killed git makes every later checkout in this worktree fail.
    const gitDir = await git(first.dir, 'rev-parse', '--absolute-git-dir');
    await writeFile(join(gitDir, 'index.lock'), '');
    const brokenDir = first.dir;
    await first.release();

    const second = await leaseCheckout(p, base, undefined);
    expect(second.dir).not.toBe(brokenDir);
    expect(await exists(brokenDir)).toBe(false);
    expect(await exists(join(second.dir, 'stale.txt'))).toBe(false);
    expect(await readFile(join(second.dir, 'src', 'a.txt'), 'utf8')).toBe('original\n');
    await second.release();
  });

  it('discards a checkout an attempt left sparse or mid-rebase, and gives a complete one instead', async () => {
    const { dir, base } = await repo();
    const discarded: string[] = [];
    const p = await pool(dir, 1, (checkout, reason) => discarded.push(`${checkout}: ${reason}`));
    // The agent narrowed the checkout to a folder that does not exist: src/a.txt is gone from disk.
    const sparse = await leaseCheckout(p, base, undefined);
    await git(sparse.dir, 'sparse-checkout', 'set', 'docs');
    expect(await exists(join(sparse.dir, 'src', 'a.txt'))).toBe(false);
    const sparseDir = sparse.dir;
    await sparse.release();
    const next = await leaseCheckout(p, base, undefined);
    expect(next.dir).not.toBe(sparseDir);
    // The host's log says which checkout went and why.
    expect(discarded).toEqual([`${sparseDir}: an attempt left info/sparse-checkout in its git folder`]);
    expect(await readFile(join(next.dir, 'src', 'a.txt'), 'utf8')).toBe('original\n');
    expect(await git(next.dir, 'status', '--porcelain', '--ignored')).toBe('');

    // The agent left a rebase stopped on a conflict, which `checkout --force` keeps: the next
    // attempt would find it in progress, and `git rebase --continue` would replay this one's commits.
    await writeFile(join(next.dir, 'src', 'a.txt'), 'theirs\n');
    await git(next.dir, ...ID, 'commit', '--quiet', '-am', 'theirs');
    const theirs = await git(next.dir, 'rev-parse', 'HEAD');
    await git(next.dir, 'checkout', '--quiet', '--detach', base);
    await writeFile(join(next.dir, 'src', 'a.txt'), 'ours\n');
    await git(next.dir, ...ID, 'commit', '--quiet', '-am', 'ours');
    const rebased = await runGit([...ID, 'rebase', theirs], { cwd: next.dir, allowFailure: true });
    expect(rebased.exitCode).not.toBe(0);
    const rebasingDir = next.dir;
    await next.release();
    const last = await leaseCheckout(p, base, undefined);
    expect(last.dir).not.toBe(rebasingDir);
    expect(discarded[1]).toBe(`${rebasingDir}: an attempt left rebase-merge in its git folder`);
    expect(await readFile(join(last.dir, 'src', 'a.txt'), 'utf8')).toBe('original\n');
    expect(await git(last.dir, 'status')).not.toContain('rebase');
    expect(await git(last.dir, 'status', '--porcelain', '--ignored')).toBe('');
    await last.release();
  });

  it('drops the branch an attempt made and left checked out, so a later attempt cannot take up its commits', async () => {
    const { dir, base } = await repo();
    const p = await pool(dir, 1);
    const first = await leaseCheckout(p, base, undefined);
    await git(first.dir, 'checkout', '--quiet', '-b', 'feature');
    await writeFile(join(first.dir, 'feature.txt'), 'attempt 1\n');
    await git(first.dir, 'add', 'feature.txt');
    await git(first.dir, ...ID, 'commit', '--quiet', '-m', 'attempt 1 on its own branch');
    await first.release();

    const second = await leaseCheckout(p, base, undefined);
    expect(second.dir).toBe(first.dir);
    expect(await git(second.dir, 'branch', '--list', 'feature')).toBe('');
    expect(await git(second.dir, 'rev-parse', 'HEAD')).toBe(base);
    // The later attempt may use the same name for its own branch, from its own base.
    await git(second.dir, 'checkout', '--quiet', '-b', 'feature');
    expect(await exists(join(second.dir, 'feature.txt'))).toBe(false);
    await second.release();
  });

  it('checks the pushed commit out afresh for verify when the run left its checkout sparse', async () => {
    const { dir, base } = await repo();
    await git(dir, 'branch', 'flotilla/m2', base);
    const host = {
      cache: await openRepoCache({ repo: dir, cacheDir: scratch('cache') }),
      root: scratch('co'),
    };
    const place = { root: host.root, keep: 2 };
    const run = await leaseForRun({ cache: host.cache, place, missionId: 'm2' });
    await writeFile(join(run.dir, 'work.txt'), 'done\n');
    await git(run.dir, 'add', '-A');
    await git(run.dir, ...ID, 'commit', '--quiet', '-m', 'work');
    await git(run.dir, 'push', '--quiet', 'origin', 'HEAD:refs/heads/att2');
    const commit = await git(run.dir, 'rev-parse', 'HEAD');
    await git(run.dir, 'sparse-checkout', 'set', 'docs');
    const key = attemptKey('m2', 't', 1);
    run.lease.park(key, commit);
    const verify = await leaseAtCommit({ cache: host.cache, place, key, branch: 'att2', commit });
    expect(verify.claimed).toBe(false);
    expect(verify.dir).not.toBe(run.dir);
    expect(await readFile(join(verify.dir, 'src', 'a.txt'), 'utf8')).toBe('original\n');
    expect(await readFile(join(verify.dir, 'work.txt'), 'utf8')).toBe('done\n');
    await verify.lease.release();
  });

  it('runs setup once per warm checkout, keeps its ignored output, and again after its input changes', async () => {
    const { dir, base } = await repo();
    const p = await pool(dir, 1);
    const log = join(root, `setup-log-${++counter}`);
    const setup = {
      commands: [`echo ran >> ${log}`, 'mkdir -p node_modules && echo dep > node_modules/dep.js'],
      inputs: [],
    };
    const runs = async () => (await readFile(log, 'utf8').catch(() => '')).split('\n').filter(Boolean).length;

    const a = await leaseCheckout(p, base, setup);
    expect((await ensureSetup({ lease: a, commit: base, setup, runCommand: bash })).ran).toBe(true);
    await mkdir(join(a.dir, 'dist'), { recursive: true });
    await writeFile(join(a.dir, 'dist', 'agent.js'), 'an agent’s ignored output\n');
    await a.release();

    const b = await leaseCheckout(p, base, setup);
    expect(b.dir).toBe(a.dir);
    expect((await ensureSetup({ lease: b, commit: base, setup, runCommand: bash })).ran).toBe(false);
    expect(await runs()).toBe(1);
    expect(await readFile(join(b.dir, 'node_modules', 'dep.js'), 'utf8')).toBe('dep\n');
    expect(await exists(join(b.dir, 'dist'))).toBe(false);
    // The lockfile changes on the integration branch: the next attempt's setup runs again.
    await writeFile(join(dir, 'package-lock.json'), '{"v":2}\n');
    await git(dir, ...ID, 'commit', '--quiet', '-am', 'bump lock');
    const next = await git(dir, 'rev-parse', 'HEAD');
    await b.release();
    await caches.get(p)?.fetch();
    const c = await leaseCheckout(p, next, setup);
    expect(c.dir).toBe(a.dir);
    expect((await ensureSetup({ lease: c, commit: next, setup, runCommand: bash })).ran).toBe(true);
    expect(await runs()).toBe(2);
    await c.release();
    // Other commands are another setup: nothing of the first is kept, and it runs.
    const other = { commands: [`echo other >> ${log}`], inputs: [] };
    const d = await leaseCheckout(p, next, other);
    expect(await exists(join(d.dir, 'node_modules'))).toBe(false);
    expect((await ensureSetup({ lease: d, commit: next, setup: other, runCommand: bash })).ran).toBe(true);
    expect(await runs()).toBe(3);
    await d.release();
  });

  it.each([
    ['a file', (where: string) => writeFile(where, 'not a folder\n')],
    ['a link', (where: string) => symlink(root, where)],
  ])('removes %s an attempt put where setup’s kept folder was', async (_kind, put) => {
    const { dir, base } = await repo();
    const p = await pool(dir, 1);
    const setup = { commands: ['mkdir -p node_modules && echo dep > node_modules/dep.js'], inputs: [] };
    const a = await leaseCheckout(p, base, setup);
    expect((await ensureSetup({ lease: a, commit: base, setup, runCommand: bash })).ran).toBe(true);
    await rm(join(a.dir, 'node_modules'), { recursive: true, force: true });
    await put(join(a.dir, 'node_modules'));
    await a.release();

    const b = await leaseCheckout(p, base, setup);
    expect(b.dir).toBe(a.dir);
    // `/node_modules/` keeps a folder: what stood in its place is the attempt's, and goes.
    expect(
      await lstat(join(b.dir, 'node_modules')).then(
        (info) => info.isDirectory(),
        () => 'gone',
      ),
    ).not.toBe(false);
    expect(await git(b.dir, 'status', '--porcelain')).toBe('');
    await b.release();
  });

  it('a failing setup reports its command and output and runs again next time', async () => {
    const { dir, base } = await repo();
    const p = await pool(dir, 1);
    const setup = { commands: ['echo installing; echo "no such package" >&2; exit 7'], inputs: [] };
    const a = await leaseCheckout(p, base, setup);
    const first = await ensureSetup({ lease: a, commit: base, setup, runCommand: bash });
    expect(first.failure).toMatchObject({ command: setup.commands[0], exitCode: 7 });
    expect(first.failure?.tail).toContain('no such package');
    expect(describeSetupFailure(first.failure as SetupFailure)).toMatch(
      /^setup failed: \$ echo installing.* \(exit 7\)\n/,
    );
    await a.release();
    const b = await leaseCheckout(p, base, setup);
    expect((await ensureSetup({ lease: b, commit: base, setup, runCommand: bash })).ran).toBe(true);
    await b.release();
  });
});
