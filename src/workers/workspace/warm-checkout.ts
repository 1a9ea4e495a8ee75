/**
 * Getting a warm checkout ready for one stage of an attempt: reset to a commit incrementally (git
 * rewrites only the files that differ), clean what earlier attempts left (setup's ignored outputs
 * excepted), then run setup when its inputs changed. A checkout whose reset fails is discarded and
 * another one is taken, so nothing an earlier attempt wrote is ever seen by a later one.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { FlotillaError } from '../../shared/errors.js';
import { attachedBranch, leftGitState } from './checkout-head.js';
import type { CheckoutLease, CheckoutPool } from './checkout-pool.js';
import { readDirRecord, recordDirs, removeDirRecord, scanSetting } from './dir-record.js';
import { monitorFor } from './file-monitor.js';
import { literalPathspec, runGit } from './git.js';
import {
  cleanMark,
  emptyDispatchFolders,
  holdDispatchFolders,
  indexMark,
  monitoredWorktree,
  resetChanged,
} from './monitored-checkout.js';
import { DISPATCH_FOLDERS } from './monitored-paths.js';
import { cleanAll, scannedReset, scannedWorktree } from './scanned-checkout.js';
import {
  type CheckoutState,
  claimCleanup,
  commandsKey,
  ignoredEntries,
  inputsKey,
  readCheckoutState,
  type SetupSpec,
  setupOutputs,
  untrackedEntries,
  writeCheckoutState,
} from './setup.js';
import { readWorktree, type WorktreeState } from './snapshot-changes.js';
import { leftUntracked } from './untracked-left.js';

/**
 * Checks `commit` out (detached) and removes every untracked file but `keep`'s. Throws on failure.
 * - With a monitor's record of when the checkout was last clean, only the paths that changed since
 *   and the paths where the index differs from `commit` are put back (monitored-checkout.ts).
 * - Without a monitor, a large tree's record of its directories leaves git one walk, the `lstat`
 *   of the tracked files, and a `git clean` of the changed directories' entries (scanned-checkout.ts).
 * - Otherwise, or when either cannot say, git walks the whole tree: `clean`, then `checkout --force`;
 *   the `clean` only where something is there the index does not track (untracked-left.ts).
 */
export async function resetCheckout(
  dir: string,
  commit: string,
  keep: readonly string[],
  clean?: CheckoutState['clean'],
  index?: CheckoutState['index'],
): Promise<ResetOutcome> {
  const clock = clean ? await resetChanged(dir, commit, keep, clean, index) : null;
  if (clock) return { how: 'changed-paths', clock };
  const monitor = await monitorFor(dir);
  if (!monitor && (await scannedReset(dir, commit, keep))) return { how: 'scanned' };
  // With a monitor the dispatch folders stay (emptied), as in resetChanged(): Watchman 4.9 answers
  // the deletion of a folder with a crawl of the folder above it, the whole tree for `.planning`.
  const holding = monitor !== null && (await holdDispatchFolders(dir));
  // The clean first: a link standing where a folder was (even to that folder, moved away) would
  // show the checkout the tracked files through it, unchanged, and go with the clean after it.
  // A small checkout whose folders hold only what its index tracks has nothing to clean.
  if (holding || leftUntracked(dir, keep)) {
    await cleanAll(dir, holding ? [...keep, `/${DISPATCH_FOLDERS[1]}/`] : keep);
  }
  const checkedOut = await runGit(['checkout', '--quiet', '--force', '--detach', commit], { cwd: dir });
  await cleanLeftRepositories(dir, checkedOut.stderr, keep);
  if (holding) await emptyDispatchFolders(dir);
  await recordWalked(dir, commit, keep, monitor !== null);
  return { how: 'whole-tree' };
}

/**
 * A submodule or nested repository the target lacks is left by `git checkout` ("unable to rmdir
 * 'nested': Directory not empty"): the clean ran while it was still tracked. Left, it would be the
 * next attempt's untracked repository, committed again as a gitlink. git names each on stderr, so
 * only those are cleaned (a name git printed with bytes that are not UTF-8: everything).
 */
async function cleanLeftRepositories(dir: string, stderr: string, keep: readonly string[]): Promise<void> {
  const left = [...stderr.matchAll(/unable to rmdir '(.*)': Directory not empty/g)].map((m) => m[1] ?? '');
  if (left.length === 0) return;
  if (left.some((path) => path.includes('\uFFFD'))) return cleanAll(dir, keep);
  await runGit(['clean', '-ffdxq', '--', ...left.map(literalPathspec)], { cwd: dir });
}

export interface ResetOutcome {
  /** `changed-paths`: by the monitor; `scanned`: by the directory record; `whole-tree`: git walked. */
  readonly how: 'changed-paths' | 'scanned' | 'whole-tree';
  /**
   * After a reset by the monitor's changed paths: the monitor's clock from before the reset's
   * own writes, the checkout's new clean record (they count as changed since, which costs a
   * path more to look at, never one too few).
   */
  readonly clock?: string;
}

/**
 * After git walked a checkout clean: its directories are recorded again (a walk of the tree in
 * Node, about what the reset's own `git clean` cost) unless it is one too small to scan, which
 * keeps its `walk` record. With a monitor, no record: the monitor's is the one kept up to date.
 */
async function recordWalked(dir: string, commit: string, keep: readonly string[], monitored: boolean) {
  if (monitored) return removeDirRecord(dir);
  const setting = scanSetting();
  const mode = (await readDirRecord(dir))?.record.mode;
  if (mode === 'walk' && setting === 'auto') return;
  await recordDirs(dir, commit, keep, setting);
}

