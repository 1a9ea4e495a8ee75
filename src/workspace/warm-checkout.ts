/**
 * Getting a warm checkout ready for one stage of an attempt: reset to a commit incrementally (git
 * rewrites only the files that differ), clean what earlier attempts left (setup's ignored outputs
 * excepted), then run setup when its inputs changed. A checkout whose reset fails is discarded and
 * another one is taken, so nothing an earlier attempt wrote is ever seen by a later one.
 */
import { lstat, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileMonitor } from '../shared/watchman.js';
import type { CheckoutLease, CheckoutPool } from './checkout-pool.js';
import { runGit } from './git.js';
import {
  ancestorsOf,
  type Candidates,
  candidatePaths,
  DISPATCH_FOLDERS,
  MONITORED_PATHS_LIMIT,
  parseLsTree,
  pathsToLook,
  resetPlan,
  withFiles,
} from './monitored-paths.js';
import {
  type CheckoutState,
  claimCleanup,
  commandsKey,
  ignoredEntries,
  inputsKey,
  readCheckoutState,
  type SetupSpec,
  setupOutputs,
  writeCheckoutState,
} from './setup.js';
import { literalPathspec, readWorktree, type WorktreeState } from './snapshot-changes.js';

/**
 * Checks `commit` out (detached) and removes every untracked file but `keep`'s. Throws on failure.
 * With a monitor's record of when the checkout was last clean, only the paths that changed since
 * and the paths where the index differs from `commit` are put back (resetChanged()); without one,
 * or when that fails, git walks the whole tree: `checkout --force`, then `clean`.
 */
export async function resetCheckout(
  dir: string,
  commit: string,
  keep: readonly string[],
  clean?: CheckoutState['clean'],
): Promise<ResetOutcome> {
  const clock = clean ? await resetChanged(dir, commit, keep, clean) : null;
  if (clock) return { how: 'changed-paths', clock };
  // With a monitor the dispatch folders stay (emptied), as in resetChanged(): Watchman 4.9 answers
  // the deletion of a folder with a crawl of the folder above it, the whole tree for `.planning`.
  const holding = (await fileMonitor()) !== null && (await holdDispatchFolders(dir));
  await runGit(['checkout', '--quiet', '--force', '--detach', commit], { cwd: dir });
  await cleanCheckout(dir, holding ? [...keep, `/${DISPATCH_FOLDERS[1]}/`] : keep);
  if (holding) await emptyDispatchFolders(dir);
  return { how: 'whole-tree' };
}

/** An untracked file that keeps the dispatch folders from going with their last tracked file. */
const FOLDER_HOLDER = `${DISPATCH_FOLDERS.at(-1)}/.flotilla-hold`;

/**
 * Makes the dispatch folders (real folders, never through a link) and puts FOLDER_HOLDER in the
 * deepest, so a checkout that removes the archived PROMPT and RESULT files keeps the folders.
 * False, and nothing made, when something else stands at one of their names.
 */
