import { chmod, mkdir, mkdtemp, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { attemptRef, integrationBranch } from '../../../src/shared/contracts.js';
import { isFlotillaError } from '../../../src/shared/errors.js';
import { commitAttempt } from '../../../src/workers/workspace/commit.js';
import { runGit } from '../../../src/workers/workspace/git.js';
import { integrateAttempt } from '../../../src/workers/workspace/integrate.js';
import { prepareWorkspace } from '../../../src/workers/workspace/prepare-workspace.js';
import { openRepoCache, type RepoCache } from '../../../src/workers/workspace/repo-cache.js';
import { removeWorktree } from '../../../src/workers/workspace/worktree.js';
import { checkoutAttempt } from '../../helpers/checkouts.js';
import { objectCounts } from '../../helpers/git-objects.js';
import { refWrites, resetRefWrites } from '../../helpers/ref-write-seam.js';

vi.mock('../../../src/workers/workspace/ref-files.js', async (original) =>
  (await import('../../helpers/ref-write-seam.js')).seamed(await original()),
);

/**
 * The gate's merge without a checkout (DESIGN.md §4 step 8): merge-tree + commit-tree + a
 * compare-and-swap, gates of one host merged as one batch, replays merged once, attempt refs out
 * of `git branch`, dispatch files out of the integration branch.
 */
let root: string;
let counter = 0;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'flotilla-integrate-'));
});
afterEach(resetRefWrites);
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

function scratch(name: string): string {
  counter += 1;
  return join(root, `${name}-${counter}`);
}

async function git(cwd: string, ...args: string[]): Promise<string> {
  return (await runGit(args, { cwd })).stdout.trim();
}

/** Another host's merge: a commit on top of `base` made elsewhere, to move the branch to. */
function otherHostCommit(repo: string, base: string): Promise<string> {
  return git(repo, 'commit-tree', `${base}^{tree}`, '-p', base, '-m', 'other host');
}

async function missionRepo(missionId: string, files: Record<string, string> = {}) {
  const dir = scratch('mission');
  await mkdir(dir, { recursive: true });
  const all = { 'README.md': '# calc\n', 'shared.txt': 'line 1\nline 2\nline 3\n', ...files };
  for (const [path, text] of Object.entries(all)) {
    await mkdir(join(dir, path, '..'), { recursive: true });
    await writeFile(join(dir, path), text);
  }
  return prepareWorkspace({ workspace: dir, missionId });
}

interface Host {
  cache: RepoCache;
  workRoot: string;
}

async function host(repo: string): Promise<Host> {
  return { cache: await openRepoCache({ repo, cacheDir: scratch('cache') }), workRoot: scratch('work') };
}

/** One attempt as the run stage makes it: a checkout, the agent's files, flotilla's dispatch files. */
async function attempt(h: Host, missionId: string, taskId: string, files: Record<string, string>) {
  const checkout = await checkoutAttempt({ ...h, missionId, taskId, attempt: 1 });
  const dispatch = {
    [`.planning/dispatch/archive/20260101-${taskId}-a1-PROMPT.md`]: `prompt of ${taskId}\n`,
  };
  for (const [path, text] of Object.entries({ ...files, ...dispatch })) {
    await mkdir(join(checkout.dir, path, '..'), { recursive: true });
    await writeFile(join(checkout.dir, path), text);
  }
  const ref = attemptRef(missionId, taskId, 1);
  const committed = await commitAttempt({
    dir: checkout.dir,
    message: `${taskId}: work`,
    ref,
    baseCommit: checkout.baseCommit,
  });
  await removeWorktree(checkout.dir);
  return {
    cache: h.cache,
    missionId,
    attemptId: `${taskId}/a1`,
    ref,
    workCommit: committed.workCommit,
    commit: committed.commit,
    message: `merge ${taskId}`,
  };
}

/** How many times the integration branch moved (creation included): one line per publish. */
async function publishes(repo: string, missionId: string): Promise<number> {
  return (await git(repo, 'reflog', 'show', '--format=%H', `refs/heads/${integrationBranch(missionId)}`))
    .split('\n')
    .filter(Boolean).length;
}

async function tipOf(repo: string, missionId: string): Promise<string> {
  return git(repo, 'rev-parse', `refs/heads/${integrationBranch(missionId)}`);
}

