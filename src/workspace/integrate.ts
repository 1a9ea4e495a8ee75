/**
 * The gate's merge: an approved attempt branch goes into the mission's
 * integration branch. Hosts integrate concurrently without a lock: a push that lost the race is
 * rejected by the mission repo, and the merge is redone on the new integration commit.
 */
import { integrationBranch } from '../shared/contracts.js';
import { FlotillaError } from '../shared/errors.js';
import { integrationCommit } from './attempt-checkout.js';
import {
  describeGitFailure,
  identityArgs,
  isAncestor,
  isLockContention,
  isNameClash,
  NO_HOOKS,
  readGit,
  runGit,
} from './git.js';
import type { RepoCache } from './repo-cache.js';
import { addWorktree, removeWorktree, uniqueWorkDir } from './worktree.js';

export interface IntegrateAttemptOptions {
  readonly cache: RepoCache;
  readonly missionId: string;
  readonly branch: string;
  /**
   * The commit the attempt's completed run job returned. The branch must still point at it: anything
   * else pushed there (a CLI orphaned by a crashed host, a host that lost its job's lock) is refused.
   */
  readonly commit?: string;
  readonly message: string;
  readonly workRoot: string;
  /** Merges tried before giving up when other hosts keep integrating first. Default 8. */
  readonly maxTries?: number;
}

export type IntegrateResult =
  | { readonly ok: true; readonly commit: string; readonly alreadyIntegrated: boolean }
  | { readonly ok: false; readonly conflict: string; readonly files: readonly string[] };

/**
 * The push lost a race with another integration: the client saw a newer tip (non-fast-forward), or
 * the mission repo's compare-and-swap on the ref failed. Anything else (a hook, permissions, a
 * name clash) is a real failure that retrying would only repeat.
 */
function lostRace(stderr: string): boolean {
  if (isNameClash(stderr)) return false;
  return (
    /non-fast-forward|fetch first|\(stale info\)|failed to update ref/i.test(stderr) ||
    isLockContention(stderr)
  );
}

type MergeOutcome =
  | { readonly kind: 'merged'; readonly commit: string }
  | { readonly kind: 'conflict'; readonly conflict: string; readonly files: string[] };

async function mergeInto(dir: string, attemptCommit: string, message: string): Promise<MergeOutcome> {
  const args = ['merge', '--no-ff', '--no-edit', '--no-verify', '-m', message, attemptCommit];
  const merge = await runGit([...NO_HOOKS, ...(await identityArgs(dir)), ...args], {
    cwd: dir,
    allowFailure: true,
  });
  if (merge.exitCode === 0) {
    return { kind: 'merged', commit: await readGit(['rev-parse', 'HEAD'], { cwd: dir }) };
  }
  const unmerged = await runGit(['diff', '--name-only', '--diff-filter=U', '-z'], { cwd: dir });
  const files = unmerged.stdout.split('\0').filter((file) => file !== '');
  if (files.length === 0) throw new FlotillaError('git/failed', describeGitFailure(args, merge));
  await runGit(['merge', '--abort'], { cwd: dir, allowFailure: true });
  const lines = `${merge.stdout}\n${merge.stderr}`.split('\n').filter((line) => line.startsWith('CONFLICT'));
  const conflict = lines.length > 0 ? lines.join('\n') : `Merge conflict in ${files.join(', ')}`;
  return { kind: 'conflict', conflict, files };
}

async function pushIntegration(dir: string, missionId: string): Promise<'pushed' | 'lost-race'> {
  const args = ['push', '--quiet', 'origin', `HEAD:refs/heads/${integrationBranch(missionId)}`];
  const push = await runGit([...NO_HOOKS, ...args], { cwd: dir, allowFailure: true });
  if (push.exitCode === 0) return 'pushed';
  if (lostRace(push.stderr)) return 'lost-race';
  throw new FlotillaError('git/failed', describeGitFailure(args, push));
}

/** Integrations in progress per mission branch in this process; see integrateAttempt. */
const integrating = new Map<string, Promise<unknown>>();

/**
 * Idempotent: when the attempt's commit is already in the integration branch (a re-delivered gate),
 * nothing is merged and the current integration commit is returned.
 *
 * One mission's integration branch takes one merge at a time anyway, so the gates of one host queue
 * here for it: run side by side, all but one lose the push and redo fetch, checkout and merge
 * (measured: 2.9 tries per task with 4 gates at once, a third of a task's git calls). Gates on
 * other hosts still race optimistically.
 */
export function integrateAttempt(options: IntegrateAttemptOptions): Promise<IntegrateResult> {
  const key = `${options.cache.dir}\0${options.missionId}`;
  const previous = integrating.get(key) ?? Promise.resolve();
  const next = previous.then(() => integrateOnce(options));
  const settled = next.then(
    () => undefined,
    () => undefined,
  );
  integrating.set(key, settled);
  void settled.then(() => {
    if (integrating.get(key) === settled) integrating.delete(key);
  });
  return next;
}

async function integrateOnce(options: IntegrateAttemptOptions): Promise<IntegrateResult> {
  const { cache, missionId, branch } = options;
  const maxTries = options.maxTries ?? 8;
  for (let attempt = 1; attempt <= maxTries; attempt++) {
    await cache.fetch([integrationBranch(missionId), branch]);
    const base = await integrationCommit(cache, missionId);
    const attemptCommit = await cache.remoteCommit(branch);
    if (!attemptCommit) throw new FlotillaError('git/failed', `${cache.repo}: branch ${branch} not found`);
    if (options.commit && attemptCommit !== options.commit) {
      return {
        ok: false,
        conflict: `the attempt branch ${branch} moved after its run: it holds ${attemptCommit.slice(0, 12)}, the run committed ${options.commit.slice(0, 12)}; work pushed by anything but the run is never merged`,
        files: [],
      };
    }
    if (await isAncestor(cache.dir, attemptCommit, base)) {
      return { ok: true, commit: base, alreadyIntegrated: true };
    }

    // Detached at the integration commit, so concurrent integrations on one host never share a branch.
    const dir = uniqueWorkDir(options.workRoot, missionId, 'integrate');
    try {
      await addWorktree(cache, { dir, commit: base });
      const merged = await mergeInto(dir, attemptCommit, options.message);
      if (merged.kind === 'conflict') return { ok: false, conflict: merged.conflict, files: merged.files };
      if ((await pushIntegration(dir, missionId)) === 'pushed') {
        return { ok: true, commit: merged.commit, alreadyIntegrated: false };
      }
    } finally {
      await removeWorktree(dir);
    }
    // Someone integrated first. A short random pause keeps two losers from colliding again in step.
    await new Promise((done) => setTimeout(done, Math.floor(Math.random() * 50 * attempt)));
  }
  throw new FlotillaError(
    'git/failed',
    `${cache.repo}: could not integrate ${branch} into ${integrationBranch(missionId)}: ${maxTries} pushes lost to concurrent integrations`,
  );
}
