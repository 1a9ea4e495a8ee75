/**
 * One batch of the gate's merge (integrate.ts): read the integration tip, merge the work commits one
 * on top of the other with `git merge-tree --write-tree` + `git commit-tree` (a work commit the tip
 * already holds merges to no change and gets no commit), and publish the last with a
 * compare-and-swap. Nothing is checked out. Where the repository asks for nothing more than plain
 * objects and refs, a merge that needs no file merged (the work's changes on paths the tip has as
 * the base had them), its commit and the publish are written in-process (loose-merge.ts,
 * git-files.ts, ref-files.ts): no git process for a batch; otherwise two or three a merge.
 */
import { join } from 'node:path';
import { integrationBranch } from '../../shared/contracts.js';
import { FlotillaError } from '../../shared/errors.js';
import {
  cachedCommitIdentity,
  cachedIdentityArgs,
  describeGitFailure,
  NO_HOOKS,
  readGit,
  runGit,
} from './git.js';
import { cachedWriteRules, commitBody } from './git-files.js';
import { inProcessGit } from './git-mode.js';
import { housekeep } from './housekeep.js';
import { looseMerge } from './loose-merge.js';
import { lostCompareAndSwap, type MergeRequest, mergeCommitMessage, planBatch } from './merge-batch.js';
import { parseMergeTree } from './merge-tree-output.js';
import { ObjectBatch } from './object-batch.js';
import { type RefWrite, writeRefFile } from './ref-files.js';
import { isRepoUrl, type RepoCache } from './repo-cache.js';
import { describeRefusal } from './verify-path.js';
import { refusedInWork } from './work-paths.js';

export interface IntegrateAttemptOptions {
  readonly cache: RepoCache;
  readonly missionId: string;
  /** The attempt within the mission, e.g. `mean/a2`: named in the merge commit's trailer. */
  readonly attemptId: string;
  /** The attempt's ref in the mission repo; fetched into the cache when the mission repo is a URL. */
  readonly ref: string;
  /** The commit to merge: the attempt's work without flotilla's dispatch files. */
  readonly workCommit: string;
  /** The merge commit's subject. */
  readonly message: string;
  /** Batches planned before giving up when other hosts keep publishing first. Default 8. */
  readonly maxTries?: number;
}

export type IntegrateResult =
  | {
      readonly ok: true;
      /** The attempt's own merge commit, or the tip that already held the work. */
      readonly commit: string;
      /** Nothing merged: a replayed gate after a publish, or an attempt that changed nothing. */
      readonly alreadyIntegrated: boolean;
    }
  | {
      readonly ok: false;
      /**
       * git's `CONFLICT (…)` lines, or a sentence naming the files when git printed none; for
       * `refused`, one line a path git refuses (verify-path.ts's describeRefusal()).
       */
      readonly conflict: string;
      readonly files: readonly string[];
      /** True when the work holds paths git refuses: nothing was merged. */
      readonly refused?: true;
    };

/** Where the merge happens: the mission repo itself when local, else the host's cache clone. */
interface Place {
  readonly dir: string;
  /**
   * The objects of `dir`'s git directory made in-process this batch (merged trees, merge commits),
   * written together before git or a ref sees them; null: git writes every one.
   */
  readonly batch: ObjectBatch | null;
  readonly remote: boolean;
  readonly branchRef: string;
}

function placeOf(cache: RepoCache, missionId: string): Place {
  const branch = integrationBranch(missionId);
  const remote = isRepoUrl(cache.repo);
  return {
    dir: remote ? cache.dir : cache.repo,
    // A local repo whose git directory could not be read: commit-tree, which finds it itself.
    // FLOTILLA_GIT=cli: no batch, so merge-tree, commit-tree and update-ref do all of it.
    batch: inProcessGit() ? objectBatchAt(remote ? join(cache.dir, '.git') : cache.localGitDir) : null,
    remote,
    branchRef: `refs/heads/${branch}`,
  };
}

function objectBatchAt(gitDir: string | null): ObjectBatch | null {
  return gitDir === null ? null : new ObjectBatch(gitDir);
}

/** The reflog message of a publish to a local mission repo. */
const PUBLISH_MESSAGE = 'flotilla: integrate';

export type BatchResults = Map<string, IntegrateResult | Error>;

