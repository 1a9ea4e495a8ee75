/**
 * Warm checkouts with a file-system monitor (shared/watchman.ts, opt-in): a reset and an attempt's
 * listing look only at the paths the monitor saw change since the checkout was last clean, and at
 * where the index moved; whenever the monitor cannot say, callers walk (warm-checkout.ts).
 */
import { lstat, mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { detachedHead, indexLocked, indexStamp, writeDetachedHead } from './checkout-head.js';
import { fileMonitor, monitorFor } from './file-monitor.js';
import { FEW_PATHS, literalPathspec, runGit } from './git.js';
import { type LooseReader, looseKinds, looseReader, treeChanges, treeEntriesAt } from './loose-trees.js';
import {
  ancestorsOf,
  type Candidates,
  candidatePaths,
  DISPATCH_FOLDERS,
  MONITORED_PATHS_LIMIT,
  pathsToLook,
  resetPlan,
  withFiles,
} from './monitored-paths.js';
import { inside, restoreInProcess, underLink } from './restore-files.js';
import { type CheckoutState, readCheckoutState } from './setup.js';
import { readWorktree, type WorktreeState } from './snapshot-changes.js';

/** An untracked file that keeps the dispatch folders from going with their last tracked file. */
const FOLDER_HOLDER = `${DISPATCH_FOLDERS.at(-1)}/.flotilla-hold`;

/**
 * Makes the dispatch folders (real folders, never through a link) and puts FOLDER_HOLDER in the
 * deepest, so a checkout that removes the archived PROMPT and RESULT files keeps the folders.
 * False, and nothing made, when something else stands at one of their names.
 */
export async function holdDispatchFolders(dir: string): Promise<boolean> {
  for (const folder of DISPATCH_FOLDERS) {
    const info = await lstat(join(dir, folder)).catch(() => null);
    if (info && !info.isDirectory()) return false;
  }
  try {
    await makeDispatchFolders(dir);
    await writeFile(join(dir, FOLDER_HOLDER), '');
    return true;
  } catch {
    return false;
  }
}

function makeDispatchFolders(dir: string): Promise<unknown> {
  return mkdir(join(dir, DISPATCH_FOLDERS.at(-1) ?? ''), { recursive: true });
}

/** Everything in the dispatch folders goes (FOLDER_HOLDER too), the folders themselves stay. */
export async function emptyDispatchFolders(dir: string): Promise<void> {
  const folders = new Set(DISPATCH_FOLDERS);
  for (const folder of DISPATCH_FOLDERS.slice(1)) {
    const info = await lstat(join(dir, folder)).catch(() => null);
    if (!info?.isDirectory()) continue;
    for (const name of await readdir(join(dir, folder))) {
      const path = `${folder}/${name}`;
      if (!folders.has(path)) await rm(join(dir, path), { recursive: true, force: true });
    }
  }
}

/**
 * What the monitor saw change in `dir` since it was clean; null when it cannot say (walk instead).
 * A folder above a changed path that is a file in one of `commits` (the clean one, the target)
 * counts as changed too: a folder made where a file was, which the monitor may not name.
 */
async function changedSinceClean(
  dir: string,
  clean: NonNullable<CheckoutState['clean']>,
  keep: readonly string[],
  commits: readonly string[],
  reader: () => Promise<LooseReader>,
): Promise<(Candidates & { readonly clock: string }) | null> {
  const monitor = await fileMonitor();
  const answer = monitor ? await monitor.changedSince(dir, clean.clock) : null;
  const candidates = answer ? candidatePaths(answer.changes, keep) : null;
  if (!answer || !candidates) return null;
  const ancestors = ancestorsOf(candidates);
  if (ancestors.length === 0) return { ...candidates, clock: answer.clock };
  if (ancestors.some((path) => path.includes('\n'))) return null;
  const files = new Set<string>();
  for (const commit of commits) {
    for (const path of await filesAmong(dir, commit, ancestors, reader)) files.add(path);
  }
  return { ...withFiles(candidates, [...files]), clock: answer.clock };
}

/** Those of `paths` that `commit` holds as something other than a folder (a file, a link). */
async function filesAmong(
  dir: string,
  commit: string,
  paths: readonly string[],
  reader: () => Promise<LooseReader>,
): Promise<string[]> {
  const kinds = await looseKinds(await reader(), commit, paths);
  if (kinds) return paths.filter((_, i) => kinds[i] === 'other');
  const { stdout } = await runGit(['cat-file', '--batch-check=%(objecttype)'], {
    cwd: dir,
    input: `${paths.map((path) => `${commit}:${path}`).join('\n')}\n`,
  });
  const types = stdout.split('\n');
  return paths.filter((_, i) => types[i] !== 'tree' && !types[i]?.endsWith(' missing'));
}

/**
 * Paths where the checkout's index differs from `commit` (staged by flotilla's commit, or by the
 * agent). While the index is as `known` recorded it, two trees are compared in-process, only
 * where they differ (none at all when `known` is at `commit`); else git reads the whole index.
 */
async function indexDiffers(
  dir: string,
  commit: string,
  known: CheckoutState['index'],
  reader: () => Promise<LooseReader>,
): Promise<string[]> {
  if (known && known.stamp === indexStamp(dir)) {
    if (known.commit === commit) return [];
    const paths = await treeChanges(await reader(), known.commit, commit, MONITORED_PATHS_LIMIT);
    if (paths) return paths;
  }
  const { stdout } = await runGit(['diff-index', '--cached', '--name-only', '-z', '--no-renames', commit], {
    cwd: dir,
    env: { GIT_OPTIONAL_LOCKS: '0' },
  });
  return stdout.split('\0').filter(Boolean);
}

/**
 * The reset by what changed: every changed path, and every path where the index differs from
 * `commit`, is made as `commit` has it (deleted when it has none); the rest of the tree is as it
 * was when clean, at a commit whose differences from `commit` the index diff lists. The paths are
 * restored in-process where they can be (restore-files.ts), else by one `git restore`: work that
 * follows the change, against two walks of the whole tree. The monitor's clock
 * from before the reset's writes (the new clean record); null (and the caller walks) when the
 * monitor cannot say, or anything fails half-way.
 */
export async function resetChanged(
  dir: string,
  commit: string,
  keep: readonly string[],
  clean: NonNullable<CheckoutState['clean']>,
  index?: CheckoutState['index'],
): Promise<string | null> {
  try {
    // A lock a killed git left would break the next attempt's git: the walk's checkout finds it.
    if (indexLocked(dir)) return null;
    const reader = once(() => looseReader(dir));
    const candidates = await changedSinceClean(dir, clean, keep, [clean.commit, commit], reader);
    if (!candidates) return null;
    const indexDiff = await indexDiffers(dir, commit, index, reader);
    const lookup = pathsToLook(candidates, indexDiff);
    if (lookup.length > MONITORED_PATHS_LIMIT) return null;
    const target =
      lookup.length === 0
        ? []
        : await treeEntriesAt(dir, await reader(), commit, lookup, MONITORED_PATHS_LIMIT * 8);
    const plan = resetPlan(candidates, indexDiff, target, DISPATCH_FOLDERS);
    // A link standing for a folder above a path would take the removal outside the checkout (an
    // attempt that moved a folder away and linked to it): the walk removes the link itself.
    if (underLink(resolve(dir), [...plan.remove, ...plan.removeUnlessDir, ...plan.restore])) return null;
    for (const path of plan.remove) await removePath(inside(dir, path));
    for (const path of plan.removeUnlessDir) {
      const info = await lstat(inside(dir, path)).catch(() => null);
      if (info && !info.isDirectory()) await removePath(inside(dir, path));
    }
    const restored =
      plan.restore.length === 0 || (await restoreInProcess(dir, plan.restore, target, await reader()));
    if (!restored) {
      await runGit(
        [
          ...FEW_PATHS,
          'restore',
          `--source=${commit}`,
          '--staged',
          '--worktree',
          '--pathspec-from-file=-',
          '--pathspec-file-nul',
        ],
        { cwd: dir, input: `${plan.restore.map(literalPathspec).join('\0')}\0` },
      );
    }
    // HEAD written as a file where the checkout sees the commit loose (a merge the gate made),
    // else git moves it.
    if (!writeDetachedHead(dir, commit)) {
      await runGit(['update-ref', '--no-deref', 'HEAD', commit], { cwd: dir });
    }
    return candidates.clock;
  } catch {
    return null;
  }
}

/** Deletes a file or folder; one already gone, or below a path that is now a file, is fine. */
async function removePath(full: string): Promise<void> {
  await rm(full, { recursive: true, force: true }).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'ENOTDIR') throw error;
  });
}

