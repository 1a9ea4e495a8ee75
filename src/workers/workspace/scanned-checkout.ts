/**
 * Warm checkouts of a large tree without a file-system monitor: an attempt's listing and the next
 * lease's reset find what git does not track from the directories that changed since the checkout
 * was clean (dir-record.ts), and leave git one walk of its own: the `lstat` of every tracked file
 * that finds the ones edited in place, which no directory shows. Against the walks of
 * warm-checkout.ts, a task saves git's read of every directory with its ignore rules twice: half
 * of the listing's `git status` and the whole of the reset's `git clean`.
 */
import { readdir, rmdir } from 'node:fs/promises';
import { join } from 'node:path';
import { detachedHead } from './checkout-head.js';
import { type LoadedRecord, readDirRecord, recordDirs, rerecord, scanChanges } from './dir-record.js';
import { cleanPlan, parentOf, sameKeep } from './dir-record-rules.js';
import { literalPathspec, runGit } from './git.js';
import { lstatOrNull } from './git-files.js';
import { MONITORED_PATHS_LIMIT } from './monitored-paths.js';
import { readWorktree, type WorktreeState } from './snapshot-changes.js';

/** The checkout's record when it holds for a scan that keeps `keep`; null: walk instead. */
async function scannable(dir: string, keep?: readonly string[]): Promise<LoadedRecord | null> {
  const loaded = await readDirRecord(dir);
  if (loaded?.record.mode !== 'scan') return null;
  if (keep && !sameKeep(loaded.record.keep, keep)) return null;
  return loaded;
}

/**
 * The checkout as one whole-tree `git status` would list it (readWorktree()), from two: the
 * tracked files alone (`-uno`: the `lstat` walk, no directory read), and the changed directories'
 * entries with everything below the new ones, where git says which are untracked and which it
 * ignores. Null when the record does not hold (HEAD is not the commit it was clean at: the agent
 * committed or switched branches), the tree has submodules, or there is too much to look at: the
 * caller walks.
 */
export async function scannedWorktree(dir: string): Promise<WorktreeState | null> {
  const loaded = await scannable(dir);
  if (!loaded || detachedHead(dir) !== loaded.record.commit) return null;
  // `-uno` also hides a submodule's untracked files, which a whole-tree status reports (`S..U`).
  if (lstatOrNull(join(dir, '.gitmodules'))) return null;
  const scan = await scanChanges(dir, loaded);
  if (!scan) return null;
  const tracked = await readWorktree(dir, { untracked: false });
  if (scan.paths.length === 0) return tracked;
  const others = await readWorktree(dir, { only: scan.paths });
  return mergeListings(tracked, others);
}

/**
 * The two listings as one: each path once, as the first listing (the tracked files') has it, so a
 * path both staged for deletion and on disk untracked is the deletion, as in a whole-tree status.
 */
function mergeListings(tracked: WorktreeState, others: WorktreeState): WorktreeState {
  const seen = new Set(tracked.changes.map((change) => change.path));
  return {
    head: tracked.head,
    changes: [...tracked.changes, ...others.changes.filter((change) => !seen.has(change.path))],
    ignored: others.ignored,
  };
}

/**
 * The reset by the record: `git checkout --force` of `commit` puts every tracked file back (its
 * `lstat` walk finds the edited ones), then `git clean` removes what is untracked or ignored among
 * the changed directories' entries and the paths the index had moved off the clean commit (`git rm
 * --cached` leaves an untracked file in a directory that did not change), setup's outputs excepted.
 * The record is then brought up to date with what changed alone. False, with nothing done, when the
 * record does not hold for `keep`; a failure half-way throws (the caller discards the checkout).
 */
export async function scannedReset(dir: string, commit: string, keep: readonly string[]): Promise<boolean> {
  const loaded = await scannable(dir, keep);
  if (!loaded) return false;
  const moved = await runGit(
    ['diff-index', '--cached', '--name-only', '-z', '--no-renames', loaded.record.commit],
    { cwd: dir, env: { GIT_OPTIONAL_LOCKS: '0' } },
  );
  // A lock a killed git left fails this checkout, and the caller discards the checkout.
  await runGit(['checkout', '--quiet', '--force', '--detach', commit], { cwd: dir });
  const unstaged = moved.stdout.split('\0');
  const scan = unstaged.length <= MONITORED_PATHS_LIMIT ? await scanChanges(dir, loaded) : null;
  if (!scan) {
    await cleanAll(dir, keep);
    await recordDirs(dir, commit, keep);
    return true;
  }
  const plan = cleanPlan(scan.paths, scan.changed, unstaged, keep);
  if (plan.paths.length > 0) {
    await runGit(['clean', '-ffdxq', ...excludes(keep), '--', ...plan.paths.map(literalPathspec)], {
      cwd: dir,
    });
  }
  if (scan.replaced.length > 0) {
    // A link where a folder was let the checkout see the tracked files through it, unchanged; the
    // clean just removed the link, so the folder's files go back now.
    await runGit(['checkout', '--quiet', '--force', '--detach', commit], { cwd: dir });
  }
  const touched = [...plan.touched, ...scan.replaced];
  await removeEmptied(dir, touched);
  await rerecord(dir, loaded, scan, commit, touched);
  return true;
}

/**
 * Removes the changed folders the clean left empty, and parents it so empties: a folder the clean
 * commit had and the target has not, into which the attempt wrote. `git checkout` leaves such a
 * folder while something untracked is in it, and `git clean` is only given what is inside. A
 * folder that is a submodule of the target (an index entry of its own) stays, as a fresh checkout
 * makes it.
 */
async function removeEmptied(dir: string, changed: readonly string[]): Promise<void> {
  const isEmpty = async (path: string) => (await readdir(join(dir, path)).catch(() => null))?.length === 0;
  const empty: string[] = [];
  for (const path of changed) if (path !== '' && (await isEmpty(path))) empty.push(path);
  if (empty.length === 0) return;
  const { stdout } = await runGit(['ls-files', '-z', '--', ...empty.map(literalPathspec)], { cwd: dir });
  const tracked = new Set(stdout.split('\0'));
  for (const path of empty.sort().reverse()) {
    for (let folder = path; folder !== '' && !tracked.has(folder) && (await isEmpty(folder)); ) {
      await rmdir(join(dir, folder));
      folder = parentOf(folder);
    }
  }
}

/** `-e` patterns for setup's outputs, which `git clean -x` still honours. */
function excludes(keep: readonly string[]): string[] {
  return keep.flatMap((pattern) => ['-e', pattern]);
}

/** Removes every untracked file, ignored ones too, except setup's outputs: git walks the tree. */
export async function cleanAll(dir: string, keep: readonly string[]): Promise<void> {
  await runGit(['clean', '-ffdxq', ...excludes(keep)], { cwd: dir });
}