/** One batch for one integration branch: every request in it has the same cache and mission. */
export async function integrateBatch(requests: readonly IntegrateAttemptOptions[]): Promise<BatchResults> {
  const first = requests[0];
  if (!first) return new Map();
  const { cache, missionId } = first;
  const maxTries = first.maxTries ?? 8;
  /** The branch's lock file while every try so far found it held; null once one did not. */
  let heldLock: string | null | undefined;
  for (let attempt = 1; attempt <= maxTries; attempt++) {
    const place = placeOf(cache, missionId);
    // A URL's tip is fetched with the work; a local mission repo's is read from its files as it is
    // now (remoteCommit()), without a fetch, which would wait behind the cache's checkouts.
    if (place.remote) await cache.fetch([integrationBranch(missionId), ...requests.map((r) => r.ref)]);
    const tip = await readTip(cache, place, missionId);
    const plan = planBatch(
      requests.map(
        (r): MergeRequest => ({
          attemptId: r.attemptId,
          workCommit: r.workCommit,
          message: mergeCommitMessage(r.message, missionId, r.attemptId),
        }),
      ),
    );
    const results: BatchResults = new Map();
    let head: Head = tip;
    for (const merge of plan) {
      const merged = await mergeOne(place, head, merge.workCommit, merge.message);
      if (merged.kind === 'merged') head = merged;
      const result = resultOf(merged, head.commit);
      for (const id of merge.attemptIds) results.set(id, result);
    }
    // The batch's merges on disk (one pack) before the branch can point at them. A URL's cache
    // takes no imports, so its packs are counted here for the roll-up (housekeep.ts).
    if (place.batch?.write() && place.remote) await housekeep(place.dir);
    const published =
      head.commit === tip.commit ? 'published' : await publish(place, head.commit, tip.commit);
    if (published === 'published') return results;
    if (published === 'lost-race') heldLock = null;
    else if (heldLock !== null) heldLock = published.held;
    // Another host published first. A short random pause keeps two losers from colliding again in step.
    await new Promise((done) => setTimeout(done, Math.floor(Math.random() * 50 * attempt)));
  }
  // The branch's lock held through every try (each waits for it, ref-files.ts): a writer that
  // was killed holding it, or one that holds it far longer than a write takes. It is never taken
  // away; whoever knows which removes it.
  if (heldLock) {
    throw new FlotillaError(
      'git/failed',
      `${cache.repo}: could not integrate into ${integrationBranch(missionId)}: its lock ${heldLock} was held through ${maxTries} tries; a git process may still be writing it, or one was stopped while it did: if none is running, remove the file`,
    );
  }
  throw new IntegrationContended(
    `${cache.repo}: could not integrate into ${integrationBranch(missionId)}: ${maxTries} batches lost to concurrent integrations`,
  );
}

/**
 * Other hosts kept publishing first: nothing is wrong with the attempt, the branch was busy. The
 * gate hands its job back for later instead of failing it (many hosts gating at once lost 40
 * batches in a row, bench/scale.js).
 */
export class IntegrationContended extends FlotillaError {
  constructor(message: string) {
    super('git/failed', message);
  }
}

/**
 * Trees of integration commits this process made or read: the tip is almost always the merge the
 * last batch published, so its tree is known without asking git. Bounded, oldest out first.
 */
const treeOfCommit = new Map<string, string>();
const TREES_KEPT = 256;

function rememberTree(commit: string, tree: string): void {
  treeOfCommit.delete(commit);
  treeOfCommit.set(commit, tree);
  for (const oldest of treeOfCommit.keys()) {
    if (treeOfCommit.size <= TREES_KEPT) break;
    treeOfCommit.delete(oldest);
  }
}

/** The integration tip (a local repo's as it is now, a URL's as last fetched) and its tree. */
async function readTip(cache: RepoCache, place: Place, missionId: string): Promise<Head> {
  const commit = await cache.remoteCommit(integrationBranch(missionId));
  if (!commit) {
    throw new FlotillaError(
      'git/failed',
      `${place.dir}: integration branch ${integrationBranch(missionId)} not found (was the mission prepared?)`,
    );
  }
  const tree =
    treeOfCommit.get(commit) ??
    (await readGit(['rev-parse', '--verify', `${commit}^{tree}`], { cwd: place.dir }));
  rememberTree(commit, tree);
  return { commit, tree };
}

type MergeOne =
  | { readonly kind: 'merged'; readonly commit: string; readonly tree: string }
  | { readonly kind: 'unchanged' }
  | {
      readonly kind: 'conflict';
      readonly conflict: string;
      readonly files: string[];
      readonly refused?: true;
    }
  | { readonly kind: 'error'; readonly error: Error };

interface Head {
  readonly commit: string;
  readonly tree: string;
}

/** What the gates of one merge are told; an error fails only them. */
function resultOf(merged: MergeOne, head: string): IntegrateResult | Error {
  switch (merged.kind) {
    case 'merged':
      return { ok: true, commit: merged.commit, alreadyIntegrated: false };
    case 'unchanged':
      return { ok: true, commit: head, alreadyIntegrated: true };
    case 'conflict':
      return {
        ok: false,
        conflict: merged.conflict,
        files: merged.files,
        ...(merged.refused ? { refused: true as const } : {}),
      };
    case 'error':
      return merged.error;
  }
}

