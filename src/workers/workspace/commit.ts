import { type Dirent, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { DISPATCH_DIR } from '../../shared/contracts.js';
import { FlotillaError } from '../../shared/errors.js';
import { attachedBranch, gitDirOf, objectStores, writeDetachedHead } from './checkout-head.js';
import { commitByGit, gitMustCommit } from './commit-by-git.js';
import { contentMayConvert } from './content-filters.js';
import { type ImportCommit, type ImportEntry, importPath, importStream } from './fast-import.js';
import {
  cachedCommitIdentity,
  describeGitFailure,
  NO_HOOKS,
  readGit,
  retryOnLockContention,
  runGit,
  runGitBytes,
} from './git.js';
import { cachedWriteRules, lstatOrNull, type RepoWriteRules, readStoredObject } from './git-files.js';
import { inProcessGit } from './git-mode.js';
import { housekeep } from './housekeep.js';
import { type CommittedPath, writeIndexUpdates } from './index-file.js';
import { looseImport, ownGitDir } from './loose-import.js';
import { looseReader, treeEntriesAt } from './loose-trees.js';
import { nulFields, pathBytes, readWorktree, type WorktreeState } from './snapshot-changes.js';
import { pathRefusal, type RefusedPath } from './verify-path.js';

export function isDispatchPath(path: string): boolean {
  return path === DISPATCH_DIR || path.startsWith(`${DISPATCH_DIR}/`);
}

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
  /** The checkout as the caller last read it (readWorktree()), so the tree is walked once per attempt. */
  readonly worktree?: WorktreeState;
  /**
   * The mission repo, when it is a local path (not a URL): the same commits are then written into
   * it directly and its ref set in the same step, instead of a `git push` from the checkout.
   */
  readonly localRepo?: string;
}

export interface CommitAttemptResult {
  /** The published commit: the work plus flotilla's dispatch files, the attempt's audit record. */
  readonly commit: string;
  /** `commit`'s parent: the work alone, which the gate merges (an empty commit when nothing changed). */
  readonly workCommit: string;
  /** True when the work commit changes anything. */
  readonly changed: boolean;
  readonly ref: string;
  /**
   * Paths the checkout holds that git refuses (verify-path.ts: `.GIT/…`, `git~1`, `..`, a
   * `.gitmodules` link): left out of both commits and the index, so no ref names them; sorted.
   */
  readonly refused: readonly RefusedPath[];
}

/**
 * Two commits: the work (everything but `.planning/dispatch/`) on the base, then flotilla's
 * dispatch files on top. The ref points at the second, so the attempt's prompt and result travel
 * with it as the audit trail; the gate merges the first, so they never reach the integration
 * branch. A user's own `.planning/` files outside `dispatch/` are work like any other file.
 *
 * Both are written in-process into a local mission repo where the trees they touch are loose
 * there (loose-import.ts), else by one `git fast-import`, from the paths `git status` listed: no index is
 * rebuilt and the tree is not walked again, so the cost follows what the attempt changed, not the
 * size of the repository. The checkout's HEAD and index are then moved to the published commit,
 * as a checkout of it on another host would be.
 */