describe('group commit', () => {
  it('merges a batch as one merge commit per attempt, published once; a conflict fails only its own attempt', async () => {
    const prepared = await missionRepo('b1');
    const h = await host(prepared.repo);
    const a = await attempt(h, 'b1', 'a', { 'shared.txt': 'line 1\nfrom a\nline 3\n' });
    const b = await attempt(h, 'b1', 'b', { 'src/b.ts': 'export const b = 1;\n' });
    const c = await attempt(h, 'b1', 'c', { 'shared.txt': 'line 1\nfrom c\nline 3\n' });
    const before = await publishes(prepared.repo, 'b1');

    // Three gates ask in the same turn of the event loop: one batch.
    const [ra, rb, rc] = await Promise.all([integrateAttempt(a), integrateAttempt(b), integrateAttempt(c)]);
    const tip = await tipOf(prepared.repo, 'b1');
    expect(ra).toMatchObject({ ok: true, alreadyIntegrated: false });
    expect(rb).toEqual({ ok: true, commit: tip, alreadyIntegrated: false });
    expect(rc).toMatchObject({ ok: false, files: ['shared.txt'] });
    if (rc.ok || !ra.ok) return;
    expect(rc.conflict).toContain('CONFLICT (content): Merge conflict in shared.txt');

    expect(await publishes(prepared.repo, 'b1')).toBe(before + 1);
    // Each approved attempt is its own merge commit, on top of the one before.
    expect(await git(prepared.repo, 'rev-parse', `${tip}^1`)).toBe(ra.commit);
    expect(await git(prepared.repo, 'rev-parse', `${tip}^2`)).toBe(b.workCommit);
    expect(await git(prepared.repo, 'rev-parse', `${ra.commit}^1`)).toBe(prepared.baseCommit);
    expect(await git(prepared.repo, 'rev-parse', `${ra.commit}^2`)).toBe(a.workCommit);
    expect(await git(prepared.repo, 'log', '-1', '--format=%B', tip)).toBe(
      'merge b\n\nFlotilla-Attempt: b1/b/a1',
    );
    expect(await git(prepared.repo, 'show', `${tip}:shared.txt`)).toBe('line 1\nfrom a\nline 3');
    // Nothing was checked out for the merge: the user's working tree is as prepareWorkspace left it.
    expect(await git(prepared.repo, 'status', '--porcelain')).toBe('');
  });

  it('writes a batch’s in-process merges into the mission repo as one pack, before publishing', async () => {
    const prepared = await missionRepo('b4');
    const h = await host(prepared.repo);
    const a = await attempt(h, 'b4', 'a', { 'src/a.ts': 'export const a = 1;\n' });
    const b = await attempt(h, 'b4', 'b', { 'src/b.ts': 'export const b = 1;\n' });
    const c = await attempt(h, 'b4', 'c', { 'c.txt': 'c\n' });
    const before = await objectCounts(prepared.repo);
    const results = await Promise.all([integrateAttempt(a), integrateAttempt(b), integrateAttempt(c)]);
    expect(results.every((result) => result.ok && !result.alreadyIntegrated)).toBe(true);
    const after = await objectCounts(prepared.repo);
    // Three merged trees, a `src` tree for two of them and three merge commits: one pack.
    expect(after).toEqual({ loose: before.loose, packs: before.packs + 1 });
    const tip = await tipOf(prepared.repo, 'b4');
    expect((await git(prepared.repo, 'log', '--merges', '--format=%s', tip)).split('\n')).toHaveLength(3);
    expect((await runGit(['fsck', '--strict', '--no-dangling'], { cwd: prepared.repo })).exitCode).toBe(0);
  });

  it('settles a replayed gate without merging again, whatever else is in its batch', async () => {
    const prepared = await missionRepo('b2');
    const h = await host(prepared.repo);
    const a = await attempt(h, 'b2', 'a', { 'a.txt': 'a\n' });
    const b = await attempt(h, 'b2', 'b', { 'b.txt': 'b\n' });
    const first = await integrateAttempt(a);
    expect(first).toMatchObject({ ok: true, alreadyIntegrated: false });
    const afterFirst = await tipOf(prepared.repo, 'b2');
    const published = await publishes(prepared.repo, 'b2');

    // The gate of `a` died after publishing, before it settled: its job runs again, now in a batch
    // with `b`'s gate. `a` is found in the branch and not merged a second time.
    const [replay, rb] = await Promise.all([integrateAttempt(a), integrateAttempt(b)]);
    expect(replay).toEqual({ ok: true, commit: afterFirst, alreadyIntegrated: true });
    expect(rb).toMatchObject({ ok: true, alreadyIntegrated: false });
    const tip = await tipOf(prepared.repo, 'b2');
    expect(await git(prepared.repo, 'rev-parse', `${tip}^1`)).toBe(afterFirst);
    expect(await publishes(prepared.repo, 'b2')).toBe(published + 1);
    const merges = await git(prepared.repo, 'log', '--merges', '--format=%s', tip);
    expect(merges.split('\n')).toEqual(['merge b', 'merge a']);

    // The same job delivered twice into one batch: merged once, both told so.
    const c = await attempt(h, 'b2', 'c', { 'c.txt': 'c\n' });
    const [c1, c2] = await Promise.all([integrateAttempt(c), integrateAttempt(c)]);
    expect(c1).toEqual(c2);
    expect(
      (await git(prepared.repo, 'log', '--merges', '--format=%s', `refs/heads/flotilla/b2`)).split('\n'),
    ).toEqual(['merge c', 'merge b', 'merge a']);
  });

  it('fails a request whose work commit is missing and still merges the rest of its batch', async () => {
    const prepared = await missionRepo('b3');
    const h = await host(prepared.repo);
    const good = await attempt(h, 'b3', 'good', { 'good.txt': 'good\n' });
    const bad = { ...good, attemptId: 'bad/a1', workCommit: 'f'.repeat(40), message: 'merge bad' };
    const [rg, rb] = await Promise.allSettled([integrateAttempt(good), integrateAttempt(bad)]);
    expect(rg).toMatchObject({ status: 'fulfilled', value: { ok: true, alreadyIntegrated: false } });
    expect(rb.status).toBe('rejected');
    if (rb.status === 'rejected') expect(isFlotillaError(rb.reason, 'git/failed')).toBe(true);
  });
});