async function mergeOne(place: Place, head: Head, workCommit: string, message: string): Promise<MergeOne> {
  const dir = place.dir;
  // The one path gate, before either merge: neither git's nor the in-process one refuses a name.
  const refused = await refusedInWork(dir, place.batch, workCommit);
  if (refused.length > 0) {
    return {
      kind: 'conflict',
      conflict: refused.map((r) => describeRefusal(r.path, r.refusal)).join('\n'),
      files: refused.map((r) => r.path),
      refused: true,
    };
  }
  // The work's changes on paths the tip has as the base had them: no merge of any file to do.
  const tree = place.batch ? await looseMerge({ batch: place.batch, head, work: workCommit }) : null;
  if (tree) return withMergeCommit(place, head, tree, workCommit, message);
  // git merges from the tip, which may be an earlier merge of this batch.
  place.batch?.write();
  // Without --messages, git prints its CONFLICT lines for a conflicted merge only.
  const args = ['merge-tree', '--write-tree', '--name-only', '-z', head.commit, workCommit];
  const merged = await runGit(args, { cwd: dir, allowFailure: true });
  const outcome = parseMergeTree(merged.stdout, merged.exitCode);
  if (outcome.kind === 'error') {
    return { kind: 'error', error: new FlotillaError('git/failed', describeGitFailure(args, merged)) };
  }
  if (outcome.kind === 'conflict') {
    const files = [...outcome.files];
    const conflict =
      outcome.messages.length > 0 ? outcome.messages.join('\n') : `Merge conflict in ${files.join(', ')}`;
    return { kind: 'conflict', conflict, files };
  }
  return withMergeCommit(place, head, outcome.tree, workCommit, message);
}

/** The merge commit of `tree`, or none when the tree is the tip's. */
async function withMergeCommit(place: Place, head: Head, tree: string, workCommit: string, message: string) {
  // The work changed nothing the tip does not already hold: no merge commit for an empty change.
  // That is also how a replayed gate finds its work merged: a work commit the tip already holds
  // merges to the tip's own tree (the merge base is the work commit itself).
  if (tree === head.tree) return { kind: 'unchanged' } as const;
  const merge = await mergeCommit(place, tree, [head.commit, workCommit], message);
  rememberTree(merge, tree);
  return { kind: 'merged', commit: merge, tree } as const;
}

/**
 * The merge commit: made in-process, held in the batch, where the repository asks for nothing more
 * (git-files.ts), else by `git commit-tree` (a signed commit, say). The same identity either way.
 */
async function mergeCommit(place: Place, tree: string, parents: readonly string[], message: string) {
  const dir = place.dir;
  if (place.batch && (await cachedWriteRules(place.batch.gitDir)).plain) {
    const identity = await cachedCommitIdentity(dir);
    const now = new Date();
    return place.batch.put(
      'commit',
      commitBody({
        tree,
        parents,
        author: identity.author,
        committer: identity.committer,
        time: Math.floor(now.getTime() / 1000),
        zoneMinutes: -now.getTimezoneOffset(),
        message,
      }),
    );
  }
  place.batch?.write();
  const commit = await runGit(
    [
      ...NO_HOOKS,
      ...(await cachedIdentityArgs(dir)),
      'commit-tree',
      tree,
      ...parents.flatMap((parent) => ['-p', parent]),
      '-F',
      '-',
    ],
    { cwd: dir, input: message },
  );
  return commit.stdout.trim();
}

/**
 * The compare-and-swap of the integration branch from `tip` to `head`: in a local repository's
 * files where it asks for nothing more than plain refs (ref-files.ts: git's own lock protocol, and
 * the reflog line `update-ref -m` writes), else `git update-ref` with the old value, or a push with
 * a lease to a URL.
 */
async function publish(
  place: Place,
  head: string,
  tip: string,
): Promise<'published' | 'lost-race' | { readonly held: string }> {
  const written = place.remote ? 'declined' : await publishInFiles(place, head, tip);
  if (written === 'locked')
    return { held: `${join(place.batch?.gitDir ?? place.dir, place.branchRef)}.lock` };
  if (written !== 'declined') return written === 'written' ? 'published' : 'lost-race';
  const args = place.remote
    ? [
        'push',
        '--quiet',
        `--force-with-lease=${place.branchRef}:${tip}`,
        'origin',
        `${head}:${place.branchRef}`,
      ]
    : ['update-ref', '-m', PUBLISH_MESSAGE, place.branchRef, head, tip];
  const result = await runGit([...NO_HOOKS, ...args], { cwd: place.dir, allowFailure: true });
  if (result.exitCode === 0) return 'published';
  // git waited for the lock (core.filesRefLockTimeout) and names it: held, not a race lost.
  const held = /Unable to create '([^']*\.lock)': File exists/i.exec(result.stderr)?.[1];
  if (held) return { held };
  if (lostCompareAndSwap(result.stderr)) return 'lost-race';
  throw new FlotillaError('git/failed', describeGitFailure(args, result));
}

async function publishInFiles(place: Place, head: string, tip: string): Promise<RefWrite> {
  if (!place.batch) return 'declined';
  const gitDir = place.batch.gitDir;
  const rules = await cachedWriteRules(gitDir);
  const identity = await cachedCommitIdentity(place.dir);
  // Without an identity git writes the reflog under a name it makes up itself: git does it.
  if (!rules.plain || !identity.configured) return 'declined';
  return writeRefFile(gitDir, place.branchRef, head, {
    expected: tip,
    log: { committer: identity.committer, message: PUBLISH_MESSAGE, mode: rules.refLogs },
  });
}
