/** A warm checkout's git state read from its files, and its HEAD moved, without starting git. */
import { lstat, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { isAbsolute, join, resolve } from 'node:path';
import { isObjectId } from './ref-files.js';

/** The checkout's own git folder (a worktree's `.git` file names it). */
export async function gitDirOf(dir: string): Promise<string> {
  const link = (await readFile(join(dir, '.git'), 'utf8').catch(() => '')).trim();
  return link.startsWith('gitdir: ') ? resolve(dir, link.slice('gitdir: '.length)) : join(dir, '.git');
}

/** What the checkout's HEAD file holds: a commit id (detached), a symbolic ref, or null (unreadable). */
async function readHead(dir: string): Promise<string | null> {
  return readFile(join(await gitDirOf(dir), 'HEAD'), 'utf8').then(
    (text) => text.trim(),
    () => null,
  );
}

/** The checkout's HEAD when it is a commit id (detached), else null. */
export async function detachedHead(dir: string): Promise<string | null> {
  const head = await readHead(dir);
  return head !== null && isObjectId(head) ? head : null;
}

/**
 * The branch the checkout's HEAD is attached to (`refs/heads/…`), else null. flotilla's checkouts
 * are always detached, so such a branch is one an agent made and switched to (`git checkout -b`).
 */
export async function attachedBranch(dir: string): Promise<string | null> {
  const ref = (await readHead(dir))?.match(/^ref: (refs\/heads\/.+)$/)?.[1];
  return ref ?? null;
}

/** True when something (a file, a folder, a link) is at `path`. */
function present(path: string): Promise<boolean> {
  return lstat(path).then(
    () => true,
    () => false,
  );
}

/**
 * The checkout's index file as it is now (inode, size, modification and change times to the
 * nanosecond), or null when it has none. git writes the index whole into a new file renamed into
 * place, and an in-place write changes its change time, which no program can set back.
 */
export async function indexStamp(dir: string): Promise<string | null> {
  const info = await stat(join(await gitDirOf(dir), 'index'), { bigint: true }).catch(() => null);
  return info ? `${info.ino}:${info.size}:${info.mtimeNs}:${info.ctimeNs}` : null;
}

/**
 * True while an `index.lock` is there: a git a crash killed left it, and it would break the next
 * git that writes the index. Only a walked reset's `checkout` finds and reports it.
 */
export async function indexLocked(dir: string): Promise<boolean> {
  return present(join(await gitDirOf(dir), 'index.lock'));
}

/** The git directory a worktree shares with its repository (its `commondir` file names it). */
async function commonDirOf(gitDir: string): Promise<string> {
  const common = (await readFile(join(gitDir, 'commondir'), 'utf8').catch(() => '')).trim();
  return common === '' ? gitDir : resolve(gitDir, common);
}

/**
 * The object folders git reads for the checkout whose git folder is `gitDir`: its repository's
 * own and the ones it borrows from (`objects/info/alternates`, one level, as flotilla sets them).
 */
export async function objectStoresOf(gitDir: string): Promise<string[]> {
  const objects = join(await commonDirOf(gitDir), 'objects');
  const alternates = (await readFile(join(objects, 'info', 'alternates'), 'utf8').catch(() => ''))
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => (isAbsolute(line) ? line : resolve(objects, line)));
  return [objects, ...alternates];
}

/** objectStoresOf() for the checkout at `dir`. */
export async function objectStores(dir: string): Promise<string[]> {
  return objectStoresOf(await gitDirOf(dir));
}

/**
 * True when `id` is a loose object in the checkout's object store or one it borrows from: what a
 * small `fast-import` into the mission repo leaves. A packed object answers false, and the caller
 * asks git.
 */
async function looseObjectVisible(gitDir: string, id: string): Promise<boolean> {
  for (const dir of await objectStoresOf(gitDir)) {
    const found = await lstat(join(dir, id.slice(0, 2), id.slice(2))).then(
      (info) => info.isFile(),
      () => false,
    );
    if (found) return true;
  }
  return false;
}

/**
 * Points the checkout's HEAD at `commit`, detached, as `git update-ref --no-deref HEAD` does (a
 * lock file renamed into place; the checkout's reflog is not kept), when the checkout can see the
 * commit as a loose object. False, with nothing changed, when it cannot tell or the lock is taken:
 * the caller then runs git, which refuses a commit it cannot see.
 */
export async function writeDetachedHead(dir: string, commit: string): Promise<boolean> {
  if (!isObjectId(commit)) return false;
  const gitDir = await gitDirOf(dir);
  // A reftable repository (git ≥ 2.45) keeps HEAD in its tables: the file would be ignored.
  if (await present(join(await commonDirOf(gitDir), 'reftable'))) return false;
  if (!(await looseObjectVisible(gitDir, commit))) return false;
  const lock = join(gitDir, 'HEAD.lock');
  try {
    await writeFile(lock, `${commit}\n`, { flag: 'wx' });
  } catch {
    return false;
  }
  try {
    await rename(lock, join(gitDir, 'HEAD'));
    return true;
  } catch {
    await rm(lock, { force: true });
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
export async function leftGitState(dir: string): Promise<string | null> {
  const gitDir = await gitDirOf(dir);
  for (const name of LEFT_GIT_STATE) if (await present(join(gitDir, name))) return name;
  return null;
}
