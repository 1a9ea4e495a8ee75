/**
 * Every kind of change an attempt can leave in a warm checkout, and the whole-tree answers a
 * checkout that looks only at what changed (a monitor's paths, a scan of the changed directories)
 * is held to: `git status` of the whole tree, and after a reset a fresh checkout of the target.
 */
import { createHash } from 'node:crypto';
import { chmod, lstat, mkdir, readdir, readFile, readlink, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { checkoutPool } from '../../src/workers/workspace/checkout-pool.js';
import { runGit } from '../../src/workers/workspace/git.js';
import { openRepoCache } from '../../src/workers/workspace/repo-cache.js';
import { readCheckoutState, type SetupSpec } from '../../src/workers/workspace/setup.js';
import type { WorktreeState } from '../../src/workers/workspace/snapshot-changes.js';
import { ensureSetup, leaseCheckout } from '../../src/workers/workspace/warm-checkout.js';

export const git = async (cwd: string, ...args: string[]) => (await runGit(args, { cwd })).stdout.trim();
export const ID = ['-c', 'user.name=t', '-c', 'user.email=t@t'];

export async function write(dir: string, path: string, content: string): Promise<void> {
  await mkdir(join(dir, path, '..'), { recursive: true });
  await writeFile(join(dir, path), content);
}

/** A base with files, folders and ignore rules; `target` is the base moved on by other tasks' work. */
export async function repo(dir: string): Promise<{ dir: string; base: string; target: string }> {
  const files: Record<string, string> = {
    '.gitignore': '*.log\nbuild/\nnode_modules/\n',
    'a.txt': 'a\n',
    'b.txt': 'b\n',
    'c.txt': 'c\n',
    'd/inner.txt': 'd\n',
    'e.sh': 'echo e\n',
    'f.txt': 'f\n',
    'g.txt': 'g\n',
    'lib/one.txt': '1\n',
    'lib/deep/two.txt': '2\n',
    'package-lock.json': '{}\n',
  };
  for (const [path, content] of Object.entries(files)) await write(dir, path, content);
  await git(dir, 'init', '--quiet', '--initial-branch=main');
  await git(dir, 'add', '-A');
  await git(dir, ...ID, 'commit', '--quiet', '-m', 'base');
  const base = await git(dir, 'rev-parse', 'HEAD');
  await write(dir, 'a.txt', 'a, as the target has it\n');
  await write(dir, 't-new.txt', 'new in the target\n');
  await write(dir, 'newdir/from-target.txt', 'the target has this folder too\n');
  await rm(join(dir, 'g.txt'));
  await git(dir, 'add', '-A');
  await git(dir, ...ID, 'commit', '--quiet', '-m', 'target');
  return { dir, base, target: await git(dir, 'rev-parse', 'HEAD') };
}

/** Every kind of change an attempt (the agent, then the criteria) can leave in its checkout. */
export async function changeEverything(dir: string): Promise<void> {
  await writeFile(join(dir, 'a.txt'), 'a, edited in place\n');
  await rm(join(dir, 'b.txt'));
  await rm(join(dir, 'lib'), { recursive: true });
  await write(dir, 'new.txt', 'untracked\n');
  await write(dir, 'newdir/sub/x.txt', 'a new folder\n');
  await write(dir, 'newdir/mine.txt', 'in a folder the target also makes\n');
  await write(dir, 'debug.log', 'ignored\n');
  await write(dir, 'build/out.o', 'an ignored folder\n');
  await rm(join(dir, 'c.txt'));
  await write(dir, 'c.txt/inner', 'a folder where a file was\n');
  await rm(join(dir, 'd'), { recursive: true });
  await writeFile(join(dir, 'd'), 'a file where a folder was\n');
  await chmod(join(dir, 'e.sh'), 0o755);
  await symlink('a.txt', join(dir, 'link'));
  await write(dir, 'node_modules/pkg/index.js', 'setup output, changed\n');
  await write(dir, 'node_modules/pkg/extra.js', 'setup output, added\n');
  await git(dir, 'add', 'new.txt');
  await git(dir, 'rm', '--cached', '--quiet', 'f.txt');
}

/** What `git status` of the whole tree says differs from HEAD, ignored files included. */
export async function wholeStatus(dir: string): Promise<string> {
  return git(dir, 'status', '--porcelain=v1', '-uall', '--ignored=matching');
}

/** A listing in path order; setup's kept output, which the monitored listing leaves out, left out. */
export function sorted(state: WorktreeState) {
  return {
    head: state.head,
    changes: [...state.changes].sort((x, y) => x.path.localeCompare(y.path)),
    ignored: state.ignored.filter((path) => path !== 'node_modules/').sort(),
  };
}

export const SETUP: SetupSpec = {
  commands: ['mkdir -p node_modules/pkg && echo setup > node_modules/pkg/index.js'],
  inputs: [],
};
export async function bash(command: string, cwd: string) {
  const r = await execa('bash', ['-c', command], { cwd, reject: false, all: true });
  return { exitCode: r.exitCode ?? null, timedOut: false, output: r.all ?? '' };
}

/** A warm checkout at `base` with setup's node_modules/ in it, and the monitor's record of it clean. */
export async function leasedAtBase(scratch: (name: string) => string) {
  const { dir: repoDir, base, target } = await repo(scratch('repo'));
  const cache = await openRepoCache({ repo: repoDir, cacheDir: scratch('cache') });
  const pool = await checkoutPool(cache, { root: scratch('checkouts'), keep: 1 });
  const lease = await leaseCheckout(pool, base, SETUP);
  await ensureSetup({ lease, commit: base, setup: SETUP, runCommand: bash });
  const state = await readCheckoutState(`${lease.dir}.json`);
  return { repoDir, lease, pool, base, target, state, keep: state.setup?.keep ?? [] };
}

/**
 * Everything in a checkout but its `.git` and setup's `node_modules/`: each folder, each file with
 * its executable bit and a hash of its content, each link with its target. Empty folders count.
 */
export async function treeOf(dir: string, path = ''): Promise<Record<string, string>> {
  const tree: Record<string, string> = {};
  for (const name of (await readdir(join(dir, path))).sort()) {
    const child = path ? `${path}/${name}` : name;
    if (child === '.git' || child === 'node_modules') continue;
    const info = await lstat(join(dir, child));
    if (info.isDirectory()) {
      tree[child] = 'dir';
      Object.assign(tree, await treeOf(dir, child));
    } else if (info.isSymbolicLink()) {
      tree[child] = `link:${await readlink(join(dir, child))}`;
    } else {
      const hash = createHash('sha1')
        .update(await readFile(join(dir, child)))
        .digest('hex');
      tree[child] = `file:${info.mode & 0o111 ? 'x' : '-'}:${hash}`;
    }
  }
  return tree;
}

/** treeOf() a fresh checkout of `commit` from `repoDir`, made in `where`. */
export async function freshTree(
  repoDir: string,
  commit: string,
  where: string,
): Promise<Record<string, string>> {
  await git(repoDir, 'worktree', 'add', '--quiet', '--detach', where, commit);
  try {
    return await treeOf(where);
  } finally {
    await git(repoDir, 'worktree', 'remove', '--force', where);
  }
}
