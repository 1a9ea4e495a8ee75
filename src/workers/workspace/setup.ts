/**
 * A mission's `setup:` commands (e.g. `npm ci`), run in a warm checkout before the agent and
 * before the criteria, and again only when their inputs changed: the checkout remembers a hash of
 * the commands and of the `setup_inputs` files (default: the usual lockfiles) at the commit setup
 * last ran for, and which ignored outputs setup made (`node_modules/`), which resets then keep.
 * Setup commands are the mission author's own shell commands, like exit criteria: `bash -c`.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { rewriteInPlace } from '../../shared/file-in-place.js';
import { runGit } from './git.js';
import { isUnder, keptPaths } from './monitored-paths.js';

export const DEFAULT_SETUP_INPUTS: readonly string[] = [
  'package-lock.json',
  'npm-shrinkwrap.json',
  'yarn.lock',
  'pnpm-lock.yaml',
  'bun.lockb',
  'requirements.txt',
  'poetry.lock',
  'Pipfile.lock',
  'uv.lock',
  'Cargo.lock',
  'go.sum',
  'Gemfile.lock',
  'composer.lock',
];

export interface SetupSpec {
  readonly commands: readonly string[];
  readonly inputs: readonly string[];
}

/** What a checkout remembers between leases, in `<checkout>.json` beside it. */
export interface CheckoutState {
  readonly setup?: {
    /** Hash of the commands alone: a reset keeps setup's outputs only for the same commands. */
    readonly commandsKey: string;
    /** Hash of the commands and the inputs' blobs: setup re-runs when it changes. */
    readonly inputsKey: string;
    /** Ignored paths setup made, as anchored patterns (`/node_modules/`). */
    readonly keep: readonly string[];
  };
  /**
   * What git ignored in the checkout when the run stage committed `commit` (readWorktree()), so
   * the verify that continues here at that commit can clean without walking the tree again.
   */
  readonly left?: { readonly commit: string; readonly ignored: readonly string[] };
  /**
   * The file-system monitor's clock when the checkout was last clean at `commit` (a fresh
   * checkout or a reset, setup's outputs included): what changed since is all that differs.
   */
  readonly clean?: { readonly clock: string; readonly commit: string };
  /**
   * The commit whose tree the checkout's index held when the index file had `stamp` (indexStamp():
   * git writes the index as a new file, so a rewrite changes it). While the stamp holds, where the
   * index differs from another commit is a diff of two trees, read in-process (loose-trees.ts),
   * instead of git reading the whole index.
   */
  readonly index?: { readonly commit: string; readonly stamp: string };
}

/** A small file read and written synchronously, as the checkout's git files are (checkout-head.ts). */
export function readCheckoutState(file: string): CheckoutState {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as CheckoutState;
  } catch {
    return {};
  }
}

/** Rejects when the file cannot be written. Rewritten in place: a checkout's state changes twice a task. */
export async function writeCheckoutState(file: string, state: CheckoutState): Promise<void> {
  rewriteInPlace(file, `${JSON.stringify(state)}\n`);
}

export function commandsKey(spec: SetupSpec): string {
  return createHash('sha256').update(JSON.stringify(spec.commands)).digest('hex');
}

/** The commands and the blob ids of the inputs at `commit` (one `git ls-tree`): setup's cache key. */
export async function inputsKey(dir: string, commit: string, spec: SetupSpec): Promise<string> {
  const inputs = spec.inputs.length > 0 ? spec.inputs : DEFAULT_SETUP_INPUTS;
  const { stdout } = await runGit(['ls-tree', '-r', '--full-tree', commit, '--', ...inputs], { cwd: dir });
  return createHash('sha256').update(JSON.stringify(spec.commands)).update('\0').update(stdout).digest('hex');
}

/** Untracked ignored entries, directories collapsed (`node_modules/`), as anchored patterns. */
export async function ignoredEntries(dir: string): Promise<string[]> {
  const { stdout } = await runGit(
    ['ls-files', '-z', '--others', '--ignored', '--exclude-standard', '--directory'],
    {
      cwd: dir,
    },
  );
  return stdout
    .split('\0')
    .filter(Boolean)
    .map((path) => `/${path}`);
}

/**
 * Untracked entries git does not ignore (folders collapsed, empty ones left out: flotilla's own
 * dispatch folders are kept empty under a monitor): setup's outputs among them are not kept (a
 * reset removes them, and the attempt's listing shows them as the attempt's).
 */
export async function untrackedEntries(dir: string): Promise<string[]> {
  const { stdout } = await runGit(
    ['ls-files', '-z', '--others', '--exclude-standard', '--directory', '--no-empty-directory'],
    { cwd: dir },
  );
  return stdout.split('\0').filter(Boolean);
}

export type ClaimCleanup =
  /** Nothing but setup's outputs is ignored: the checkout is as a fresh one plus setup. */
  | { readonly kind: 'none' }
  /** Delete these ignored paths (the agent's own build output, say); setup's stay. */
  | { readonly kind: 'remove'; readonly paths: readonly string[] }
  /** The listing cannot be matched against setup's outputs path by path: let `git clean` decide. */
  | { readonly kind: 'git-clean' };

/**
 * Which ignored paths a checkout handed from the run to verify must lose so criteria see what a
 * checkout of the pushed commit holds (plus setup's outputs, `keep`). `ignored` is in `git status
 * --ignored=matching` form (a directory entry ends in `/`); `keep` in setupOutputs() form
 * (`/node_modules/`). flotilla's `.planning/` is never touched (its dispatch files are committed
 * even where a `.gitignore` ignores the folder). An ignored entry that holds a kept one (`build/`
 * listed, `/build/gen/` kept) is left to `git clean`, which applies the patterns itself.
 */
export function claimCleanup(ignored: readonly string[], keep: readonly string[]): ClaimCleanup {
  const kept = keptPaths(keep);
  const paths: string[] = [];
  for (const entry of ignored) {
    const path = entry.replace(/\/+$/, '');
    if (path === '' || path === '.planning' || path.startsWith('.planning/')) continue;
    if (isUnder(path, kept)) continue;
    if (kept.some((k) => k.startsWith(`${path}/`))) return { kind: 'git-clean' };
    paths.push(path);
  }
  return paths.length === 0 ? { kind: 'none' } : { kind: 'remove', paths };
}

/**
 * What a reset keeps after setup ran: what is ignored now, less what was ignored before setup and
 * not kept from an earlier run (an agent's own ignored output must not outlive its attempt).
 */
export function setupOutputs(
  before: readonly string[],
  after: readonly string[],
  keptEarlier: readonly string[],
): string[] {
  const foreign = new Set(before.filter((path) => !keptEarlier.includes(path)));
  return after.filter((path) => !foreign.has(path));
}
