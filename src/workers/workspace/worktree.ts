/** Removing a worktree of a host's repo cache (the warm pool's discarded checkouts). */
import { rm } from 'node:fs/promises';
import { runGit } from './git.js';
import { commonGitDir } from './repo-cache.js';

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