export async function commitAttempt(options: CommitAttemptOptions): Promise<CommitAttemptResult> {
  const { dir } = options;
  const worktree = options.worktree ?? (await readWorktree(dir));
  if (!worktree.head) throw new FlotillaError('git/failed', `${dir}: the checkout has no commit to build on`);
  const base = options.baseCommit ?? worktree.head;
  // Each changed path's bytes, by a key that keeps two names apart that UTF-8 decoding would not.
  const listed = new Map(
    worktree.changes.map((change) => [pathBytes(change).toString('latin1'), pathBytes(change)]),
  );
  // The agent committed on its own: what it committed counts as work too, folded into one commit.
  const agentCommitted = worktree.head !== base;
  if (agentCommitted) {
    for (const path of await changedBetween(dir, base, worktree.head))
      listed.set(path.toString('latin1'), path);
  }
  if (!inProcessGit() || gitMustCommit(dir, [...listed.values()])) {
    return commitWithGit(options, base, [...listed.values()]);
  }
  const paths = new Set([...listed.values()].map((path) => path.toString('utf8')));
  let work = readEntries(
    dir,
    [...paths].filter((path) => !isDispatchPath(path)),
  );
  let dispatch = readEntries(dir, [
    ...new Set([...[...paths].filter(isDispatchPath), ...filesUnder(dir, DISPATCH_DIR)]),
  ]);
  const rules = await cachedWriteRules(gitDirOf(dir));
  if (!rules.modesTrusted) {
    const modes = await modesAt(dir, base, [...paths]);
    work = withModes(work, modes, rules);
    dispatch = withModes(dispatch, modes, rules);
  }
  // The one gate every committed path passes, whichever writer (in-process or fast-import, then
  // a push) publishes it: fast-import and the index writers take any name they are given.
  const refused: RefusedPath[] = [];
  work = withoutRefused(work, refused);
  dispatch = withoutRefused(dispatch, refused);
  refused.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const cleaned = await cleanedByGit(dir, rules, [...work.entries, ...dispatch.entries]);
  if (cleaned) {
    work = withContents(work, cleaned);
    dispatch = withContents(dispatch, cleaned);
  }

  const identity = await cachedCommitIdentity(dir);
  const time = Math.floor(Date.now() / 1000);
  const common = { committer: identity.committer, author: options.author ?? identity.author, time };
  // The same objects, so the same commit ids, written to a named ref: the checkout's HEAD here,
  // the attempt's ref in a local mission repo.
  const commitsFor = (ref: string): ImportCommit[] => [
    { ...common, ref, mark: 1, parent: base, message: options.message, entries: work.entries },
    {
      ...common,
      ref,
      mark: 2,
      parent: ':1',
      message: `${options.message.split('\n')[0]} (dispatch files)`,
      entries: dispatch.entries,
    },
  ];
  const streamFor = (ref: string) => importStream(commitsFor(ref));
  const target = fullRef(options.ref);
  // A local mission repo takes the commits first, setting the attempt's ref. The checkout borrows
  // that repo's objects (repo-cache.ts), so moving its HEAD is a file written (or one `update-ref`
  // where only git can tell); git refuses to point a ref at an object it cannot see, and then the
  // checkout gets its own import.
  const local = options.localRepo;
  const published =
    local === undefined
      ? null
      : ((await importLoose(local, commitsFor(target))) ??
        (await fastImport(local, streamFor(target)).catch(() => removeCrashReports(local).then(() => null))));
  let ids = published;
  if (published) {
    await housekeep(local ?? '');
    const head = published[1] ?? '';
    const branch = attachedBranch(dir);
    const moved =
      writeDetachedHead(dir, head) ||
      (await runGit(['update-ref', '--no-deref', 'HEAD', head], { cwd: dir, allowFailure: true }))
        .exitCode === 0;
    if (!moved) ids = null;
    // HEAD left the branch the agent made (its commits are folded into the work commit above).
    // Branches are shared by every checkout of the host's cache: a later attempt that checked it
    // out would take this attempt's commits up as its own work. A reset drops one left attached.
    else if (branch) await runGit(['update-ref', '-d', branch], { cwd: dir, allowFailure: true });
  }
  ids ??= await fastImport(dir, streamFor('HEAD'));
  const [workCommit = '', commit = ''] = ids;
  // The index follows HEAD, so the checkout is clean at the published commit (verify may continue here).
  const index = [...work.index, ...dispatch.index];
  if (index.length > 0 && !(await writeIndexUpdates(dir, index))) {
    const staged = index.map((changed) => changed.path);
    await runGit(['update-index', '--add', '--remove', '--replace', '-z', '--stdin'], {
      cwd: dir,
      input: `${staged.join('\0')}\0`,
    });
  }
  const changed = agentCommitted ? await treesDiffer(dir, base, workCommit) : work.entries.length > 0;
  // A URL, or a local repo that lacks the base (rewritten meanwhile): an ordinary push.
  if (!published) await pushRef({ dir, ref: options.ref, commit });
  return { commit, workCommit, changed, ref: options.ref, refused };
}

/**
 * commitAttempt() by git's own `add` (commit-by-git.ts), then a push: with FLOTILLA_GIT=cli, and
 * where the in-process reading of the files would not be git's.
 */
async function commitWithGit(
  options: CommitAttemptOptions,
  base: string,
  changed: readonly Buffer[],
): Promise<CommitAttemptResult> {
  const { dir } = options;
  const dispatchPath = (path: Buffer) => isDispatchPath(path.toString('utf8'));
  const dispatch = new Map(changed.filter(dispatchPath).map((path) => [path.toString('latin1'), path]));
  for (const file of filesUnder(dir, DISPATCH_DIR))
    dispatch.set(Buffer.from(file).toString('latin1'), Buffer.from(file));
  const identity = await cachedCommitIdentity(dir);
  // Read before HEAD moves: the branch the agent made goes, as in commitAttempt().
  const branch = attachedBranch(dir);
  const made = await commitByGit({
    dir,
    base,
    work: changed.filter((path) => !dispatchPath(path)),
    dispatch: [...dispatch.values()],
    message: options.message,
    dispatchMessage: `${options.message.split('\n')[0]} (dispatch files)`,
    author: options.author ?? identity.author,
    committer: identity.committer,
    time: Math.floor(Date.now() / 1000),
  });
  if (branch) await runGit(['update-ref', '-d', branch], { cwd: dir, allowFailure: true });
  await pushRef({ dir, ref: options.ref, commit: made.commit });
  const refused = made.refused.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return {
    commit: made.commit,
    workCommit: made.workCommit,
    changed: await treesDiffer(dir, base, made.workCommit),
    ref: options.ref,
    refused,
  };
}

