/**
 * A small typed wrapper around the git executable: argument arrays only (no shell), an environment
 * that makes git's output predictable, and the two error codes flotilla uses for git.
 */
import { spawn } from 'node:child_process';
import { FlotillaError } from '../../shared/errors.js';
import { redactUrlCredentials } from '../../shared/url-credentials.js';
import { credentialConfig } from './git-credentials.js';
import { gitVersionProblem } from './git-version.js';

export interface GitOptions {
  /** Directory to run in (passed as `git -C <cwd>`, so a missing directory is git's error, not a spawn error). */
  readonly cwd?: string;
  /** Extra environment; merged over the cleaned process environment. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Bytes written to git's stdin. */
  readonly input?: string | Uint8Array;
  /** When true, a non-zero exit is returned instead of thrown. */
  readonly allowFailure?: boolean;
  /** Output above this many bytes is cut and `truncated` is set; the command is not failed for it. */
  readonly maxBuffer?: number;
  readonly timeoutMs?: number;
}

export interface GitResult {
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
  readonly truncated: boolean;
}

/** Network operations (fetch, push, clone) should fail, not hang a job for ever. */
const DEFAULT_TIMEOUT_MS = 10 * 60_000;
const DEFAULT_MAX_BUFFER = 64 * 1024 * 1024;

/**
 * Variables that would point git at another repository or index. They are set when flotilla runs
 * inside a git hook (a test run from pre-commit, say) and would silently redirect every command.
 */
const REPO_LOCAL_VARIABLES = [
  'GIT_DIR',
  'GIT_WORK_TREE',
  'GIT_INDEX_FILE',
  'GIT_OBJECT_DIRECTORY',
  'GIT_ALTERNATE_OBJECT_DIRECTORIES',
  'GIT_COMMON_DIR',
  'GIT_PREFIX',
  'GIT_NAMESPACE',
];

function gitEnvironment(args: readonly string[], extra: GitOptions['env']): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !REPO_LOCAL_VARIABLES.includes(key)) env[key] = value;
  }
  // English messages, so push rejections and conflicts can be recognised; never wait for a password.
  env.LC_ALL = 'C';
  env.LANGUAGE = 'C';
  env.GIT_TERMINAL_PROMPT = '0';
  for (const [key, value] of Object.entries(extra ?? {})) {
    if (value === undefined) delete env[key];
    else env[key] = value;
  }
  credentialConfig(args, env);
  return env;
}

function firstLine(text: string): string {
  const line = text
    .split('\n')
    .map((l) => l.trim())
    .find((l) => l.length > 0);
  return line ?? '';
}

/** git's words when a remote wants a credential this host does not have. */
const NO_CREDENTIAL =
  /could not read (Username|Password)|terminal prompts disabled|Authentication failed|HTTP Basic: Access denied|returned error: 40[13]/i;

/** Where the docs say how a host gets a repository's credential. */
const CREDENTIAL_HINT =
  'this host has no credential for that repository: give its git a credential helper or GIT_ASKPASS (docs/OPERATING.md, "Private repositories")';

/**
 * Describes a failed command the way the error contract asks: `git <args>: <stderr first line>`.
 * A credential in a URL of the command or of git's words is masked (url-credentials.ts); a
 * missing credential says what to set up.
 */
export function describeGitFailure(
  args: readonly string[],
  result: Pick<GitResult, 'stderr' | 'stdout'>,
): string {
  const reason = firstLine(result.stderr) || firstLine(result.stdout) || 'failed';
  const hint = NO_CREDENTIAL.test(result.stderr) ? `; ${CREDENTIAL_HINT}` : '';
  return redactUrlCredentials(`git ${args.join(' ')}: ${reason}${hint}`);
}

interface RawRun {
  readonly exitCode: number | null;
  readonly stdout: Buffer;
  readonly stderr: string;
  readonly truncated: boolean;
  readonly timedOut: boolean;
  readonly spawnError?: NodeJS.ErrnoException;
}

/**
 * One git process, with node's own spawn: a host starts a dozen per attempt, and execa's extra
 * work cost about 1.5 ms of CPU and several ms of latency on each (bench: `git --version` × 100).
 * stdout beyond `maxBuffer` bytes is cut and the process stopped; stderr is capped the same way.
 */
