/** A warm checkout's git state read from its files, without starting git. */
import { lstat, readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';

/** The checkout's own git folder (a worktree's `.git` file names it). */
export async function gitDirOf(dir: string): Promise<string> {
  const link = (await readFile(join(dir, '.git'), 'utf8').catch(() => '')).trim();
  return link.startsWith('gitdir: ') ? resolve(dir, link.slice('gitdir: '.length)) : join(dir, '.git');
}

/** The checkout's HEAD when it is a commit id (detached), else null. */
export async function detachedHead(dir: string): Promise<string | null> {
  try {
    const head = (await readFile(join(await gitDirOf(dir), 'HEAD'), 'utf8')).trim();
    return /^[0-9a-f]{40}([0-9a-f]{24})?$/.test(head) ? head : null;
  } catch {
    return null;
  }
}

/**
 * True while an `index.lock` is there: a git a crash killed left it, and it would break the next
 * git that writes the index. Only a walked reset's `checkout` finds and reports it.
 */
export async function indexLocked(dir: string): Promise<boolean> {
  return lstat(join(await gitDirOf(dir), 'index.lock')).then(
    () => true,
    () => false,
  );
}