async function holdDispatchFolders(dir: string): Promise<boolean> {
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
async function emptyDispatchFolders(dir: string): Promise<void> {
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

export interface ResetOutcome {
  readonly how: 'changed-paths' | 'whole-tree';
  /**
   * After a reset by the monitor's changed paths: the monitor's clock from before the reset's
   * own writes, the checkout's new clean record (they count as changed since, which costs a
   * path more to look at, never one too few).
   */
  readonly clock?: string;
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
): Promise<(Candidates & { readonly clock: string }) | null> {
  const monitor = await fileMonitor();
  const answer = monitor ? await monitor.changedSince(dir, clean.clock) : null;
  const candidates = answer ? candidatePaths(answer.changes, keep) : null;
  if (!answer || !candidates) return null;
  const ancestors = ancestorsOf(candidates);
  if (ancestors.length === 0) return { ...candidates, clock: answer.clock };
  if (ancestors.some((path) => path.includes('\n'))) return null;
  const queries = commits.flatMap((commit) => ancestors.map((path) => `${commit}:${path}`));
  const { stdout } = await runGit(['cat-file', '--batch-check=%(objecttype)'], {
    cwd: dir,
    input: `${queries.join('\n')}\n`,
  });
  const types = stdout.split('\n');
  const files = queries
    .map((_, i) =>
      types[i] !== 'tree' && !types[i]?.endsWith(' missing') ? ancestors[i % ancestors.length] : '',
    )
    .filter((path): path is string => Boolean(path));
  return { ...withFiles(candidates, files), clock: answer.clock };
}

/** Paths where the checkout's index differs from `commit` (staged by flotilla's commit, or by the agent). */
async function indexDiffers(dir: string, commit: string): Promise<string[]> {
  const { stdout } = await runGit(['diff-index', '--cached', '--name-only', '-z', '--no-renames', commit], {
    cwd: dir,
    env: { GIT_OPTIONAL_LOCKS: '0' },
  });
  return stdout.split('\0').filter(Boolean);
}

/**
 * The reset by what changed: every changed path, and every path where the index differs from
 * `commit`, is made as `commit` has it (deleted when it has none); the rest of the tree is as it
 * was when clean, at a commit whose differences from `commit` the index diff lists. Four git
 * processes whose work follows the change, against two walks of the whole tree. The monitor's clock
 * from before the reset's writes (the new clean record); null (and the caller walks) when the
 * monitor cannot say, or anything fails half-way.
 */
async function resetChanged(
  dir: string,
  commit: string,
  keep: readonly string[],
  clean: NonNullable<CheckoutState['clean']>,
): Promise<string | null> {
  try {
    // A lock a killed git left would break the next attempt's git: the walk's checkout finds it.
    if (await exists(join(await gitDirOf(dir), 'index.lock'))) return null;
    const candidates = await changedSinceClean(dir, clean, keep, [clean.commit, commit]);
    if (!candidates) return null;
    const indexDiff = await indexDiffers(dir, commit);
    const lookup = pathsToLook(candidates, indexDiff);
    if (lookup.length > MONITORED_PATHS_LIMIT) return null;
    const target =
      lookup.length === 0
        ? []
        : parseLsTree(
            (
              await runGit(
                ['ls-tree', '-r', '-z', '--full-tree', commit, '--', ...lookup.map(literalPathspec)],
                { cwd: dir },
              )
            ).stdout,
          );
    const plan = resetPlan(candidates, indexDiff, target, DISPATCH_FOLDERS);
    for (const path of plan.remove) await removePath(inside(dir, path));
    for (const path of plan.removeUnlessDir) {
      const info = await lstat(inside(dir, path)).catch(() => null);
      if (info && !info.isDirectory()) await removePath(inside(dir, path));
    }
    if (plan.restore.length > 0) {
      await runGit(
        [
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
    await runGit(['update-ref', '--no-deref', 'HEAD', commit], { cwd: dir });
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

/** `dir/path`, refusing a path that would leave `dir` (a monitor's names never do; be sure). */
function inside(dir: string, path: string): string {
  const full = resolve(dir, path);
  if (!full.startsWith(`${resolve(dir)}/`)) throw new Error(`${path}: outside the checkout`);
  return full;
}

/**
 * The monitor's clock for a checkout clean at `commit` now, to record in its state; none without
 * one. flotilla's dispatch folders are made first, so the monitor has them before any file does.
 * `clock`: one the caller already has (a monitored reset's), so no question is asked.
 */
async function cleanMark(
  dir: string,
  commit: string,
  options: { readonly settle?: boolean; readonly clock?: string } = {},
): Promise<Pick<CheckoutState, 'clean'>> {
  const monitor = options.clock ? null : await fileMonitor();
  if (options.clock || monitor) await makeDispatchFolders(dir).catch(() => undefined);
  const clock = options.clock ?? (monitor ? await monitor.clock(dir, options) : null);
  return clock ? { clean: { clock, commit } } : {};
}

/** The checkout's own git folder (a worktree's `.git` file names it); read without git. */
async function gitDirOf(dir: string): Promise<string> {
  const link = (await readFile(join(dir, '.git'), 'utf8').catch(() => '')).trim();
  return link.startsWith('gitdir: ') ? resolve(dir, link.slice('gitdir: '.length)) : join(dir, '.git');
}

function exists(path: string): Promise<boolean> {
  return lstat(path).then(
    () => true,
    () => false,
  );
}

/** The checkout's HEAD when it is a commit id (detached), else null; read without git. */
async function detachedHead(dir: string): Promise<string | null> {
  try {
    const head = (await readFile(join(await gitDirOf(dir), 'HEAD'), 'utf8')).trim();
    return /^[0-9a-f]{40}([0-9a-f]{24})?$/.test(head) ? head : null;
  } catch {
    return null;
  }
}

/**
 * The leased checkout as `git status` sees it (readWorktree()): with a monitor's record of when it
 * was clean, git looks only at what changed since and where the index moved (monitoredWorktree());
 * else it walks.
 */
export async function readLeasedWorktree(dir: string): Promise<WorktreeState> {
  return (await monitoredWorktree(dir)) ?? readWorktree(dir);
}

/**
 * readWorktree() by the monitor's changed paths alone; null when it cannot say. The record counts
 * only while HEAD is still the commit it was clean at (an agent that committed or switched
 * branches gets the walk). Setup's kept outputs are not looked at, so they are not among the
 * ignored entries either (nothing acts on them: claimCleanup() keeps them).
 */
export async function monitoredWorktree(dir: string): Promise<WorktreeState | null> {
  const state = await readCheckoutState(`${dir}.json`);
  const clean = state.clean;
  if (!clean || (await detachedHead(dir)) !== clean.commit) return null;
  const candidates = await changedSinceClean(dir, clean, state.setup?.keep ?? [], [clean.commit]).catch(
    () => null,
  );
  if (!candidates) return null;
  const indexDiff = await indexDiffers(dir, clean.commit);
  const paths = pathsToLook(candidates, indexDiff);
  if (paths.length === 0) return { head: clean.commit, changes: [], ignored: [] };
  return paths.length <= MONITORED_PATHS_LIMIT ? readWorktree(dir, paths) : null;
}

/** Removes every untracked file, ignored ones too, except the `keep` patterns (setup's outputs). */
async function cleanCheckout(dir: string, keep: readonly string[]): Promise<void> {
  // -x: ignored files go too, except the -e patterns, which -x still honours.
  const excludes = keep.flatMap((pattern) => ['-e', pattern]);
  await runGit(['clean', '-ffdxq', ...excludes], { cwd: dir });
}

/**
 * A checkout handed on from the run stage holds what the run committed, and also whatever the
 * agent left that git ignores (a build output, a file a `.gitignore` rule covers). The criteria
 * must see what a fresh checkout of the pushed commit holds, as on any other host, so those go:
 * by the run's own listing when it left one for this commit (no git at all), else one `git clean`;
 * no fetch, no checkout. A failure discards the checkout (the caller falls back).
 */
export async function cleanClaimed(
  lease: CheckoutLease,
  commit: string,
  setup: SetupSpec | undefined,
): Promise<boolean> {
  try {
    const state = await readCheckoutState(stateFile(lease));
    const sameSetup = setup && state.setup?.commandsKey === commandsKey(setup);
    const keep = sameSetup ? (state.setup?.keep ?? []) : [];
    const plan = state.left?.commit === commit ? claimCleanup(state.left.ignored, keep) : undefined;
    if (plan?.kind === 'remove') {
      for (const path of plan.paths) await rm(join(lease.dir, path), { recursive: true, force: true });
    } else if (plan?.kind !== 'none') {
      await cleanCheckout(lease.dir, keep);
    }
    return true;
  } catch {
    await lease.release({ healthy: false });
    return false;
  }
}

/**
 * Records what git ignored in the run's checkout at the commit it published (see cleanClaimed);
 * best effort: without it the claim cleans with git.
 */
export async function noteLeftIgnored(
  dir: string,
  commit: string,
  ignored: readonly string[],
): Promise<void> {
  const file = `${dir}.json`;
  const state = await readCheckoutState(file);
  await writeCheckoutState(file, { ...state, left: { commit, ignored } }).catch(() => undefined);
}

function stateFile(lease: CheckoutLease): string {
  return `${lease.dir}.json`;
}

/**
 * A leased checkout at `commit`, clean: the pool's, reset; a failed reset discards that checkout
 * and tries the next (a new one at worst, which starts clean).
 */
export async function leaseCheckout(
  pool: CheckoutPool,
  commit: string,
  setup: SetupSpec | undefined,
  signal?: AbortSignal,
): Promise<CheckoutLease> {
  for (let tries = 0; ; tries++) {
    const lease = await pool.acquire(commit, signal);
    if (lease.fresh) {
      // A new checkout: the monitor's first crawl of it is waited for here, once.
      await writeCheckoutState(stateFile(lease), await cleanMark(lease.dir, commit, { settle: true })).catch(
        () => undefined,
      );
      return lease;
    }
    try {
      const state = await readCheckoutState(stateFile(lease));
      const sameSetup = setup && state.setup?.commandsKey === commandsKey(setup);
      // The record of the clean checkout holds setup's outputs; other commands must lose them: a walk.
      const clean = sameSetup || !state.setup ? state.clean : undefined;
      const reset = await resetCheckout(lease.dir, commit, sameSetup ? (state.setup?.keep ?? []) : [], clean);
      // What the last run left is gone with the reset; setup's record stays only for the same setup.
      await writeCheckoutState(stateFile(lease), {
        ...(sameSetup && state.setup ? { setup: state.setup } : {}),
        ...(await cleanMark(lease.dir, commit, reset.clock ? { clock: reset.clock } : {})),
      });
      return lease;
    } catch (error) {
      await lease.release({ healthy: false });
      if (tries >= 2) throw error;
    }
  }
}

export interface SetupFailure {
  readonly command: string;
  readonly exitCode: number | null;
  readonly timedOut: boolean;
  readonly tail: string;
}

export interface SetupOutcome {
  /** False when the checkout's setup was current already. */
  readonly ran: boolean;
  readonly failure?: SetupFailure;
  /** Every command's output, for the audit trail. */
  readonly log: string;
}

/** How one setup command ended; the stage runs it (`bash -c`, timeout, cancel), this layer decides. */
export interface CommandOutcome {
  readonly exitCode: number | null;
  readonly timedOut: boolean;
  readonly output: string;
}

export interface EnsureSetupOptions {
  readonly lease: CheckoutLease;
  /** The commit checked out (HEAD): its inputs are hashed. */
  readonly commit: string;
  readonly setup: SetupSpec | undefined;
  readonly runCommand: (command: string, cwd: string) => Promise<CommandOutcome>;
}

function tail(text: string, maxChars: number): string {
  return text.length <= maxChars ? text : `…${text.slice(-maxChars)}`;
}

/** Runs setup unless this checkout ran the same setup on the same inputs already. */
export async function ensureSetup(options: EnsureSetupOptions): Promise<SetupOutcome> {
  const { lease, setup } = options;
  if (!setup || setup.commands.length === 0) return { ran: false, log: '' };
  const file = stateFile(lease);
  const state: CheckoutState = await readCheckoutState(file);
  const key = await inputsKey(lease.dir, options.commit, setup);
  if (state.setup?.inputsKey === key) return { ran: false, log: '' };
  const keptEarlier = state.setup?.commandsKey === commandsKey(setup) ? state.setup.keep : [];
  const before = await ignoredEntries(lease.dir);
  // Until setup succeeds, the checkout has no valid setup: a crash here means a full re-run.
  await writeCheckoutState(file, {});
  const log: string[] = [];
  for (const command of setup.commands) {
    const outcome = await options.runCommand(command, lease.dir);
    const output = outcome.output;
    log.push(
      `$ ${command}\n# exit ${outcome.exitCode ?? 'none'}${outcome.timedOut ? ' (timed out)' : ''}\n${tail(output, 4_000)}`,
    );
    if (outcome.exitCode !== 0 || outcome.timedOut) {
      return {
        ran: true,
        log: log.join('\n'),
        failure: {
          command,
          exitCode: outcome.exitCode,
          timedOut: outcome.timedOut,
          tail: tail(output, 1_500),
        },
      };
    }
  }
  const keep = setupOutputs(before, await ignoredEntries(lease.dir), keptEarlier);
  // Clean again, setup's outputs included: the monitor's record starts after them.
  await writeCheckoutState(file, {
    setup: { commandsKey: commandsKey(setup), inputsKey: key, keep },
    ...(await cleanMark(lease.dir, options.commit)),
  });
  return { ran: true, log: log.join('\n') };
}

/** `setup failed: $ npm ci (exit 1)` and the output's tail: the error a failed setup gives an attempt. */
export function describeSetupFailure(failure: SetupFailure): string {
  const how = failure.timedOut ? 'timed out' : `exit ${failure.exitCode ?? 'by signal'}`;
  return `setup failed: $ ${failure.command} (${how})\n${failure.tail}`.trim();
}