describe('the integration branch holds the work only', () => {
  it("keeps flotilla's dispatch files in the attempt's own commit and a user's own .planning/ files in the branch", async () => {
    const prepared = await missionRepo('d1', { '.planning/notes.md': 'my plan\n' });
    const h = await host(prepared.repo);
    const a = await attempt(h, 'd1', 'a', { 'a.txt': 'a\n', '.planning/notes.md': 'my plan, updated\n' });
    expect(await integrateAttempt(a)).toMatchObject({ ok: true });
    const tip = await tipOf(prepared.repo, 'd1');
    const files = (await git(prepared.repo, 'ls-tree', '-r', '--name-only', tip)).split('\n');
    expect(files.sort()).toEqual(['.planning/notes.md', 'README.md', 'a.txt', 'shared.txt']);
    expect(await git(prepared.repo, 'show', `${tip}:.planning/notes.md`)).toBe('my plan, updated');
    // The audit record: the attempt ref's commit holds the prompt, on top of the work commit.
    expect(
      await git(prepared.repo, 'show', `${a.ref}:.planning/dispatch/archive/20260101-a-a1-PROMPT.md`),
    ).toBe('prompt of a');
    expect(await git(prepared.repo, 'rev-parse', `${a.ref}^`)).toBe(a.workCommit);
  });

  it('keeps dispatch files out even when the agent committed them itself', async () => {
    const prepared = await missionRepo('d2');
    const h = await host(prepared.repo);
    const checkout = await checkoutAttempt({ ...h, missionId: 'd2', taskId: 't', attempt: 1 });
    await mkdir(join(checkout.dir, '.planning', 'dispatch'), { recursive: true });
    await writeFile(join(checkout.dir, '.planning', 'dispatch', 't-a1-PROMPT.md'), 'prompt\n');
    await writeFile(join(checkout.dir, 'work.txt'), 'work\n');
    // An agent that runs `git add -A && git commit` on its own (aider's auto-commits, say).
    await runGit(['add', '-A'], { cwd: checkout.dir });
    await runGit(['-c', 'user.name=agent', '-c', 'user.email=a@a', 'commit', '-qm', 'agent commit'], {
      cwd: checkout.dir,
    });
    const ref = attemptRef('d2', 't', 1);
    const committed = await commitAttempt({
      dir: checkout.dir,
      message: 'w',
      ref,
      baseCommit: checkout.baseCommit,
    });
    await removeWorktree(checkout.dir);
    expect(committed.changed).toBe(true);
    const result = await integrateAttempt({
      cache: h.cache,
      missionId: 'd2',
      attemptId: 't/a1',
      ref,
      workCommit: committed.workCommit,
      message: 'merge t',
    });
    expect(result.ok).toBe(true);
    const tip = await tipOf(prepared.repo, 'd2');
    expect(await git(prepared.repo, 'ls-tree', '-r', '--name-only', tip)).not.toContain('.planning');
    expect(await git(prepared.repo, 'show', `${ref}:.planning/dispatch/t-a1-PROMPT.md`)).toBe('prompt');
  });
});