function spawnGit(args: readonly string[], options: GitOptions): Promise<RawRun> {
  const maxBuffer = options.maxBuffer ?? DEFAULT_MAX_BUFFER;
  return new Promise((resolve) => {
    // Its own process group, so a time limit also stops what git started (ssh, a helper).
    const child = spawn('git', args, {
      env: gitEnvironment(args, options.env),
      stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      detached: true,
    });
    const stop = (signal: NodeJS.Signals) => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, signal);
      } catch {
        // already gone
      }
    };
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let outBytes = 0;
    let errBytes = 0;
    let truncated = false;
    let timedOut = false;
    let spawnError: NodeJS.ErrnoException | undefined;
    const timer = setTimeout(() => {
      timedOut = true;
      stop('SIGKILL');
    }, options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
    child.stdout?.on('data', (chunk: Buffer) => {
      if (truncated) return;
      if (outBytes + chunk.length > maxBuffer) {
        out.push(chunk.subarray(0, maxBuffer - outBytes));
        truncated = true;
        stop('SIGTERM');
        return;
      }
      out.push(chunk);
      outBytes += chunk.length;
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      if (errBytes >= maxBuffer) return;
      err.push(chunk);
      errBytes += chunk.length;
    });
    child.on('error', (error) => {
      spawnError = error;
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({
        exitCode: code,
        stdout: Buffer.concat(out),
        stderr: Buffer.concat(err).toString('utf8'),
        truncated,
        timedOut,
        ...(spawnError ? { spawnError } : {}),
      });
    });
    if (options.input !== undefined && child.stdin) {
      // git may exit before reading all of it (a failed import): its exit code tells what happened.
      child.stdin.on('error', () => undefined);
      child.stdin.end(options.input);
    }
  });
}

export async function runGit(args: readonly string[], options: GitOptions = {}): Promise<GitResult> {
  const result = await runGitBytes(args, options);
  return { ...result, stdout: result.stdout.toString('utf8') };
}

/** runGit() with stdout as git wrote it: paths that are not UTF-8 keep their bytes (read with `-z`). */
export interface GitBytesResult extends Omit<GitResult, 'stdout'> {
  readonly stdout: Buffer;
}

export async function runGitBytes(
  args: readonly string[],
  options: GitOptions = {},
): Promise<GitBytesResult> {
  const fullArgs = options.cwd === undefined ? [...args] : ['-C', options.cwd, ...args];
  const started = Date.now();
  const result = await spawnGit(fullArgs, options);
  if (result.spawnError?.code === 'ENOENT') {
    throw new FlotillaError('git/missing', 'git is not installed or not on PATH');
  }
  const { stdout, stderr } = result;
  if (result.truncated) return { exitCode: 0, stdout, stderr, truncated: true };
  if (result.timedOut) {
    throw new FlotillaError(
      'git/failed',
      redactUrlCredentials(`git ${args.join(' ')}: timed out after ${Date.now() - started} ms`),
    );
  }
  const exitCode = result.exitCode ?? -1;
  if (exitCode !== 0 && !options.allowFailure) {
    throw new FlotillaError(
      'git/failed',
      describeGitFailure(args, {
        stdout: stdout.toString('utf8'),
        stderr: stderr || (result.spawnError?.message ?? ''),
      }),
    );
  }
  return { exitCode, stdout, stderr, truncated: false };
}

/** Runs git and returns its stdout without the trailing newline; throws on a non-zero exit. */
export async function readGit(
  args: readonly string[],
  options: Omit<GitOptions, 'allowFailure'> = {},
): Promise<string> {
  const result = await runGit(args, options);
  return result.stdout.replace(/\n$/, '');
}

/** The commit a revision names, or null when it names none (a missing branch, say). */
export async function resolveCommit(cwd: string, revision: string): Promise<string | null> {
  const result = await runGit(
    ['rev-parse', '--verify', '--quiet', '--end-of-options', `${revision}^{commit}`],
    {
      cwd,
      allowFailure: true,
    },
  );
  return result.exitCode === 0 ? result.stdout.trim() : null;
}

export async function isAncestor(cwd: string, ancestor: string, descendant: string): Promise<boolean> {
  const result = await runGit(['merge-base', '--is-ancestor', ancestor, descendant], {
    cwd,
    allowFailure: true,
  });
  if (result.exitCode === 0) return true;
  if (result.exitCode === 1) return false;
  throw new FlotillaError(
    'git/failed',
    describeGitFailure(['merge-base', '--is-ancestor', ancestor, descendant], result),
  );
}

export const FALLBACK_IDENTITY = { name: 'flotilla', email: 'flotilla@localhost' } as const;

/**
 * `-c user.name=… -c user.email=…` when git could not otherwise commit in `cwd` (no identity in the
 * repository, global or system config, nor in the environment); empty when it can. `git var` in
 * strict mode fails exactly when `git commit` would refuse with "Please tell me who you are".
 */
export async function identityArgs(cwd: string): Promise<string[]> {
  const result = await runGit(['var', 'GIT_COMMITTER_IDENT'], { cwd, allowFailure: true });
  return result.exitCode === 0 ? [] : fallbackIdentityArgs();
}

function fallbackIdentityArgs(): string[] {
  return ['-c', `user.name=${FALLBACK_IDENTITY.name}`, '-c', `user.email=${FALLBACK_IDENTITY.email}`];
}

