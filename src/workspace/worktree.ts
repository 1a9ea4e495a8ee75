/**
 * Worktrees of a host's repo cache: one independent directory per attempt, verify or integration,
 * sharing the cache's objects.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { runGit } from './git.js';
import { commonGitDir, type RepoCache } from './repo-cache.js';

/** `<workRoot>/<segments…>-<random>`: a fresh directory name, so a re-delivered job never meets the old one. */
export function uniqueWorkDir(workRoot: string, ...segments: string[]): string {
  const suffix = randomBytes(3).toString('hex');
  const last = segments.pop() ?? 'worktree';
  return join(resolve(workRoot), ...segments, `${last}-${suffix}`);
}

interface WorktreeEntry {
  readonly path: string;
  readonly branch?: string;
}

async function listWorktrees(cache: RepoCache): Promise<WorktreeEntry[]> {
  const { stdout } = await runGit(['worktree', 'list', '--porcelain', '-z'], { cwd: cache.dir });
  const entries: WorktreeEntry[] = [];
  let current: { path?: string; branch?: string } = {};
  for (const field of stdout.split('\0')) {
    if (field === '') {
      if (current.path) entries.push({ path: current.path, branch: current.branch });
      current = {};
    } else if (field.startsWith('worktree ')) current.path = field.slice('worktree '.length);
    else if (field.startsWith('branch ')) current.branch = field.slice('branch '.length);
  }
  return entries;
}

/**
 * A branch is checked out in at most one worktree. When a job is delivered again, the earlier
 * delivery's worktree on this host (crashed or superseded) still holds the branch; the new delivery
 * owns the attempt now, so the old worktree goes.
 */
async function releaseBranch(cache: RepoCache, branch: string): Promise<void> {
  await runGit(['worktree', 'prune'], { cwd: cache.dir, allowFailure: true });
  const holders = (await listWorktrees(cache)).filter((entry) => entry.branch === `refs/heads/${branch}`);
  for (const holder of holders) {
    await runGit(['worktree', 'remove', '--force', '--force', holder.path], {
      cwd: cache.dir,
      allowFailure: true,
    });
    await rm(holder.path, { recursive: true, force: true });
  }
  if (holders.length > 0) await runGit(['worktree', 'prune'], { cwd: cache.dir, allowFailure: true });
}

export interface AddWorktreeOptions {
  readonly dir: string;
  readonly commit: string;
  /** Create or reset this local branch at `commit` and check it out; without it the worktree is detached. */
  readonly branch?: string;
}

export async function addWorktree(cache: RepoCache, options: AddWorktreeOptions): Promise<void> {
  await mkdir(dirname(options.dir), { recursive: true });
  await cache.exclusive(async () => {
    if (options.branch) {
      await releaseBranch(cache, options.branch);
      await runGit(['worktree', 'add', '--quiet', '-B', options.branch, options.dir, options.commit], {
        cwd: cache.dir,
      });
    } else {
      await runGit(['worktree', 'add', '--quiet', '--detach', options.dir, options.commit], {
        cwd: cache.dir,
      });
    }
  });
}

/** Removes a worktree and its directory. Never throws: cleanup must not turn a result into a failure. */
export async function removeWorktree(dir: string): Promise<void> {
  const common = await commonGitDir(dir).catch(() => null);
  const removed = common
    ? await runGit(['worktree', 'remove', '--force', '--force', dir], { cwd: common, allowFailure: true })
        .then((result) => result.exitCode === 0)
        .catch(() => false)
    : false;
  // Not a worktree any more (or git refused): the directory goes by hand, and prune forgets it.
  await rm(dir, { recursive: true, force: true }).catch(() => undefined);
  if (common && !removed) {
    await runGit(['worktree', 'prune'], { cwd: common, allowFailure: true }).catch(() => undefined);
  }
}