/**
 * `read` without the files git refuses (their deletions stay: removing a name is never refused),
 * each refused one added to `refused`.
 */
function withoutRefused(read: ReadEntries, refused: RefusedPath[]): ReadEntries {
  const out = new Set<string>();
  for (const entry of read.entries) {
    if (!('content' in entry)) continue;
    const refusal = pathRefusal(entry.path, entry.mode);
    if (refusal) {
      out.add(entry.path);
      refused.push({ path: entry.path, refusal });
    }
  }
  if (out.size === 0) return read;
  return {
    entries: read.entries.filter((entry) => !out.has(entry.path)),
    index: read.index.filter((changed) => !out.has(changed.path)),
  };
}

/**
 * The commits written in-process where every tree they touch can be read there, loose or packed
 * (loose-import.ts: the same objects fast-import would write, two processes fewer); null when
 * git must write them.
 */
async function importLoose(repo: string, commits: readonly ImportCommit[]): Promise<string[] | null> {
  const gitDir = await ownGitDir(repo);
  return gitDir ? looseImport(gitDir, commits).catch(() => null) : null;
}

/** Runs one import stream in `cwd`; the ids of its commits, in order. */
async function fastImport(cwd: string, stream: Buffer): Promise<string[]> {
  const imported = await runGit(['fast-import', '--quiet', '--done', '--force'], { cwd, input: stream });
  return imported.stdout.trim().split('\n');
}

/** A failed fast-import leaves `fast_import_crash_<pid>` in the git dir: not in the user's repository. */
async function removeCrashReports(repo: string): Promise<void> {
  for (const gitDir of [join(repo, '.git'), repo]) {
    const names = await readdir(gitDir).catch(() => [] as string[]);
    for (const name of names.filter((n) => n.startsWith('fast_import_crash_'))) {
      await rm(join(gitDir, name), { force: true }).catch(() => undefined);
    }
  }
}

function fullRef(ref: string): string {
  return ref.startsWith('refs/') ? ref : `refs/heads/${ref}`;
}

interface ReadEntries {
  readonly entries: ImportEntry[];
  /**
   * The same paths for the index (directories, such as a nested repository, are left out of both),
   * each file with its lstat taken before its content was read.
   */
  readonly index: CommittedPath[];
}

/** Each path as it is now in the checkout: its content and mode, or a deletion. */
function readEntries(dir: string, paths: readonly string[]): ReadEntries {
  const entries: ImportEntry[] = [];
  const index: CommittedPath[] = [];
  for (const path of [...paths].sort()) {
    const full = join(dir, path);
    const seen = lstatOrNull(full);
    let entry: ImportEntry;
    if (!seen) {
      entry = { path, deleted: true };
    } else if (seen.isSymbolicLink()) {
      entry = { path, mode: '120000', content: readlinkSync(full, { encoding: 'buffer' }) };
    } else if (seen.isFile()) {
      entry = { path, mode: seen.mode & 0o100n ? '100755' : '100644', content: readFileSync(full) };
    } else {
      // A directory git lists as one entry (a nested repository): `git add -A` would not take it either.
      continue;
    }
    entries.push(entry);
    index.push({
      path,
      entry: 'deleted' in entry || !seen ? null : { mode: entry.mode, content: entry.content, seen },
    });
  }
  return { entries, index };
}

/**
 * What git stores for each regular file among `entries` where it converts content on the way in
 * (content-filters.ts: a clean filter, line endings): the files cleaned and hashed by one `git
 * hash-object -w --stdin-paths`, their objects read back. Null where git stores the bytes as they
 * are, the usual case, which costs no process.
 */
async function cleanedByGit(
  dir: string,
  rules: RepoWriteRules,
  entries: readonly ImportEntry[],
): Promise<Map<string, Buffer> | null> {
  const files = entries.flatMap((entry) =>
    'content' in entry && entry.mode !== '120000' ? [entry.path] : [],
  );
  if (files.length === 0) return null;
  if (!contentMayConvert(dir, files, rules)) return null;
  const { stdout } = await runGit(['hash-object', '-w', '--stdin-paths'], {
    cwd: dir,
    input: `${files.map(importPath).join('\n')}\n`,
  });
  const ids = stdout.trim().split('\n');
  const stores = objectStores(dir);
  const cleaned = new Map<string, Buffer>();
  files.forEach((path, i) => {
    const body = readStoredObject(stores, ids[i] ?? '', 'blob');
    if (!body) throw new FlotillaError('git/failed', `${dir}: git hash-object did not store ${path}`);
    cleaned.set(path, body);
  });
  return cleaned;
}

