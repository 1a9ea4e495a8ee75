/**
 * Delivery's git half: the integration branch pushed to the workspace's remote, with git's own
 * credentials (ssh keys, a credential helper, a token in the workspace URL); hooks off, as for
 * every push flotilla makes. A local workspace pushes to one of its remotes (`origin` by default)
 * or a URL; a URL workspace already holds the branch (hosts push there), so it is only checked, or
 * pushed from the host's clone to another URL.
 */
import { isAbsolute } from 'node:path';
import { NO_HOOKS, runGit } from '../../workspace/git.js';
import { isRepoUrl, openRepoCache, trackingRef } from '../../workspace/repo-cache.js';
import { DeliveryError } from './delivery-error.js';
import { withoutCredentials } from './remote-url.js';

export interface PushResult {
  /** The remote as the mission names it (`origin`, or a URL without credentials). */
  readonly remote: string;
  /** The URL it names, as git uses it (credentials included: never shown or stored). */
  readonly url: string;
  /** The commit the remote's branch holds now. */
  readonly commit: string;
  /** Where git resolves `url` from (a local workspace's remote may be a relative path). */
  readonly cwd?: string;
}

export interface PushInput {
  /** The mission repo as hosts clone it: an absolute path or a URL. */
  readonly repo: string;
  readonly branch: string;
  /** `deliver.push`: a remote name or a URL; default `origin`. */
  readonly push?: string;
  readonly cacheDir: string;
}

export async function pushBranch(input: PushInput): Promise<PushResult> {
  return isRepoUrl(input.repo) ? pushFromUrlWorkspace(input) : pushFromLocalWorkspace(input);
}

async function pushFromLocalWorkspace(input: PushInput): Promise<PushResult> {
  const target = input.push ?? 'origin';
  const named = !isRepoUrl(target) && !isAbsolute(target);
  const url = named ? await remoteUrl(input.repo, target) : target;
  const tip = await localCommit(input.repo, `refs/heads/${input.branch}`);
  if (!tip) {
    throw new DeliveryError(`branch ${input.branch} is not in ${input.repo} (was it deleted?)`, false);
  }
  await push(input.repo, target, `refs/heads/${input.branch}:refs/heads/${input.branch}`);
  return { remote: named ? target : withoutCredentials(target), url, commit: tip, cwd: input.repo };
}

async function pushFromUrlWorkspace(input: PushInput): Promise<PushResult> {
  const target = input.push;
  if (target === undefined || target === 'origin' || target === input.repo) {
    const commit = await remoteBranchCommit(input.repo, input.branch);
    if (!commit)
      throw new DeliveryError(`branch ${input.branch} is not on ${withoutCredentials(input.repo)}`, true);
    return { remote: withoutCredentials(input.repo), url: input.repo, commit };
  }
  if (!isRepoUrl(target)) {
    throw new DeliveryError(
      `deliver.push '${target}' names a remote, but the workspace is the URL ${withoutCredentials(input.repo)}, which has none: give a URL, or leave push out to deliver to the workspace itself`,
      false,
    );
  }
  const cache = await openRepoCache({ repo: input.repo, cacheDir: input.cacheDir });
  await cache.fetch([input.branch]);
  const tip = await cache.remoteCommit(input.branch);
  if (!tip)
    throw new DeliveryError(`branch ${input.branch} is not on ${withoutCredentials(input.repo)}`, true);
  await cache.exclusive(() =>
    push(cache.dir, target, `${trackingRef(input.branch)}:refs/heads/${input.branch}`),
  );
  return { remote: withoutCredentials(target), url: target, commit: tip };
}

async function remoteUrl(repo: string, name: string): Promise<string> {
  const result = await runGit(['remote', 'get-url', '--push', name], { cwd: repo, allowFailure: true });
  if (result.exitCode !== 0) {
    throw new DeliveryError(
      `the workspace ${repo} has no remote '${name}' (add one with git remote add ${name} URL, or set deliver.push to a URL)`,
      false,
    );
  }
  return result.stdout.trim();
}

async function localCommit(repo: string, ref: string): Promise<string | null> {
  const result = await runGit(['rev-parse', '--verify', '--quiet', `${ref}^{commit}`], {
    cwd: repo,
    allowFailure: true,
  });
  return result.exitCode === 0 ? result.stdout.trim() : null;
}

/** The commit a remote's branch is at, or null when it has no such branch. */
export async function remoteBranchCommit(url: string, branch: string, cwd?: string): Promise<string | null> {
  const result = await runGit(['ls-remote', '--', url, `refs/heads/${branch}`], {
    ...(cwd ? { cwd } : {}),
    allowFailure: true,
    timeoutMs: NETWORK_TIMEOUT_MS,
  });
  if (result.exitCode !== 0)
    throw new DeliveryError(gitMessage(`git ls-remote ${withoutCredentials(url)}`, result.stderr), true);
  return result.stdout.split('\t')[0]?.trim() || null;
}

/** The branch a remote's HEAD names (its default branch), or null when it does not say. */
export async function remoteDefaultBranch(url: string, cwd?: string): Promise<string | null> {
  const result = await runGit(['ls-remote', '--symref', '--', url, 'HEAD'], {
    ...(cwd ? { cwd } : {}),
    allowFailure: true,
    timeoutMs: NETWORK_TIMEOUT_MS,
  });
  if (result.exitCode !== 0) return null;
  return /^ref: refs\/heads\/(\S+)\s+HEAD$/m.exec(result.stdout)?.[1] ?? null;
}

/** A push or ls-remote that hangs is a remote that is down: failed, and tried again later. */
const NETWORK_TIMEOUT_MS = 120_000;

async function push(cwd: string, target: string, refspec: string): Promise<void> {
  const args = [...NO_HOOKS, 'push', '--porcelain', '--', target, refspec];
  const result = await runGit(args, { cwd, allowFailure: true, timeoutMs: NETWORK_TIMEOUT_MS });
  if (result.exitCode === 0) return;
  const text = `${result.stdout}\n${result.stderr}`;
  throw new DeliveryError(gitMessage(`git push ${withoutCredentials(target)}`, text), !isRefusal(text));
}

/**
 * A remote that refused the push (a protected branch, a diverged branch, no rights, a bad
 * credential, no such repository) refuses it again; anything else (a remote that is down, a
 * network fault) may pass later.
 */
function isRefusal(text: string): boolean {
  return /\[rejected\]|\[remote rejected\]|protected branch|non-fast-forward|permission denied|authentication failed|could not read username|access denied|not found|does not appear to be a git repository|403/i.test(
    text,
  );
}

/** git's own words for the failure, the lines that say what happened, credentials taken out. */
function gitMessage(what: string, text: string): string {
  const lines = text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && line !== 'Done' && !line.startsWith('To '));
  const said = lines.filter((line) => /error|fatal|rejected|denied|!/i.test(line));
  return withoutCredentials(`${what}: ${(said.length ? said : lines).slice(0, 3).join('; ') || 'failed'}`);
}