describe("the user's repository", () => {
  it('lists only its own branches and the integration branch in `git branch`, with 1,000 attempt refs', async () => {
    const prepared = await missionRepo('r1');
    const before = (await git(prepared.repo, 'branch', '--format=%(refname:short)')).split('\n');
    const h = await host(prepared.repo);
    const a = await attempt(h, 'r1', 'a', { 'a.txt': 'a\n' });
    expect(await integrateAttempt(a)).toMatchObject({ ok: true });
    // 1,000 more attempts of a large mission, under the names the run stage publishes them as.
    const lines = Array.from(
      { length: 1_000 },
      (_, i) => `create ${attemptRef('r1', `t${i}`, (i % 3) + 1)} ${a.commit}\n`,
    ).join('');
    await runGit(['update-ref', '--stdin'], { cwd: prepared.repo, input: lines });

    const branches = (await git(prepared.repo, 'branch', '--format=%(refname:short)')).split('\n');
    expect(branches).toEqual(before);
    expect(branches).toContain(integrationBranch('r1'));
    expect(branches).toHaveLength(2);
    // Every attempt is still reachable, for the audit trail.
    const refs = (await git(prepared.repo, 'for-each-ref', '--format=%(refname)', 'refs/flotilla/r1/')).split(
      '\n',
    );
    expect(refs).toHaveLength(1_001);
    expect(refs).toContain(a.ref);
    // A batch still merges with all of them there.
    const b = await attempt(h, 'r1', 'b', { 'b.txt': 'b\n' });
    expect(await integrateAttempt(b)).toMatchObject({ ok: true, alreadyIntegrated: false });
  });
});

describe('a local mission repo', () => {
  it('is merged into, and its refs read, without waiting for the cache’s other work', async () => {
    const prepared = await missionRepo('l1');
    const h = await host(prepared.repo);
    const work = await attempt(h, 'l1', 'a', { 'a.txt': 'a\n' });
    // Something long holds the cache, as a first `worktree add` of a big tree does for minutes.
    let release = () => {};
    const held = h.cache.exclusive(() => new Promise<void>((done) => (release = done)));
    try {
      expect(await integrateAttempt(work)).toMatchObject({ ok: true, alreadyIntegrated: false });
      // The run stage's targeted fetch of the integration branch, and its read of the tip.
      await h.cache.fetch([integrationBranch('l1')]);
      expect(await h.cache.remoteCommit(integrationBranch('l1'))).toBe(await tipOf(prepared.repo, 'l1'));
    } finally {
      release();
      await held;
    }
    // Waiting would hang until this limit: well above the second the test takes on a slow machine.
  }, 30_000);
});

