/**
 * A host's clone of a mission repo, made once and fetched afterwards. Every attempt on the host
 * checks out a worktree from it, so objects are downloaded once per host, not once per task.
 */
import { createHash, randomBytes } from 'node:crypto';
import { appendFile, mkdir, readFile, rename, rm, utimes } from 'node:fs/promises';
import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import {
  describeGitFailure,
  isLockContention,
  readGit,
  resolveCommit,
  retryOnLockContention,
  runGit,
} from './git.js';
import { exists } from './git-files.js';
import { readRefFile } from './ref-files.js';

export interface RepoCache {
  /** The mission repo as given to git: an absolute path or a URL. */
  readonly repo: string;
  /** The clone's directory (a regular clone without a checkout; its own working tree is never used). */
  readonly dir: string;
  /**
   * Brings `refs/remotes/origin/*` up to date with the mission repo (but see below for a local
   * one). Calls that run git are serialised. With
   * `branches` (branch names, or full refs such as attempt refs), only those are fetched: a full
   * fetch lists every branch of the mission repo, and a targeted one costs the same at any size
   * (bench/scale.js: 10,000 branches made a full fetch 250–420 ms against 40–55 ms for one). Attempt
   * refs live outside `refs/heads/`, so a full fetch no longer grows with the attempts of a mission.
   * A targeted fetch from a local mission repo whose objects the cache borrows does nothing: a
   * checkout sees every object there, and remoteCommit() reads the refs there.
   */
  fetch(branches?: readonly string[]): Promise<void>;
  /**
   * The commit the cache's copy of a branch or ref points at after the last fetch (trackingRef()),
   * or null. A cache of a local mission repo keeps no copies: it reads the repo's own ref, as it is
   * at the call, without waiting for the cache's other work (exclusive()).
   */
  remoteCommit(branch: string): Promise<string | null>;
  /**
   * Runs `task` while no other fetch, push or worktree change runs on this cache in this process.
   * Git locks refs itself, but concurrent ref writers in one repository fail with "cannot lock ref"
   * rather than wait, so the writers queue here instead.
   */
  exclusive<T>(task: () => Promise<T>): Promise<T>;
  /** A local mission repo's git directory (where its refs and objects are); null for a URL. */
  readonly localGitDir: string | null;
}

export interface OpenRepoCacheOptions {
  readonly repo: string;
  /** Default `~/.cache/flotilla/repos` (or `$XDG_CACHE_HOME/flotilla/repos`). */
  readonly cacheDir?: string;
}

export function defaultCacheDir(): string {
  const base = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(base, 'flotilla', 'repos');
}

/** A URL (`https://…`, `ssh://…`, `file://…`) or scp-like `user@host:path`; anything else is a path. */
export function isRepoUrl(repo: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(repo) || /^[^/\\:@]+@[^/\\:]+:/.test(repo);
}

/** Paths are made absolute, so every host and every cache entry names the repo the same way. */
export function normaliseRepo(repo: string): string {
  return isRepoUrl(repo) || isAbsolute(repo) ? repo : resolve(repo);
}

function cacheKey(repo: string): string {
  return createHash('sha256').update(repo).digest('hex').slice(0, 16);
}

/** Per-directory promise chains; module-level so two `openRepoCache` calls for one repo share them. */
const chains = new Map<string, Promise<unknown>>();
/** Caches whose use this process recorded already (once is enough: a process lives for hours). */
const touched = new Set<string>();
/** Clones in progress, so concurrent first uses in one process clone once. */
const opening = new Map<string, Promise<void>>();

function serialise<T>(key: string, task: () => Promise<T>): Promise<T> {
  // The stored chain never rejects, so one failed task does not fail the tasks queued behind it.
  const previous = chains.get(key) ?? Promise.resolve();
  const next = previous.then(task);
  const settled = next.then(
    () => undefined,
    () => undefined,
  );
  chains.set(key, settled);
  void settled.then(() => {
    if (chains.get(key) === settled) chains.delete(key);
  });
  return next;
}

async function cloneOnce(repo: string, dir: string): Promise<void> {
  if (exists(join(dir, '.git'))) return;
  await mkdir(join(dir, '..'), { recursive: true });
  // Clone beside the final place and rename: a crash never leaves a half clone where the next run
  // would trust it, and of two processes cloning at once, the second rename loses and is dropped.
  const temporary = `${dir}.tmp-${randomBytes(4).toString('hex')}`;
  try {
    // A local mission repo is borrowed from, not copied (`--shared`: its objects are the cache's
    // alternates): a checkout sees a commit the moment it is in the mission repo, without a fetch.
    const shared = isRepoUrl(repo) ? [] : ['--shared'];
    await runGit(['clone', '--no-checkout', '--no-tags', '--quiet', ...shared, '--', repo, temporary]);
    // The cache is shared by concurrent worktrees; an automatic gc repacking refs under them would
    // race their ref updates. It is a disposable cache, so it may simply grow.
    await runGit(['config', 'gc.auto', '0'], { cwd: temporary });
    await runGit(['config', 'maintenance.auto', 'false'], { cwd: temporary });
    await rename(temporary, dir);
  } catch (error) {
    await rm(temporary, { recursive: true, force: true });
    if (exists(join(dir, '.git'))) return;
    throw error;
  }
}