/** `Name <email>` for a commit's author and committer lines; the date is added when committing. */
export interface CommitIdentity {
  readonly author: string;
  readonly committer: string;
  /** False when git had no committer identity and flotilla's fallback stands in. */
  readonly configured: boolean;
}

/** `git var GIT_*_IDENT` without its date; null when git has no identity to offer. */
async function ident(cwd: string, variable: 'GIT_AUTHOR_IDENT' | 'GIT_COMMITTER_IDENT') {
  const result = await runGit(['var', variable], { cwd, allowFailure: true });
  if (result.exitCode !== 0) return null;
  return result.stdout.trim().replace(/ \d+ [+-]\d{4}$/, '');
}

/**
 * The identity `git commit` would use in `cwd` (config, then `GIT_AUTHOR_*`/`GIT_COMMITTER_*`),
 * or flotilla's fallback where git has none, asked of git once per directory in this process: a
 * host commits in the same few directories again and again (its warm checkouts, the mission repo
 * or its cache at the gate), and the answer depends only on their configuration and the environment.
 */
const commitIdentities = new Map<string, Promise<CommitIdentity>>();

export function cachedCommitIdentity(cwd: string): Promise<CommitIdentity> {
  let identity = commitIdentities.get(cwd);
  if (!identity) {
    const fallback = `${FALLBACK_IDENTITY.name} <${FALLBACK_IDENTITY.email}>`;
    identity = Promise.all([ident(cwd, 'GIT_AUTHOR_IDENT'), ident(cwd, 'GIT_COMMITTER_IDENT')]).then(
      ([author, committer]) => ({
        author: author ?? fallback,
        committer: committer ?? fallback,
        configured: committer !== null,
      }),
    );
    commitIdentities.set(cwd, identity);
    identity.catch(() => commitIdentities.delete(cwd));
  }
  return identity;
}

/** identityArgs() from the same cached answer: `git commit-tree` and friends in a host's usual places. */
export async function cachedIdentityArgs(cwd: string): Promise<string[]> {
  return (await cachedCommitIdentity(cwd)).configured ? [] : fallbackIdentityArgs();
}

/**
 * Disables the repository's and the user's hooks for flotilla's own commits, merges and pushes. An
 * attempt's gate is its exit criteria; a husky or lint hook would otherwise run inside the worker,
 * with the worker's environment, and could block or rewrite the agent's commit.
 */
export const NO_HOOKS = ['-c', 'core.hooksPath=/dev/null'] as const;

/** A path git matches as written (no glob, no magic), relative to the top of the checkout. */
export function literalPathspec(path: string): string {
  return `:(top,literal)${path}`;
}

/**
 * For a git command given a few paths: no preload of the index (threads that lstat every entry
 * the paths match, started on every call). On the kernel tree's 78,000 entries they cost a
 * `restore` of two paths 9 ms of its ~27 and a `status` ~3 ms, for nothing (docs/BENCHMARKS.md,
 * "Warm checkouts on a large tree").
 */
export const FEW_PATHS = ['-c', 'core.preloadIndex=false'] as const;

const LOCK_CONTENTION = /cannot lock ref|unable to create '[^']*\.lock'|\.lock': File exists|failed to lock/i;
/** Git reports a name clash (`a/b` beside `a/b/c`) as "cannot lock ref" too; waiting never fixes it. */
const NAME_CLASH = /exists; cannot create|cannot process .* at the same time/i;

export function isNameClash(stderr: string): boolean {
  return NAME_CLASH.test(stderr);
}

/** True when git failed only because another writer held a ref lock for a moment. */
export function isLockContention(stderr: string): boolean {
  return LOCK_CONTENTION.test(stderr) && !isNameClash(stderr);
}

/**
 * Another process on the same host (a second worker sharing the cache directory) may hold a ref
 * lock for a moment; git then fails instead of waiting. A short retry covers that case.
 */
export async function retryOnLockContention(
  run: () => Promise<GitResult>,
  describe: (result: GitResult) => string,
  attempts = 4,
): Promise<GitResult> {
  for (let attempt = 1; ; attempt++) {
    const result = await run();
    if (result.exitCode === 0) return result;
    if (attempt >= attempts || !isLockContention(result.stderr)) {
      throw new FlotillaError('git/failed', describe(result));
    }
    await new Promise((done) => setTimeout(done, 100 * attempt + Math.floor(Math.random() * 100)));
  }
}

/**
 * Fails with `git/unsupported` (exit 3) when the git on PATH is older than flotilla needs, and
 * with `git/missing` when there is none; a host checks once at start, before it takes any job.
 */
export async function assertGitVersion(options: Pick<GitOptions, 'env'> = {}): Promise<void> {
  const result = await runGit(['--version'], { ...options, allowFailure: true });
  const problem = gitVersionProblem(result.stdout);
  if (problem) throw new FlotillaError('git/unsupported', problem);
}
