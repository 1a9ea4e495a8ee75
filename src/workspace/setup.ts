/**
 * A mission's `setup:` commands (e.g. `npm ci`), run in a warm checkout before the agent and
 * before the criteria, and again only when their inputs changed: the checkout remembers a hash of
 * the commands and of the `setup_inputs` files (default: the usual lockfiles) at the commit setup
 * last ran for, and which ignored outputs setup made (`node_modules/`), which resets then keep.
 * Setup commands are the mission author's own shell commands, like exit criteria: `bash -c`.
 */
import { createHash } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { runGit } from './git.js';

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
}

export async function readCheckoutState(file: string): Promise<CheckoutState> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as CheckoutState;
  } catch {
    return {};
  }
}

export async function writeCheckoutState(file: string, state: CheckoutState): Promise<void> {
  await writeFile(file, `${JSON.stringify(state)}\n`);
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