export async function openRepoCache(options: OpenRepoCacheOptions): Promise<RepoCache> {
  const repo = normaliseRepo(options.repo);
  const dir = join(resolve(options.cacheDir ?? defaultCacheDir()), cacheKey(repo));
  let pending = opening.get(dir);
  if (!pending) {
    pending = cloneOnce(repo, dir).finally(() => opening.delete(dir));
    opening.set(dir, pending);
  }
  await pending;
  if (!touched.has(dir)) {
    // The directory's time is the cache's last use, by which a host prunes old caches (prune.ts).
    touched.add(dir);
    const now = new Date();
    await utimes(dir, now, now).catch(() => undefined);
  }

  const exclusive = <T>(task: () => Promise<T>): Promise<T> => serialise(dir, task);
  const fetchArgs = ['fetch', '--prune', '--no-tags', '--quiet', 'origin'];
  const local = isRepoUrl(repo) ? null : await sharedObjects(repo, dir);
  return {
    repo,
    dir,
    exclusive,
    localGitDir: local,
    fetch: async (branches) => {
      // Nothing to copy from a local mission repo (remoteCommit() reads its refs, and reports a
      // missing one as null), and nothing to wait for behind the cache's other work.
      if (local && branches && branches.length > 0) return;
      await exclusive(async () => {
        if (branches && branches.length > 0) {
          const refspecs = branches.map((name) => `+${remoteName(name)}:${trackingRef(name)}`);
          const args = ['fetch', '--no-tags', '--quiet', 'origin', ...refspecs];
          for (let attempt = 1; attempt <= LOCK_RETRIES; attempt++) {
            const targeted = await runGit(args, { cwd: dir, allowFailure: true });
            if (targeted.exitCode === 0) return;
            if (!isLockContention(targeted.stderr)) break;
            await new Promise((done) => setTimeout(done, 100 * attempt + Math.floor(Math.random() * 100)));
          }
          // A branch the mission repo lacks: the full fetch below leaves the refs as they are, so
          // callers report a missing branch as before.
        }
        await retryOnLockContention(
          () => runGit(fetchArgs, { cwd: dir, allowFailure: true }),
          (result) => describeGitFailure(fetchArgs, result),
        );
      });
    },
    remoteCommit: async (branch) => {
      // A local mission repo's refs are read where they are, as they are now: no lock, no git.
      if (local) return readLocalRef(local, branch);
      const copy = await readRefFile(join(dir, '.git'), trackingRef(branch));
      if (copy.kind === 'commit') return copy.commit;
      return copy.kind === 'missing' ? null : resolveCommit(dir, trackingRef(branch));
    },
  };
}

/**
 * A cache of a local mission repo that borrows the repo's objects (its alternates; `clone
 * --shared` sets them, and a cache cloned before that gets them here, once per process): the
 * mission repo's git directory, or null when it cannot be read and fetches stay ordinary.
 */
const borrowed = new Map<string, Promise<string | null>>();

function sharedObjects(repo: string, dir: string): Promise<string | null> {
  let known = borrowed.get(dir);
  if (!known) {
    known = borrowObjects(repo, dir).catch(() => null);
    borrowed.set(dir, known);
  }
  return known;
}

async function borrowObjects(repo: string, dir: string): Promise<string | null> {
  const common = await runGit(['rev-parse', '--path-format=absolute', '--git-common-dir'], {
    cwd: repo,
    allowFailure: true,
  });
  if (common.exitCode !== 0) return null;
  const gitDir = common.stdout.trim();
  const objects = join(gitDir, 'objects');
  const file = join(dir, '.git', 'objects', 'info', 'alternates');
  const listed = await readFile(file, 'utf8').catch(() => '');
  if (!listed.split('\n').some((line) => line.trim() === objects)) {
    await mkdir(join(dir, '.git', 'objects', 'info'), { recursive: true });
    await appendFile(file, `${listed === '' || listed.endsWith('\n') ? '' : '\n'}${objects}\n`);
  }
  return gitDir;
}

/**
 * A branch's or ref's commit in a local mission repo (its git directory `gitDir`), from the repo's
 * ref files (ref-files.ts) or, where only git can tell, one `for-each-ref`; null when missing.
 */
async function readLocalRef(gitDir: string, name: string): Promise<string | null> {
  const ref = remoteName(name);
  const value = await readRefFile(gitDir, ref);
  if (value.kind !== 'unknown') return value.kind === 'commit' ? value.commit : null;
  const listed = await runGit(['for-each-ref', '--format=%(objectname) %(refname)', ref], {
    cwd: gitDir,
    allowFailure: true,
  });
  // A pattern also matches the refs below it (`refs/heads/a` lists `refs/heads/a/b`): the exact name only.
  for (const line of listed.exitCode === 0 ? listed.stdout.split('\n') : []) {
    const [commit, listedRef] = line.split(' ');
    if (commit && listedRef === ref) return commit;
  }
  return null;
}

const LOCK_RETRIES = 4;

/** A branch name (`flotilla/m`) or a full ref (`refs/flotilla/m/t/a1`) as the mission repo names it. */
function remoteName(name: string): string {
  return name.startsWith('refs/') ? name : `refs/heads/${name}`;
}

/**
 * Where a cache keeps its copy of a mission repo's ref: branches under `refs/remotes/origin/`, and
 * refs outside `refs/heads/` (attempt refs) under their own name, which the cache never writes
 * otherwise.
 */
export function trackingRef(name: string): string {
  return name.startsWith('refs/') ? name : `refs/remotes/origin/${name}`;
}

/** The commit the mission repo's HEAD pointed at when the cache was cloned, or null (empty repo). */
export async function remoteHeadCommit(cache: RepoCache): Promise<string | null> {
  const head = await runGit(['symbolic-ref', '--quiet', 'refs/remotes/origin/HEAD'], {
    cwd: cache.dir,
    allowFailure: true,
  });
  if (head.exitCode !== 0) return null;
  return resolveCommit(cache.dir, head.stdout.trim());
}

/** The absolute git directory shared by a worktree and its cache. */
export async function commonGitDir(worktree: string): Promise<string> {
  return readGit(['rev-parse', '--path-format=absolute', '--git-common-dir'], { cwd: worktree });
}
