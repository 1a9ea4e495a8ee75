import { mkdir, mkdtemp, readdir, readFile, readlink, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { attemptRef, integrationBranch } from '../../../src/shared/contracts.js';
import { commitAttempt } from '../../../src/workers/workspace/commit.js';
import { runGit, runGitBytes } from '../../../src/workers/workspace/git.js';
import { integrateAttempt } from '../../../src/workers/workspace/integrate.js';
import { prepareWorkspace } from '../../../src/workers/workspace/prepare-workspace.js';
import { openRepoCache } from '../../../src/workers/workspace/repo-cache.js';
import { resetCheckout } from '../../../src/workers/workspace/warm-checkout.js';
import { removeWorktree } from '../../../src/workers/workspace/worktree.js';
import { checkoutAttempt } from '../../helpers/checkouts.js';

/**
 * One git: an attempt's work commit is what `git add -A && git commit` makes of the same change in
 * a twin clone (the same tree id), or what git refuses is refused, for each case below, with the
 * in-process paths on (the default) and off (FLOTILLA_GIT=cli), published into a local mission repo
 * and pushed.
 */
let root: string;
let counter = 0;
const savedMode = process.env.FLOTILLA_GIT;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'flotilla-equivalence-'));
});
afterEach(() => {
  if (savedMode === undefined) delete process.env.FLOTILLA_GIT;
  else process.env.FLOTILLA_GIT = savedMode;
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

function scratch(name: string): string {
  counter += 1;
  return join(root, `${name}-${counter}`);
}

/** A repository path as bytes: `parts` joined, strings as UTF-8 and byte arrays as they are. */
function bytes(...parts: (string | number[])[]): Buffer {
  return Buffer.concat(
    parts.map((part) => (typeof part === 'string' ? Buffer.from(part) : Buffer.from(part))),
  );
}

/** `dir/path` as a Buffer file name, so that names that are not UTF-8 reach the file system as they are. */
function at(dir: string, path: string | Buffer): Buffer {
  return Buffer.concat([Buffer.from(`${dir}/`), typeof path === 'string' ? Buffer.from(path) : path]);
}

async function put(dir: string, path: string | Buffer, content: string | Buffer): Promise<void> {
  const full = at(dir, path);
  const slash = full.lastIndexOf(0x2f);
  await mkdir(full.subarray(0, slash), { recursive: true });
  await writeFile(full, content);
}

/** Fixed identity and dates, so that a repository made in each copy has the same commit id. */
const FIXED = {
  GIT_AUTHOR_NAME: 'agent',
  GIT_AUTHOR_EMAIL: 'agent@example.com',
  GIT_COMMITTER_NAME: 'agent',
  GIT_COMMITTER_EMAIL: 'agent@example.com',
  GIT_AUTHOR_DATE: '1700000000 +0000',
  GIT_COMMITTER_DATE: '1700000000 +0000',
};

async function git(cwd: string, ...args: string[]): Promise<string> {
  return (await runGit(args, { cwd, env: FIXED })).stdout.replace(/\n$/, '');
}

interface Case {
  readonly name: string;
  /** The mission repo's first commit: files written into a folder that becomes the repository. */
  readonly base: (dir: string) => Promise<void>;
  /** What the agent does, applied to flotilla's checkout and to the twin alike. */
  readonly change: (dir: string, outside: string) => Promise<void>;
}

const cases: Case[] = [
  {
    name: 'a tracked folder replaced by a link inside the checkout',
    base: async (dir) => {
      await put(dir, 'vault/key.txt', 'key\n');
      await put(dir, 'other/x.txt', 'x\n');
    },
    change: async (dir) => {
      await rm(join(dir, 'vault'), { recursive: true });
      await symlink('other', join(dir, 'vault'));
    },
  },
  {
    name: 'a tracked folder replaced by a link out of the checkout',
    base: async (dir) => {
      await put(dir, 'vault/key.txt', 'key\n');
      await put(dir, 'vault/deep/more.txt', 'more\n');
    },
    change: async (dir, outside) => {
      await put(outside, 'key.txt', 'the secret behind the link\n');
      await put(outside, 'deep/more.txt', 'another secret\n');
      await rm(join(dir, 'vault'), { recursive: true });
      await symlink(outside, join(dir, 'vault'));
    },
  },
  {
    name: 'a tracked link replaced by a folder',
    base: async (dir) => {
      await put(dir, 'target/t.txt', 't\n');
      await symlink('target', join(dir, 'link'));
    },
    change: async (dir) => {
      await rm(join(dir, 'link'));
      await put(dir, 'link/inside.txt', 'now a folder\n');
    },
  },
  {
    name: 'names that are not UTF-8 (0xff, latin-1), new, changed and deleted',
    base: async (dir) => {
      await put(dir, bytes('caf', [0xe9], '.txt'), 'latin-1 name\n');
      await put(dir, bytes('gone', [0xfe], '.txt'), 'to delete\n');
      await put(dir, 'plain.txt', 'plain\n');
    },
    change: async (dir) => {
      await writeFile(at(dir, bytes('caf', [0xe9], '.txt')), 'changed\n');
      await rm(at(dir, bytes('gone', [0xfe], '.txt')));
      await put(dir, bytes('new', [0xff], '.bin'), Buffer.from([0, 1, 2, 0xff]));
      await put(dir, bytes('dir', [0xe9], '/inner.txt'), 'in a latin-1 folder\n');
    },
  },
  {
    name: 'a name that is not UTF-8 in a checkout with a split index (the large trees’ warm checkouts)',
    base: async (dir) => {
      for (let i = 0; i < 20; i++) await put(dir, `many/f${i}.txt`, `${i}\n`);
    },
    change: async (dir) => {
      await git(dir, 'config', 'core.splitIndex', 'true');
      await git(dir, 'update-index', '--split-index');
      await put(dir, bytes('many/new', [0xff], '.txt'), 'new\n');
      await writeFile(join(dir, 'many/f3.txt'), 'changed\n');
      await rm(join(dir, 'many/f4.txt'));
    },
  },
  {
    name: 'a nested repository the agent created',
    base: async (dir) => {
      await put(dir, 'README.md', 'top\n');
    },
    change: async (dir) => {
      await put(dir, 'nested/n.txt', 'nested\n');
      await git(join(dir, 'nested'), 'init', '-q');
      await git(join(dir, 'nested'), 'add', 'n.txt');
      await git(join(dir, 'nested'), 'commit', '-q', '-m', 'nested');
      await put(dir, 'beside.txt', 'beside\n');
    },
  },
  {
    name: 'a nested repository with no commit checked out (git add refuses it)',
    base: async (dir) => {
      await put(dir, 'README.md', 'top\n');
    },
    change: async (dir) => {
      await put(dir, 'empty/n.txt', 'never committed\n');
      await git(join(dir, 'empty'), 'init', '-q');
    },
  },
  {
    name: 'a submodule the agent moved (git mv)',
    base: async (dir) => {
      await put(dir, 'README.md', 'top\n');
      await git(dir, 'init', '-q');
      const sub = await git(dir, 'commit-tree', '4b825dc642cb6eb9a060e54bf8d69288fbee4904', '-m', 'sub');
      await git(dir, 'update-index', '--add', '--cacheinfo', `160000,${sub},sub`);
      await put(dir, '.gitmodules', '[submodule "sub"]\n\tpath = sub\n\turl = ./sub-origin\n');
      await git(dir, 'add', 'README.md', '.gitmodules');
      await git(dir, 'commit', '-q', '-m', 'base with a submodule');
    },
    change: async (dir) => {
      // A worktree (the pool's checkouts) leaves an unpopulated submodule's folder out; a clone makes it.
      await mkdir(join(dir, 'sub'), { recursive: true });
      await mkdir(join(dir, 'moved'), { recursive: true });
      await git(dir, 'mv', 'sub', 'moved/sub');
    },
  },
  {
    name: 'the legacy crlf attribute (`*.txt crlf`, `*.raw -crlf`)',
    base: async (dir) => {
      await put(dir, '.gitattributes', '*.txt crlf\n*.raw -crlf\n');
      await put(dir, 'a.txt', 'one\n');
    },
    change: async (dir) => {
      await writeFile(join(dir, 'a.txt'), 'one\r\ntwo\r\n');
      await writeFile(join(dir, 'b.txt'), 'new\r\n');
      await writeFile(join(dir, 'c.raw'), 'kept\r\n');
    },
  },
];

/** The mission repo of `c`, a pool-style checkout of it, and a twin clone at the same commit. */
async function setUp(c: Case, missionId: string) {
  const workspace = scratch('mission');
  await mkdir(workspace, { recursive: true });
  await c.base(workspace);
  const prepared = await prepareWorkspace({ workspace, missionId });
  const cache = await openRepoCache({ repo: prepared.repo, cacheDir: scratch('cache') });
  const checkout = await checkoutAttempt({
    cache,
    workRoot: scratch('work'),
    missionId,
    taskId: 't',
    attempt: 1,
  });
  const twin = scratch('twin');
  await git(root, 'clone', '-q', prepared.repo, twin);
  await git(twin, 'checkout', '-q', '--detach', checkout.baseCommit);
  return { prepared, checkout, twin };
}

/** `git add -A`'s tree in the twin, or the first line of git's refusal. */
async function twinTree(twin: string): Promise<{ tree: string } | { refused: string }> {
  const added = await runGit(['add', '-A'], { cwd: twin, allowFailure: true, env: FIXED });
  if (added.exitCode !== 0)
    return { refused: added.stderr.split('\n').find((l) => l.startsWith('error')) ?? added.stderr };
  await git(twin, 'commit', '-q', '--allow-empty', '-m', 'twin');
  return { tree: await git(twin, 'rev-parse', 'HEAD^{tree}') };
}

/** What the checkout's index holds (`ls-files -s`), as bytes read latin-1 so no name is mangled. */
async function indexListing(dir: string): Promise<string> {
  return (await runGitBytes(['ls-files', '-s', '-z'], { cwd: dir })).stdout.toString('latin1');
}

async function statusListing(dir: string): Promise<string> {
  return (
    await runGitBytes(['status', '--porcelain', '-z', '--untracked-files=all'], { cwd: dir })
  ).stdout.toString('latin1');
}

const modes = [
  ['in-process where it can (the default)', undefined],
  ['git commands only (FLOTILLA_GIT=cli)', 'cli'],
] as const;
const publishes = [
  ['into the local mission repo', true],
  ['pushed', false],
] as const;

describe.each(modes)('commitAttempt, %s', (_mode, setting) => {
  describe.each(publishes)('%s', (_publish, local) => {
    it.each(cases.map((c) => [c.name, c] as const))('%s: the tree git add -A makes', async (_name, c) => {
      if (setting) process.env.FLOTILLA_GIT = setting;
      else delete process.env.FLOTILLA_GIT;
      const missionId = `eq${counter}`;
      const { prepared, checkout, twin } = await setUp(c, missionId);
      const outside = scratch('outside');
      await c.change(checkout.dir, outside);
      // The same folder outside both: a link's target is what git stores for it.
      await c.change(twin, outside);
      const expected = await twinTree(twin);
      const committed = await commitAttempt({
        dir: checkout.dir,
        message: 't: work',
        ref: attemptRef(missionId, 't', 1),
        baseCommit: checkout.baseCommit,
        ...(local ? { localRepo: prepared.repo } : {}),
      });
      if ('refused' in expected) {
        expect(expected.refused).toContain('does not have a commit checked out');
        expect(committed.refused).toEqual([{ path: 'empty', refusal: 'no-commit' }]);
        expect(await git(prepared.repo, 'ls-tree', '-r', '--name-only', committed.workCommit)).toBe(
          'README.md',
        );
      } else {
        expect(await git(prepared.repo, 'rev-parse', `${committed.workCommit}^{tree}`)).toBe(expected.tree);
        expect(committed.refused).toEqual([]);
        // The checkout is left as the twin after its commit: HEAD's tree, index and status.
        expect(await git(checkout.dir, 'rev-parse', 'HEAD^{tree}')).toBe(expected.tree);
        expect(await indexListing(checkout.dir)).toBe(await indexListing(twin));
        expect(await statusListing(checkout.dir)).toBe(await statusListing(twin));
      }
      // Nothing behind a link out of the checkout reached the mission repo.
      const everything = await runGitBytes(['cat-file', '--batch-all-objects', '--batch'], {
        cwd: prepared.repo,
      });
      expect(everything.stdout.toString('latin1')).not.toContain('secret');
      await removeWorktree(checkout.dir);
    });
  });
});

/**
 * Every name below `dir` but `.git` at its top, with each file's bytes or link's target (names
 * read latin-1); flotilla's own empty `.planning/dispatch/` folders left out.
 */
async function filesOf(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (at: Buffer, prefix: string): Promise<void> => {
    for (const entry of await readdir(at, { withFileTypes: true, encoding: 'buffer' })) {
      const name = entry.name.toString('latin1');
      if (prefix === '' && name === '.git') continue;
      const full = Buffer.concat([at, Buffer.from('/'), entry.name]);
      if (entry.isDirectory()) {
        out.push(`${prefix}${name}/`);
        await walk(full, `${prefix}${name}/`);
      } else if (entry.isSymbolicLink()) out.push(`${prefix}${name} -> ${(await readlink(full)).toString()}`);
      else out.push(`${prefix}${name}: ${(await readFile(full)).toString('latin1')}`);
    }
  };
  await walk(Buffer.from(dir), '');
  return out.filter((name) => !/^\.planning\/(dispatch\/(archive\/)?)?$/.test(name)).sort();
}

describe.each(modes)('onto the integration branch and back, %s', (_mode, setting) => {
  it.each(cases.filter((c) => !c.name.includes('no commit')).map((c) => [c.name, c] as const))(
    '%s: merged as merge-tree merges it, reset as a fresh checkout',
    async (_name, c) => {
      if (setting) process.env.FLOTILLA_GIT = setting;
      else delete process.env.FLOTILLA_GIT;
      const missionId = `eq${counter}`;
      const { prepared, checkout, twin } = await setUp(c, missionId);
      const outside = scratch('outside');
      await c.change(checkout.dir, outside);
      const ref = attemptRef(missionId, 't', 1);
      const committed = await commitAttempt({
        dir: checkout.dir,
        message: 't: work',
        ref,
        baseCommit: checkout.baseCommit,
        localRepo: prepared.repo,
      });
      // Another attempt merged first: the branch is one commit past the base.
      const repo = prepared.repo;
      const index = join(scratch('index'), 'index');
      await mkdir(join(index, '..'), { recursive: true });
      const env = { ...FIXED, GIT_INDEX_FILE: index };
      await runGit(['read-tree', checkout.baseCommit], { cwd: repo, env });
      const blob = (
        await runGit(['hash-object', '-w', '--stdin'], { cwd: repo, input: 'other\n' })
      ).stdout.trim();
      await runGit(['update-index', '--add', '--cacheinfo', `100644,${blob},other-host.txt`], {
        cwd: repo,
        env,
      });
      const otherTree = (await runGit(['write-tree'], { cwd: repo, env })).stdout.trim();
      const other = await git(repo, 'commit-tree', otherTree, '-p', checkout.baseCommit, '-m', 'other');
      await git(repo, 'update-ref', `refs/heads/${integrationBranch(missionId)}`, other, checkout.baseCommit);
      const expected = (await git(repo, 'merge-tree', '--write-tree', other, committed.workCommit)).split(
        '\n',
      )[0];

      const cache = await openRepoCache({ repo, cacheDir: join(checkout.dir, '..', '..', 'cache-gate') });
      const merged = await integrateAttempt({
        cache,
        missionId,
        attemptId: 't/a1',
        ref,
        workCommit: committed.workCommit,
        message: 't',
      });
      if (!merged.ok) throw new Error(`not merged: ${merged.conflict}`);
      expect(await git(repo, 'rev-parse', `${merged.commit}^{tree}`)).toBe(expected);
      expect(await git(repo, 'rev-parse', integrationBranch(missionId))).toBe(merged.commit);
      expect(
        (await runGit(['fsck', '--strict', '--no-dangling'], { cwd: repo, allowFailure: true })).exitCode,
      ).toBe(0);

      // The next lease's reset, to the merge and back to the base, leaves what a fresh checkout has.
      await runGit(['fetch', '-q', 'origin'], { cwd: checkout.dir });
      await resetCheckout(checkout.dir, merged.commit, []);
      expect(await git(checkout.dir, 'rev-parse', 'HEAD')).toBe(merged.commit);
      expect(await statusListing(checkout.dir)).toBe('');
      await git(twin, 'fetch', '-q', 'origin', merged.commit);
      await git(twin, 'checkout', '-q', '--force', '--detach', merged.commit);
      expect(await indexListing(checkout.dir)).toBe(await indexListing(twin));
      await resetCheckout(checkout.dir, checkout.baseCommit, []);
      const fresh = scratch('fresh');
      await git(root, 'clone', '-q', '--no-checkout', repo, fresh);
      await git(fresh, 'checkout', '-q', '--detach', checkout.baseCommit);
      expect(await filesOf(checkout.dir)).toEqual(await filesOf(fresh));
      expect(await indexListing(checkout.dir)).toBe(await indexListing(fresh));
      expect(await statusListing(checkout.dir)).toBe('');
      await removeWorktree(checkout.dir);
    },
  );
});
