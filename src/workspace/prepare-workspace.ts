/**
 * Makes a mission's workspace ready at submit: a git repository every host can
 * reach, with the mission's integration branch at the base commit.
 */
import { mkdir, readdir, realpath, stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { integrationBranch } from '../shared/contracts.js';
import { FlotillaError } from '../shared/errors.js';
import { identityArgs, isAncestor, NO_HOOKS, readGit, resolveCommit, runGit } from './git.js';
import { isRepoUrl, openRepoCache, type RepoCache, remoteHeadCommit } from './repo-cache.js';

export interface PrepareWorkspaceOptions {
  /** A path (absolute, or relative to the working directory) or a URL. */
  readonly workspace: string;
  /** A branch, tag or commit; default the repo's HEAD. */
  readonly base?: string;
  readonly missionId: string;
  /** Where a URL workspace is cloned to create the branch; default as for worker hosts. */
  readonly cacheDir?: string;
}

export interface PreparedWorkspace {
  /** What hosts clone: an absolute path or the URL as given. */
  readonly repo: string;
  readonly baseCommit: string;
  readonly branch: string;
}

const INITIAL_MESSAGE = 'flotilla: initial commit';

async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch {
    return false;
  }
}

/**
 * True when `dir` itself is a repository: the top of a working tree or a bare repository. A plain
 * folder inside some other repository is not; it becomes a repository of its own, since the user
 * named that folder as the workspace, not the repository around it.
 */
async function isRepositoryRoot(dir: string): Promise<boolean> {
  const bare = await runGit(['rev-parse', '--is-bare-repository'], { cwd: dir, allowFailure: true });
  if (bare.exitCode !== 0) return false;
  const self = await realpath(dir);
  const probe = bare.stdout.trim() === 'true' ? ['--absolute-git-dir'] : ['--show-toplevel'];
  const top = await runGit(['rev-parse', ...probe], { cwd: dir, allowFailure: true });
  return top.exitCode === 0 && (await realpath(top.stdout.trim()).catch(() => '')) === self;
}

/** `git init`, then one commit of whatever the folder holds (`.gitignore` respected), or an empty one. */
async function initialiseFolder(dir: string): Promise<void> {
  await runGit(['init', '--quiet'], { cwd: dir });
  const hasFiles = (await readdir(dir)).some((name) => name !== '.git');
  if (hasFiles) await runGit(['add', '-A'], { cwd: dir });
  await runGit(
    [...NO_HOOKS, ...(await identityArgs(dir)), 'commit', '--quiet', '--allow-empty', '-m', INITIAL_MESSAGE],
    {
      cwd: dir,
    },
  );
}

/**
 * A repository without commits gets an empty root commit on its current branch. Plumbing, so the
 * user's index and files (perhaps staged already) are left exactly as they were.
 */
async function createRootCommit(dir: string): Promise<string> {
  const tree = await readGit(['mktree'], { cwd: dir, input: '' });
  const commit = await readGit([...(await identityArgs(dir)), 'commit-tree', tree, '-m', INITIAL_MESSAGE], {
    cwd: dir,
  });
  await runGit(['update-ref', '-m', INITIAL_MESSAGE, 'HEAD', commit, ''], { cwd: dir });
  return commit;
}

async function resolveBase(
  cwd: string,
  repo: string,
  base: string | undefined,
  candidates: string[],
): Promise<string | null> {
  if (base === undefined) return null;
  for (const revision of candidates) {
    const commit = await resolveCommit(cwd, revision);
    if (commit) return commit;
  }
  throw new FlotillaError('mission/invalid', `${repo}: base '${base}' does not name a commit`);
}

/**
 * True when a re-submitted mission made the integration branch already and it still grows from the
 * base: it is kept, since it may hold approved work. False when there is no branch yet.
 */
async function keepsExistingBranch(
  cwd: string,
  repo: string,
  branch: string,
  existing: string | null,
  baseCommit: string,
) {
  if (existing === null) return false;
  if (await isAncestor(cwd, baseCommit, existing)) return true;
  const at = existing.slice(0, 12);
  throw new FlotillaError(
    'git/failed',
    `${repo}: branch ${branch} exists at ${at}, which does not contain base ${baseCommit.slice(0, 12)}`,
  );
}

async function prepareLocal(options: PrepareWorkspaceOptions): Promise<PreparedWorkspace> {
  const requested = resolve(options.workspace);
  if (!(await isDirectory(requested))) await mkdir(requested, { recursive: true });
  const repo = await realpath(requested);
  if (!(await isRepositoryRoot(repo))) await initialiseFolder(repo);

  const branch = integrationBranch(options.missionId);
  const base = options.base;
  const baseCommit =
    (await resolveBase(repo, repo, base, [`refs/heads/${base}`, `refs/tags/${base}`, `${base}`])) ??
    (await resolveCommit(repo, 'HEAD')) ??
    (await createRootCommit(repo));
  const existing = await resolveCommit(repo, `refs/heads/${branch}`);
  if (!(await keepsExistingBranch(repo, repo, branch, existing, baseCommit))) {
    const reason = `flotilla: mission ${options.missionId}`;
    // The empty old value makes the update fail rather than move a branch created meanwhile.
    await runGit(['update-ref', '-m', reason, `refs/heads/${branch}`, baseCommit, ''], { cwd: repo });
  }
  return { repo, baseCommit, branch };
}

/** An empty remote gets its first commit made in the cache (plumbing: the cache has no checkout). */
async function remoteBaseCommit(cache: RepoCache, base: string | undefined): Promise<string> {
  const named = await resolveBase(cache.dir, cache.repo, base, [`refs/remotes/origin/${base}`, `${base}`]);
  if (named) return named;
  const head = await remoteHeadCommit(cache);
  if (head) return head;
  const tree = await readGit(['mktree'], { cwd: cache.dir, input: '' });
  return readGit([...(await identityArgs(cache.dir)), 'commit-tree', tree, '-m', INITIAL_MESSAGE], {
    cwd: cache.dir,
  });
}

async function prepareRemote(options: PrepareWorkspaceOptions): Promise<PreparedWorkspace> {
  const cache = await openRepoCache({ repo: options.workspace, cacheDir: options.cacheDir });
  await cache.fetch();
  const branch = integrationBranch(options.missionId);
  const baseCommit = await remoteBaseCommit(cache, options.base);
  const existing = await cache.remoteCommit(branch);
  if (!(await keepsExistingBranch(cache.dir, cache.repo, branch, existing, baseCommit))) {
    const args = ['push', '--quiet', 'origin', `${baseCommit}:refs/heads/${branch}`];
    await cache.exclusive(() => runGit([...NO_HOOKS, ...args], { cwd: cache.dir }));
  }
  return { repo: cache.repo, baseCommit, branch };
}

export async function prepareWorkspace(options: PrepareWorkspaceOptions): Promise<PreparedWorkspace> {
  return isRepoUrl(options.workspace) ? prepareRemote(options) : prepareLocal(options);
}
