/**
 * Makes a mission's workspace ready at submit: a git repository every host can
 * reach, with the mission's integration branch at the base commit.
 */
import { mkdir, readdir, realpath, rm, stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { integrationBranch } from '../../shared/contracts.js';
import { FlotillaError } from '../../shared/errors.js';
import type { PreparedWorkspace, PrepareWorkspaceOptions } from '../../shared/prepare-workspace.js';
import { identityArgs, isAncestor, NO_HOOKS, readGit, resolveCommit, runGit } from './git.js';
import { isRepoUrl, openRepoCache, type RepoCache, remoteHeadCommit } from './repo-cache.js';

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

/**
 * `git init`, then one commit of whatever the folder holds (`.gitignore` respected), or an empty
 * one. Returns the committed paths, so the user is told what is now in history.
 */
async function initialiseFolder(dir: string): Promise<string[]> {
  await runGit(['init', '--quiet'], { cwd: dir });
  const hasFiles = (await readdir(dir)).some((name) => name !== '.git');
  if (hasFiles) await runGit(['add', '-A'], { cwd: dir });
  await runGit(
    [...NO_HOOKS, ...(await identityArgs(dir)), 'commit', '--quiet', '--allow-empty', '-m', INITIAL_MESSAGE],
    {
      cwd: dir,
    },
  );
  const listed = await readGit(['ls-files', '-z'], { cwd: dir });
  return listed.split('\0').filter(Boolean);
}

/** Paths `git status` reports: edits, staged changes and untracked files the mission will not see. */
async function uncommittedPaths(dir: string): Promise<string[]> {
  const status = await runGit(['status', '--porcelain', '-z'], { cwd: dir, allowFailure: true });
  if (status.exitCode !== 0) return [];
  return status.stdout
    .split('\0')
    .filter((entry) => entry.length > 3)
    .map((entry) => entry.slice(3));
}

/** A few names are enough to recognise the folder; `.env`-like files are the ones worth seeing. */
function someNames(paths: readonly string[], limit = 5): string {
  const shown = paths.slice(0, limit).join(', ');
  return paths.length > limit ? `${shown}, … ${paths.length - limit} more` : shown;
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
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

/**
 * The loader refuses these with file and line already; a library caller that built a MissionSpec by
 * hand gets the same refusal here, before anything is created.
 */
async function checkLocalPath(requested: string): Promise<'exists' | 'create'> {
  const found = await stat(requested).catch(() => undefined);
  if (found?.isDirectory()) return 'exists';
  if (found) {
    throw new FlotillaError(
      'mission/invalid',
      `workspace ${requested}: expected a folder (a git repository, or a folder to make one), got a file`,
    );
  }
  if (!(await isDirectory(dirname(requested)))) {
    throw new FlotillaError(
      'mission/invalid',
      `workspace ${requested}: no such folder, and its parent ${dirname(requested)} does not exist either`,
    );
  }
  return 'create';
}

async function prepareLocal(options: PrepareWorkspaceOptions): Promise<PreparedWorkspace> {
  const requested = resolve(options.workspace);
  const notes: string[] = [];
  const created = (await checkLocalPath(requested)) === 'create';
  if (created) await mkdir(requested);
  try {
    return await prepareLocalRepo(requested, created, options, notes);
  } catch (error) {
    // A folder we made for a mission that could not start (git missing, say) is not left behind.
    if (created) await rm(requested, { recursive: true, force: true });
    throw error;
  }
}

async function prepareLocalRepo(
  requested: string,
  created: boolean,
  options: PrepareWorkspaceOptions,
  notes: string[],
): Promise<PreparedWorkspace> {
  const repo = await realpath(requested);
  if (!(await isRepositoryRoot(repo))) {
    const committed = await initialiseFolder(repo);
    if (created) notes.push(`workspace ${repo} did not exist: created it as a new git repository`);
    else if (committed.length === 0)
      notes.push(`workspace ${repo} was an empty folder: made it a git repository`);
    else
      notes.push(
        `workspace ${repo} was not a git repository: made it one and committed its ${plural(committed.length, 'file')} (${someNames(committed)}) as '${INITIAL_MESSAGE}'`,
      );
  } else {
    const dirty = await uncommittedPaths(repo);
    if (dirty.length > 0)
      notes.push(
        `workspace ${repo} has uncommitted changes (${plural(dirty.length, 'path')}: ${someNames(dirty)}): they are not part of the mission, which starts from committed work only`,
      );
  }

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
  return { repo, baseCommit, branch, notes };
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
  return { repo: cache.repo, baseCommit, branch, notes: [] };
}

/** The workers' git makes a submitted mission's workspace ready (shared/prepare-workspace.ts). */
export async function prepareWorkspace(options: PrepareWorkspaceOptions): Promise<PreparedWorkspace> {
  return isRepoUrl(options.workspace) ? prepareRemote(options) : prepareLocal(options);
}