/** The modes `commit` holds at `paths` (and below those that are folders there). */
async function modesAt(dir: string, commit: string, paths: readonly string[]): Promise<Map<string, string>> {
  const entries = await treeEntriesAt(dir, await looseReader(dir), commit, paths, 100_000);
  return new Map(entries.map((entry) => [entry.path, entry.mode]));
}

type FileMode = '100644' | '100755' | '120000';

/** `read` with each file's mode and content (not a deletion's) as `change` gives them. */
function mapFiles(
  read: ReadEntries,
  change: (path: string, mode: FileMode, content: Uint8Array) => { mode: FileMode; content: Uint8Array },
): ReadEntries {
  return {
    entries: read.entries.map((entry) =>
      'content' in entry ? { ...entry, ...change(entry.path, entry.mode, entry.content) } : entry,
    ),
    index: read.index.map((changed) =>
      changed.entry
        ? {
            ...changed,
            entry: {
              ...changed.entry,
              ...change(changed.path, changed.entry.mode as FileMode, changed.entry.content),
            },
          }
        : changed,
    ),
  };
}

/**
 * `read` with the modes `git add` gives where the repository does not trust the file system's
 * (core.fileMode or core.symlinks off: a checkout on a file system without them): a file keeps
 * the executable bit the base commit gave it, and a new one is not executable; a file standing
 * for a link the base commit holds stays a link, its text the target.
 */
function withModes(
  read: ReadEntries,
  modes: ReadonlyMap<string, string>,
  rules: Pick<RepoWriteRules, 'executableBit' | 'symlinks'>,
): ReadEntries {
  const modeOf = (path: string, onDisk: FileMode): FileMode => {
    if (onDisk === '120000') return onDisk;
    const before = modes.get(path);
    if (!rules.symlinks && before === '120000') return before;
    if (rules.executableBit) return onDisk;
    return before === '100755' || before === '100644' ? before : '100644';
  };
  return mapFiles(read, (path, mode, content) => ({ mode: modeOf(path, mode), content }));
}

/** `read` with the contents git stores where `cleaned` has them. */
function withContents(read: ReadEntries, cleaned: ReadonlyMap<string, Buffer>): ReadEntries {
  return mapFiles(read, (path, mode, content) => ({ mode, content: cleaned.get(path) ?? content }));
}

/** Every file below `dir/sub`, as repository paths (flotilla's small dispatch folder). */
function filesUnder(dir: string, sub: string): string[] {
  let found: Dirent[];
  try {
    found = readdirSync(join(dir, sub), { recursive: true, withFileTypes: true });
  } catch {
    return [];
  }
  return found
    .filter((entry) => !entry.isDirectory())
    .map((entry) => join(entry.parentPath ?? entry.path, entry.name).slice(dir.length + 1));
}

/** The paths that differ between two commits, as git names them (bytes). */
async function changedBetween(dir: string, from: string, to: string): Promise<Buffer[]> {
  const args = ['diff', '--name-only', '--no-renames', '-z', from, to, '--'];
  return nulFields((await runGitBytes(args, { cwd: dir })).stdout).filter((path) => path.length > 0);
}

async function treesDiffer(dir: string, a: string, b: string): Promise<boolean> {
  const [first, second] = (await readGit(['rev-parse', `${a}^{tree}`, `${b}^{tree}`], { cwd: dir })).split(
    '\n',
  );
  return first !== second;
}

export interface PushRefOptions {
  readonly dir: string;
  /** Published under this name: a full ref or a branch name. */
  readonly ref: string;
  /** What to publish; the checkout's HEAD when not given. */
  readonly commit?: string;
}

/**
 * Force is right here: an attempt ref belongs to one attempt, and a re-delivered run must be able
 * to replace what an earlier delivery pushed.
 */
export async function pushRef(options: PushRefOptions): Promise<void> {
  const args = [
    'push',
    '--force',
    '--quiet',
    'origin',
    `${options.commit ?? 'HEAD'}:${fullRef(options.ref)}`,
  ];
  await retryOnLockContention(
    () => runGit([...NO_HOOKS, ...args], { cwd: options.dir, allowFailure: true }),
    (result) => describeGitFailure(args, result),
  );
}
