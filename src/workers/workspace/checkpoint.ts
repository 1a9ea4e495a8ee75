/**
 * Checkpoints of a running attempt (docs/RECOVERY.md, "Checkpoints"): the checkout's files as a
 * commit on the attempt's work-in-progress ref in the mission repo, so a run re-delivered to
 * another host after a crash starts from them instead of from zero. The agent is still working in
 * the checkout meanwhile, so nothing here touches its index, its HEAD or its files: the snapshot
 * is built in an index of its own.
 */
import { copyFile, rm } from 'node:fs/promises';
import { CHECKPOINT_REF_PREFIX, DISPATCH_DIR } from '../../shared/contracts.js';
import { pushRef } from './commit.js';
import {
  cachedIdentityArgs,
  describeGitFailure,
  NO_HOOKS,
  readGit,
  retryOnLockContention,
  runGit,
} from './git.js';
import type { RepoCache } from './repo-cache.js';

/** The work of the checkout: everything git does not ignore, but flotilla's own dispatch files. */
const WORK_PATHS = ['.', `:(exclude)${DISPATCH_DIR}`] as const;

export interface CheckpointWriterOptions {
  readonly dir: string;
  /** The work-in-progress ref in the mission repo (checkpointRef()). */
  readonly ref: string;
  /** The commit the attempt started from: every checkpoint's parent, whatever the agent committed. */
  readonly baseCommit: string;
  readonly message: string;
  /**
   * The tree of the checkpoint this run resumed from: the same tree again is not saved. Default:
   * the base's tree, so a checkout nothing changed in yet is not saved either.
   */
  readonly previousTree?: string;
  /** Throws when this host may no longer publish the attempt's work (stages/lock-fence.ts). */
  readonly beforePublish?: () => Promise<void>;
}

export interface SavedCheckpoint {
  readonly commit: string;
  readonly tree: string;
}

export interface CheckpointWriter {
  /** Saves and pushes the checkout's files; `unchanged` when they are those of the last checkpoint. */
  save(): Promise<SavedCheckpoint | 'unchanged'>;
}

/**
 * A writer for one run's checkpoints. Per checkpoint: the agent's index copied, `add --all`,
 * `rm --cached` of the dispatch files, `write-tree`; then, when the tree changed, `commit-tree` on
 * the base and a push.
 */
export function checkpointWriter(options: CheckpointWriterOptions): CheckpointWriter {
  const { dir } = options;
  // Asked once per run: where the agent's index is, and the base's tree (nothing changed yet).
  let facts: Promise<{ index: string; baseTree: string }> | undefined;
  let lastTree = options.previousTree;
  return {
    async save() {
      facts ??= readGit(
        ['rev-parse', '--path-format=absolute', '--git-path', 'index', `${options.baseCommit}^{tree}`],
        { cwd: dir },
      ).then((out) => {
        const [index = '', baseTree = ''] = out.split('\n');
        return { index, baseTree };
      });
      const { index, baseTree } = await facts;
      lastTree ??= baseTree;
      const tree = await snapshotTree(dir, index);
      if (tree === lastTree) return 'unchanged';
      const commit = await readGit(
        [
          ...(await cachedIdentityArgs(dir)),
          'commit-tree',
          tree,
          '-p',
          options.baseCommit,
          '-m',
          options.message,
        ],
        { cwd: dir },
      );
      await options.beforePublish?.();
      // Force (pushRef): the ref belongs to this attempt, and each checkpoint replaces the one before.
      await pushRef({ dir, ref: options.ref, commit });
      lastTree = tree;
      return { commit, tree };
    },
  };
}

/**
 * The checkout's work as a tree object, through a temporary index: a copy of the agent's (so git
 * reads again only the files whose stats changed), then `add --all`, which makes it the files on
 * disk whatever the agent staged or committed, then `.planning/dispatch/` out of it, should the
 * agent have staged flotilla's prompt or result: they are never work.
 */
async function snapshotTree(dir: string, agentIndex: string): Promise<string> {
  const temporary = `${agentIndex}.flotilla-checkpoint`;
  // A missing index (a checkout git never indexed) only means every file is read once.
  await copyFile(agentIndex, temporary).catch(() => rm(temporary, { force: true }));
  const env = { GIT_INDEX_FILE: temporary, GIT_OPTIONAL_LOCKS: '0' };
  try {
    await runGit(['add', '--all', '--', ...WORK_PATHS], { cwd: dir, env });
    await runGit(['rm', '-r', '--cached', '--quiet', '--ignore-unmatch', '--', DISPATCH_DIR], {
      cwd: dir,
      env,
    });
    return await readGit(['write-tree'], { cwd: dir, env });
  } finally {
    await rm(temporary, { force: true });
    await rm(`${temporary}.lock`, { force: true });
  }
}

/** Deletes the work-in-progress ref from the mission repo (none there is no failure). */
export async function deleteCheckpoint(dir: string, ref: string): Promise<void> {
  const args = ['push', '--quiet', 'origin', `:${ref}`];
  await retryOnLockContention(
    () => runGit([...NO_HOOKS, ...args], { cwd: dir, allowFailure: true }),
    (result) => describeGitFailure(args, result),
  );
}

/**
 * Deletes every work-in-progress ref a mission left in its repo (`refs/flotilla-wip/<mission>/…`):
 * normally none, since an attempt that ends deletes its own, but a re-delivered run stopped before
 * it reached its checkout (a cancel, a spent budget) leaves one. Run once the mission ended.
 */
export async function deleteMissionCheckpoints(cache: RepoCache, missionId: string): Promise<number> {
  const prefix = `${CHECKPOINT_REF_PREFIX}${missionId}/`;
  const listed = await readGit(['ls-remote', '--refs', 'origin', `${prefix}*`], { cwd: cache.dir });
  const refs = listed
    .split('\n')
    .map((line) => line.split('\t')[1] ?? '')
    .filter((ref) => ref.startsWith(prefix));
  if (refs.length === 0) return 0;
  await runGit([...NO_HOOKS, 'push', '--quiet', 'origin', ...refs.map((ref) => `:${ref}`)], {
    cwd: cache.dir,
  });
  return refs.length;
}
