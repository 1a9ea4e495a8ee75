/** Records an attempt's work on its branch and publishes it to the mission repo. */
import { FlotillaError } from '../shared/errors.js';
import { describeGitFailure, identityArgs, NO_HOOKS, readGit, retryOnLockContention, runGit } from './git.js';

export interface CommitAttemptOptions {
  readonly dir: string;
  readonly message: string;
  /** The branch name to publish HEAD as; default the branch checked out in `dir`. */
  readonly branch?: string;
  /** `Name <email>`, e.g. the CLI that did the work; the committer stays the host's identity. */
  readonly author?: string;
}

export interface CommitAttemptResult {
  /** The branch tip after the commit, or HEAD unchanged when there was nothing to commit. */
  readonly commit: string;
  readonly changed: boolean;
  readonly branch: string;
}

export async function currentBranch(dir: string): Promise<string> {
  const result = await runGit(['symbolic-ref', '--quiet', '--short', 'HEAD'], {
    cwd: dir,
    allowFailure: true,
  });
  if (result.exitCode !== 0) throw new FlotillaError('git/failed', `${dir}: HEAD is not on a branch`);
  return result.stdout.trim();
}

/**
 * Commits everything in the checkout, `.planning/` included, so the attempt's prompt and result
 * travel with its branch as the audit trail; then force-pushes the branch to the mission repo.
 */
export async function commitAttempt(options: CommitAttemptOptions): Promise<CommitAttemptResult> {
  const { dir } = options;
  const branch = options.branch ?? (await currentBranch(dir));
  await runGit(['add', '-A'], { cwd: dir });
  const staged = await runGit(['diff', '--cached', '--quiet'], { cwd: dir, allowFailure: true });
  if (staged.exitCode > 1) {
    throw new FlotillaError('git/failed', describeGitFailure(['diff', '--cached'], staged));
  }
  const changed = staged.exitCode === 1;
  if (changed) {
    const author = options.author ? ['--author', options.author] : [];
    await runGit(
      [
        ...NO_HOOKS,
        ...(await identityArgs(dir)),
        'commit',
        '--quiet',
        '--no-verify',
        ...author,
        '-m',
        options.message,
      ],
      {
        cwd: dir,
      },
    );
  }
  const commit = await readGit(['rev-parse', 'HEAD'], { cwd: dir });
  await pushBranch({ dir, branch });
  return { commit, changed, branch };
}

export interface PushBranchOptions {
  readonly dir: string;
  /** Published from the checkout's HEAD under this name. */
  readonly branch: string;
}

/**
 * Force is right here: an attempt branch belongs to one attempt, and a re-delivered run must be
 * able to replace what an earlier delivery pushed.
 */
export async function pushBranch(options: PushBranchOptions): Promise<void> {
  const args = ['push', '--force', '--quiet', 'origin', `HEAD:refs/heads/${options.branch}`];
  await retryOnLockContention(
    () => runGit([...NO_HOOKS, ...args], { cwd: options.dir, allowFailure: true }),
    (result) => describeGitFailure(args, result),
  );
}
