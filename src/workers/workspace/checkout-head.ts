/**
 * A warm checkout's git state read from its files, and its HEAD moved, without starting git.
 * Synchronous file calls, like the rest of the in-process git plumbing: a few small local files,
 * where a thread-pool round trip costs the host ten times the call itself (docs/ARCHITECTURE.md,
 * "Synchronous git files").
 */
import { type BigIntStats, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { lstatOrNull, readTextOr, storedIn } from './git-files.js';
import { inProcessGit } from './git-mode.js';
import { isObjectId } from './ref-files.js';

/** The checkout's own git folder (a worktree's `.git` file names it). */
export function gitDirOf(dir: string): string {
  const link = readTextOr(join(dir, '.git'), '').trim();
  return link.startsWith('gitdir: ') ? resolve(dir, link.slice('gitdir: '.length)) : join(dir, '.git');
}

/** What the checkout's HEAD file holds: a commit id (detached), a symbolic ref, or null (unreadable). */
function readHead(dir: string): string | null {
  return readTextOr(join(gitDirOf(dir), 'HEAD'), null)?.trim() ?? null;
}

/** The checkout's HEAD when it is a commit id (detached), else null. */
export function detachedHead(dir: string): string | null {
  const head = readHead(dir);
  return head !== null && isObjectId(head) ? head : null;
}

/**
 * The branch the checkout's HEAD is attached to (`refs/heads/…`), else null. flotilla's checkouts
 * are always detached, so such a branch is one an agent made and switched to (`git checkout -b`).
 */
export function attachedBranch(dir: string): string | null {
  const ref = readHead(dir)?.match(/^ref: (refs\/heads\/.+)$/)?.[1];
  return ref ?? null;
}

/** True when something (a file, a folder, a link) is at `path`. */
function present(path: string): boolean {
  return lstatOrNull(path) !== null;
}

/**
 * The checkout's index file as it is now (inode, size, modification and change times to the
 * nanosecond), or null when it has none. git writes the index whole into a new file renamed into
 * place, and an in-place write changes its change time, which no program can set back.
 */
export function indexStamp(dir: string): string | null {
  let info: BigIntStats | undefined;
  try {
    info = statSync(join(gitDirOf(dir), 'index'), { bigint: true, throwIfNoEntry: false });
  } catch {
    info = undefined;
  }
  return info ? `${info.ino}:${info.size}:${info.mtimeNs}:${info.ctimeNs}` : null;
}

/**
 * True while an `index.lock` is there: a git a crash killed left it, and it would break the next
 * git that writes the index. Only a walked reset's `checkout` finds and reports it.
 */
export function indexLocked(dir: string): boolean {
  return present(join(gitDirOf(dir), 'index.lock'));
}

/** The git directory a worktree shares with its repository (its `commondir` file names it). */
export function commonDirOf(gitDir: string): string {
  const common = readTextOr(join(gitDir, 'commondir'), '').trim();
  return common === '' ? gitDir : resolve(gitDir, common);
}

/**
 * The object folders git reads for the checkout whose git folder is `gitDir`: its repository's
 * own and the ones it borrows from (`objects/info/alternates`, one level, as flotilla sets them).
 */
export function objectStoresOf(gitDir: string): string[] {
  const objects = join(commonDirOf(gitDir), 'objects');
  const alternates = readTextOr(join(objects, 'info', 'alternates'), '')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => (isAbsolute(line) ? line : resolve(objects, line)));
  return [objects, ...alternates];
}

/** objectStoresOf() for the checkout at `dir`. */
export function objectStores(dir: string): string[] {
  return objectStoresOf(gitDirOf(dir));
}

/**
 * Points the checkout's HEAD at `commit`, detached, as `git update-ref --no-deref HEAD` does (a
 * lock file renamed into place; the checkout's reflog is not kept), when the checkout can see the
 * commit in its object store or one it borrows from, loose or in a pack the in-process reader
 * finds (an attempt's commits, the gate's merges). False, with nothing changed, when it cannot
 * tell or the lock is taken: the caller then runs git, which refuses a commit it cannot see.
 */
export function writeDetachedHead(dir: string, commit: string): boolean {
  if (!isObjectId(commit) || !inProcessGit()) return false;
  const gitDir = gitDirOf(dir);
  // A reftable repository (git ≥ 2.45) keeps HEAD in its tables: the file would be ignored.
  if (present(join(commonDirOf(gitDir), 'reftable'))) return false;
  if (!storedIn(objectStoresOf(gitDir), commit)) return false;
  const lock = join(gitDir, 'HEAD.lock');
  try {
    writeFileSync(lock, `${commit}\n`, { flag: 'wx' });
  } catch {
    return false;
  }
  try {
    renameSync(lock, join(gitDir, 'HEAD'));
    return true;
  } catch {
    rmSync(lock, { force: true });
    return false;
  }
}

/**
 * What an agent can leave in its checkout's own git folder that a reset (`clean` and `checkout
 * --force`) keeps, each making a later attempt's tree or git differ from a fresh checkout's: a
 * sparse checkout (`git sparse-checkout set`: files outside its patterns stay missing), a config
 * of the worktree's own, an operation in progress (a merge, rebase, cherry-pick, revert, bisect).
 * Submodules initialised in the checkout (`modules/`) are not among them: a setup command may
 * populate them on purpose, to be kept like its other outputs.
 */
const LEFT_GIT_STATE = [
  'info/sparse-checkout',
  'config.worktree',
  'MERGE_HEAD',
  'CHERRY_PICK_HEAD',
  'REVERT_HEAD',
  'BISECT_LOG',
  'rebase-merge',
  'rebase-apply',
  'sequencer',
] as const;

/**
 * The first of LEFT_GIT_STATE in the checkout's git folder, or null: a checkout holding one is
 * discarded rather than reset (a stat each, no git).
 */
export function leftGitState(dir: string): string | null {
  const gitDir = gitDirOf(dir);
  return LEFT_GIT_STATE.find((name) => present(join(gitDir, name))) ?? null;
}
