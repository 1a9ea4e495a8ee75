/**
 * Getting a warm checkout ready for one stage of an attempt: reset to a commit incrementally (git
 * rewrites only the files that differ), clean what earlier attempts left (setup's ignored outputs
 * excepted), then run setup when its inputs changed. A checkout whose reset fails is discarded and
 * another one is taken, so nothing an earlier attempt wrote is ever seen by a later one.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { CheckoutLease, CheckoutPool } from './checkout-pool.js';
import { runGit } from './git.js';
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

/** Checks `commit` out (detached) and removes every untracked file but `keep`'s. Throws on failure. */
export async function resetCheckout(dir: string, commit: string, keep: readonly string[]): Promise<void> {
  await runGit(['checkout', '--quiet', '--force', '--detach', commit], { cwd: dir });
  await cleanCheckout(dir, keep);
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
      await writeCheckoutState(stateFile(lease), {}).catch(() => undefined);
      return lease;
    }
    try {
      const state = await readCheckoutState(stateFile(lease));
      const sameSetup = setup && state.setup?.commandsKey === commandsKey(setup);
      await resetCheckout(lease.dir, commit, sameSetup ? (state.setup?.keep ?? []) : []);
      // What the last run left is gone with the reset; setup's record stays only for the same setup.
      if (state.left || (!sameSetup && state.setup)) {
        await writeCheckoutState(stateFile(lease), sameSetup && state.setup ? { setup: state.setup } : {});
      }
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
  await writeCheckoutState(file, { setup: { commandsKey: commandsKey(setup), inputsKey: key, keep } });
  return { ran: true, log: log.join('\n') };
}

/** `setup failed: $ npm ci (exit 1)` and the output's tail: the error a failed setup gives an attempt. */
export function describeSetupFailure(failure: SetupFailure): string {
  const how = failure.timedOut ? 'timed out' : `exit ${failure.exitCode ?? 'by signal'}`;
  return `setup failed: $ ${failure.command} (${how})\n${failure.tail}`.trim();
}