/**
 * The leased checkout as `git status` sees it (readWorktree()): with a monitor's record of when it
 * was clean, git looks only at what changed since and where the index moved (monitoredWorktree());
 * with a record of its directories, at the tracked files and the changed directories
 * (scannedWorktree()); else it walks.
 */
export async function readLeasedWorktree(dir: string): Promise<WorktreeState> {
  const monitored = await monitoredWorktree(dir);
  if (monitored) return monitored;
  const scanned = (await monitorFor(dir)) ? null : await scannedWorktree(dir);
  return scanned ?? readWorktree(dir);
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
    // The criteria would not see what a fresh checkout of the commit holds: the caller checks the
    // commit out elsewhere.
    await refuseLeftGitState(lease.dir);
    const state = readCheckoutState(stateFile(lease));
    const sameSetup = setup && state.setup?.commandsKey === commandsKey(setup);
    const keep = sameSetup ? (state.setup?.keep ?? []) : [];
    const plan = state.left?.commit === commit ? claimCleanup(state.left.ignored, keep) : undefined;
    if (plan?.kind === 'remove') {
      for (const path of plan.paths) await rm(join(lease.dir, path), { recursive: true, force: true });
    } else if (plan?.kind !== 'none') {
      await cleanAll(lease.dir, keep);
    }
    return true;
  } catch (error) {
    await lease.release({ healthy: false, reason: reasonOf(error) });
    return false;
  }
}

/**
 * Records what git ignored in the run's checkout at the commit it published (see cleanClaimed),
 * and that its index holds that commit's tree (commitAttempt() staged it), so the next reset
 * compares trees instead of reading the index; best effort: without it the claim cleans with
 * git, and the reset asks git where the index differs.
 */
export async function noteLeftIgnored(
  dir: string,
  commit: string,
  ignored: readonly string[],
): Promise<void> {
  const file = `${dir}.json`;
  const state = readCheckoutState(file);
  const { index: _earlier, ...rest } = state;
  await writeCheckoutState(file, {
    ...rest,
    left: { commit, ignored },
    ...(await indexMark(dir, commit)),
  }).catch(() => undefined);
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
      // A new checkout: the monitor's first crawl of it is waited for here, once; without a monitor
      // its directories are recorded (best effort: without a record the next reset walks).
      await writeCheckoutState(stateFile(lease), await cleanMark(lease.dir, commit, { settle: true })).catch(
        () => undefined,
      );
      if (!(await monitorFor(lease.dir))) await recordDirs(lease.dir, commit, []).catch(() => undefined);
      return lease;
    }
    try {
      await refuseLeftGitState(lease.dir);
      const branch = attachedBranch(lease.dir);
      const state = readCheckoutState(stateFile(lease));
      const sameSetup = setup && state.setup?.commandsKey === commandsKey(setup);
      // The record of the clean checkout holds setup's outputs; other commands must lose them: a walk.
      const clean = sameSetup || !state.setup ? state.clean : undefined;
      const keep = sameSetup ? (state.setup?.keep ?? []) : [];
      const reset = await resetCheckout(lease.dir, commit, keep, clean, state.index);
      // The reset detached HEAD from the branch an agent made and left checked out. Branches are
      // shared by every checkout of the cache: a later attempt's `git checkout <name>` would pick up
      // this one's commits as its own work. No other checkout can have it checked out, so it goes.
      if (branch) await runGit(['update-ref', '-d', branch], { cwd: lease.dir, allowFailure: true });
      // What the last run left is gone with the reset; setup's record stays only for the same setup.
      await writeCheckoutState(stateFile(lease), {
        ...(sameSetup && state.setup ? { setup: state.setup } : {}),
        ...(await cleanMark(lease.dir, commit, reset.clock ? { clock: reset.clock } : {})),
      });
      return lease;
    } catch (error) {
      await lease.release({ healthy: false, reason: reasonOf(error) });
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
  const state: CheckoutState = readCheckoutState(file);
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
  // What setup made that git neither tracks nor ignores is not clean: the walks show it to the
  // attempt and remove it at the next reset, and so must a monitor's record or the folder
  // record, which would count it as clean and hide it.
  const clean = (await untrackedEntries(lease.dir)).length === 0;
  // Clean again, setup's outputs included: the records start after them. The index keeps the
  // mark of the reset before setup: setup's commands may have written it, which the stamp shows.
  const mark = clean ? await cleanMark(lease.dir, options.commit) : {};
  await writeCheckoutState(file, {
    setup: { commandsKey: commandsKey(setup), inputsKey: key, keep },
    ...(mark.clean ? { clean: mark.clean } : {}),
    ...(state.index ? { index: state.index } : {}),
  });
  if (!(await monitorFor(lease.dir))) {
    if (clean) await recordDirs(lease.dir, options.commit, keep);
    else await removeDirRecord(lease.dir);
  }
  return { ran: true, log: log.join('\n') };
}

/** `setup failed: $ npm ci (exit 1)` and the output's tail: the error a failed setup gives an attempt. */
export function describeSetupFailure(failure: SetupFailure): string {
  const how = failure.timedOut ? 'timed out' : `exit ${failure.exitCode ?? 'by signal'}`;
  return `setup failed: $ ${failure.command} (${how})\n${failure.tail}`.trim();
}

/**
 * Throws when the checkout's git folder holds what an attempt left and no reset undoes (a sparse
 * checkout, an operation in progress: checkout-head.ts); the caller discards the checkout.
 */
async function refuseLeftGitState(dir: string): Promise<void> {
  const left = leftGitState(dir);
  if (left) throw new FlotillaError('git/failed', `an attempt left ${left} in its git folder`);
}

/** Why a checkout was discarded, in a line for the host's log. */
function reasonOf(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0] ?? 'unfit';
}