/**
 * The monitor's clock for a checkout clean at `commit` now, to record in its state; none without
 * one. flotilla's dispatch folders are made first, so the monitor has them before any file does.
 * `clock`: one the caller already has (a monitored reset's), so no question is asked.
 */
export async function cleanMark(
  dir: string,
  commit: string,
  options: { readonly settle?: boolean; readonly clock?: string } = {},
): Promise<Pick<CheckoutState, 'clean' | 'index'>> {
  const monitor = options.clock ? null : await monitorFor(dir);
  if (options.clock || monitor) await makeDispatchFolders(dir).catch(() => undefined);
  const clock = options.clock ?? (monitor ? await monitor.clock(dir, options) : null);
  if (!clock) return {};
  return { clean: { clock, commit }, ...(await indexMark(dir, commit)) };
}

/** The index's stamp, for a caller that knows the index holds `commit`'s tree now. */
export async function indexMark(dir: string, commit: string): Promise<Pick<CheckoutState, 'index'>> {
  const stamp = indexStamp(dir);
  return stamp ? { index: { commit, stamp } } : {};
}

/**
 * readWorktree() by the monitor's changed paths alone; null when it cannot say. The record counts
 * only while HEAD is still the commit it was clean at (an agent that committed or switched
 * branches gets the walk). Setup's kept outputs are not looked at, so they are not among the
 * ignored entries either (nothing acts on them: claimCleanup() keeps them).
 */
export async function monitoredWorktree(dir: string): Promise<WorktreeState | null> {
  const state = readCheckoutState(`${dir}.json`);
  const clean = state.clean;
  if (!clean || detachedHead(dir) !== clean.commit) return null;
  const reader = once(() => looseReader(dir));
  const candidates = await changedSinceClean(
    dir,
    clean,
    state.setup?.keep ?? [],
    [clean.commit],
    reader,
  ).catch(() => null);
  if (!candidates) return null;
  const indexDiff = await indexDiffers(dir, clean.commit, state.index, reader);
  const paths = pathsToLook(candidates, indexDiff);
  if (paths.length === 0) return { head: clean.commit, changes: [], ignored: [] };
  return paths.length <= MONITORED_PATHS_LIMIT ? readWorktree(dir, { only: paths }) : null;
}

/** `make()`'s promise, made on the first call only. */
function once<T>(make: () => Promise<T>): () => Promise<T> {
  let made: Promise<T> | undefined;
  return () => {
    made ??= make();
    return made;
  };
}
