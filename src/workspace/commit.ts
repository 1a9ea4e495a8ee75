import {
  cachedIdentityArgs,
  describeGitFailure,
  NO_HOOKS,
  readGit,
  retryOnLockContention,
  runGit,
} from './git.js';

/** flotilla's PROMPT/RESULT files (and their archive): the attempt's audit record, never its work. */
export const DISPATCH_DIR = '.planning/dispatch';
const WORK_PATHS = ['.', `:(exclude)${DISPATCH_DIR}`] as const;

export interface CommitAttemptOptions {
  readonly dir: string;
  readonly message: string;
  /** Where to publish the attempt in the mission repo: a full ref (attemptRef()) or a branch name. */
  readonly ref: string;
  /**
   * The commit the attempt started from. Commits the agent made itself are folded into the
   * attempt's one work commit, so `.planning/dispatch/` files it may have committed stay out of it.
   */
  readonly baseCommit?: string;
  /** `Name <email>`, e.g. the CLI that did the work; the committer stays the host's identity. */
  readonly author?: string;
}

export interface CommitAttemptResult {
  /** The published commit: the work plus flotilla's dispatch files, the attempt's audit record. */
  readonly commit: string;
  /** `commit`'s parent: the work alone, which the gate merges (an empty commit when nothing changed). */
  readonly workCommit: string;
  /** True when the work commit changes anything. */
  readonly changed: boolean;
  readonly ref: string;
}

/**
 * Two commits: the work (everything but `.planning/dispatch/`), then flotilla's dispatch files on
 * top. The ref points at the second, so the attempt's prompt and result travel with it as the
 * audit trail; the gate merges the first, so they never reach the integration branch. A user's own
 * `.planning/` files outside `dispatch/` are work like any other file.
 */
export async function commitAttempt(options: CommitAttemptOptions): Promise<CommitAttemptResult> {
  const { dir } = options;
  await runGit(['add', '-A'], { cwd: dir });
  let made = await commitWorkThenDispatch(options);
  if (options.baseCommit && made.workParent !== options.baseCommit) {
    // The agent committed on its own, maybe flotilla's dispatch files with its work: start again
    // from the base with everything staged, so the work commit is the whole change and only it.
    await runGit(['reset', '--soft', '--quiet', options.baseCommit], { cwd: dir });
    made = await commitWorkThenDispatch(options);
  }
  await pushRef({ dir, ref: options.ref });
  return { commit: made.commit, workCommit: made.workCommit, changed: made.changed, ref: options.ref };
}

/**
 * `commit -- <paths>` takes only those paths from the index and leaves the rest staged. Both
 * commits are made even when empty, so the ref's parent is always the work commit; an empty work
 * commit merges as "nothing to merge" at the gate.
 */
async function commitWorkThenDispatch(options: CommitAttemptOptions) {
  const { dir } = options;
  const commit = [
    ...NO_HOOKS,
    ...(await cachedIdentityArgs(dir)),
    'commit',
    '--quiet',
    '--no-verify',
    '--allow-empty',
    ...(options.author ? ['--author', options.author] : []),
  ];
  await runGit([...commit, '-m', options.message, '--', ...WORK_PATHS], { cwd: dir });
  await runGit([...commit, '-m', `${options.message.split('\n')[0]} (dispatch files)`], { cwd: dir });
  const [published = '', workCommit = '', workParent = '', workTree = '', parentTree = ''] = (
    await readGit(['rev-parse', 'HEAD', 'HEAD^', 'HEAD^^', 'HEAD^^{tree}', 'HEAD^^^{tree}'], { cwd: dir })
  ).split('\n');
  return { commit: published, workCommit, workParent, changed: workTree !== parentTree };
}

export interface PushRefOptions {
  readonly dir: string;
  /** Published from the checkout's HEAD under this name: a full ref or a branch name. */
  readonly ref: string;
}

/**
 * Force is right here: an attempt ref belongs to one attempt, and a re-delivered run must be able
 * to replace what an earlier delivery pushed.
 */
export async function pushRef(options: PushRefOptions): Promise<void> {
  const target = options.ref.startsWith('refs/') ? options.ref : `refs/heads/${options.ref}`;
  const args = ['push', '--force', '--quiet', 'origin', `HEAD:${target}`];
  await retryOnLockContention(
    () => runGit([...NO_HOOKS, ...args], { cwd: options.dir, allowFailure: true }),
    (result) => describeGitFailure(args, result),
  );
}