describe('compare-and-swap', () => {
  it('plans the batch again when another host moved the branch before the push (mission repo by URL)', async () => {
    const source = await missionRepo('seed');
    const bare = scratch('remote.git');
    await runGit(['clone', '--bare', '--quiet', source.repo, bare]);
    const url = `file://${bare}`;
    const prepared = await prepareWorkspace({ workspace: url, missionId: 'c1', cacheDir: scratch('cache') });
    const h = await host(url);
    const work = await attempt(h, 'c1', 'late', { 'late.txt': 'late\n' });
    // Another host's merge: a commit on the integration branch made elsewhere.
    const other = await otherHostCommit(bare, prepared.baseCommit);
    // The mission repo's update hook moves the branch once, after our push was sent: the ref is no
    // longer at the old value the push names, so the mission repo refuses it and the batch is redone.
    await writeFile(
      join(bare, 'hooks', 'update'),
      `#!/bin/sh\nif [ "$1" = refs/heads/flotilla/c1 ] && [ ! -f "$GIT_DIR/raced" ]; then\n  touch "$GIT_DIR/raced"\n  git update-ref "$1" ${other}\nfi\n`,
      { mode: 0o755 },
    );
    const result = await integrateAttempt(work);
    expect(await stat(join(bare, 'raced'))).toBeTruthy();
    const tip = await tipOf(bare, 'c1');
    expect(result).toEqual({ ok: true, commit: tip, alreadyIntegrated: false });
    expect(await git(bare, 'rev-parse', `${tip}^1`)).toBe(other);
    expect(await git(bare, 'rev-parse', `${tip}^2`)).toBe(work.workCommit);
  });

  it.each([
    ['its files, in-process', false],
    ['git update-ref (a shared repository)', true],
  ])(
    'plans the batch again when another writer moved the branch before the publish (local mission repo, written by %s)',
    async (_how, shared) => {
      const missionId = shared ? 'c2git' : 'c2';
      const prepared = await missionRepo(missionId);
      // A repository that asks for group permissions gets its refs written by git.
      if (shared) await git(prepared.repo, 'config', 'core.sharedRepository', 'group');
      const h = await host(prepared.repo);
      const work = await attempt(h, missionId, 'late', { 'late.txt': 'late\n' });
      const other = await otherHostCommit(prepared.repo, prepared.baseCommit);
      const branchRef = `refs/heads/${integrationBranch(missionId)}`;
      let raced = 0;
      const race = async () => {
        raced += 1;
        await git(prepared.repo, 'update-ref', branchRef, other);
      };
      // Just before the first publish, "another host" publishes first: through the in-process
      // writer's seam, or a `git` first on PATH for git's update-ref.
      const realGit = (await runGit(['--exec-path'])).stdout.trim();
      const shim = scratch('shim');
      await mkdir(shim);
      const marker = join(shim, 'raced');
      await writeFile(
        join(shim, 'git'),
        `#!/bin/sh\ncase " $* " in *" update-ref "*" ${branchRef} "*)\n  if [ ! -f ${marker} ]; then\n    touch ${marker}\n    ${realGit}/git -C "$2" update-ref ${branchRef} ${other}\n  fi;;\nesac\nexec ${realGit}/git "$@"\n`,
      );
      await chmod(join(shim, 'git'), 0o755);
      const savedPath = process.env.PATH;
      if (shared) process.env.PATH = `${shim}${delimiter}${savedPath}`;
      else refWrites.before = async (ref) => (ref === branchRef && raced === 0 ? race() : undefined);
      let result: Awaited<ReturnType<typeof integrateAttempt>>;
      try {
        result = await integrateAttempt(work);
      } finally {
        process.env.PATH = savedPath;
      }
      if (shared) expect(await readFile(marker, 'utf8')).toBe('');
      else expect(raced).toBe(1);
      // In-process: the first publish found the branch moved, the second wrote it; shared: git did both.
      expect(refWrites.answers).toEqual(shared ? [] : ['moved', 'written']);
      const tip = await tipOf(prepared.repo, missionId);
      expect(result).toEqual({ ok: true, commit: tip, alreadyIntegrated: false });
      expect(await git(prepared.repo, 'rev-parse', `${tip}^1`)).toBe(other);
      // The reflog has the race's line and the publish's, as git writes them.
      const log = await git(prepared.repo, 'reflog', 'show', '--format=%H %gs', branchRef);
      expect(
        log
          .split('\n')
          .slice(0, 2)
          .map((line) => line.trim()),
      ).toEqual([`${tip} flotilla: integrate`, other]);
    },
  );
});

describe('a held lock on the integration branch', () => {
  it.each([
    ['in-process', false],
    ['through git update-ref', true],
  ])('is waited for and reported, never taken away however old (%s)', async (_, viaGit) => {
    const missionId = viaGit ? 'lock-git' : 'lock-files';
    const prepared = await missionRepo(missionId);
    // core.fsync asks for more than a plain ref file: git writes the ref (git-files.ts).
    if (viaGit) await git(prepared.repo, 'config', 'core.fsync', 'reference');
    const h = await host(prepared.repo);
    const a = await attempt(h, missionId, 'a', { 'a.txt': 'a\n' });
    const branch = `refs/heads/${integrationBranch(missionId)}`;
    const lock = join(prepared.repo, '.git', `${branch}.lock`);
    await writeFile(lock, 'held\n');
    // An hour old: left by a killed writer, or held by a live one; git never tells them apart.
    const old = (Date.now() - 3_600_000) / 1000;
    await utimes(lock, old, old);
    const before = await tipOf(prepared.repo, missionId);
    const failed = await integrateAttempt({ ...a, maxTries: 2 }).catch((error: unknown) => error);
    expect(isFlotillaError(failed) && failed.code).toBe('git/failed');
    expect(String((failed as Error).message)).toContain(`its lock ${lock} was held through 2 tries`);
    expect(await readFile(lock, 'utf8')).toBe('held\n');
    expect(await tipOf(prepared.repo, missionId)).toBe(before);
    // Once whoever holds it lets go, the same merge goes through.
    await rm(lock);
    const merged = await integrateAttempt(a);
    expect(merged.ok).toBe(true);
    expect(await tipOf(prepared.repo, missionId)).not.toBe(before);
  });
});
