/**
 * An attempt's two commits made by git itself: `git add` of the changed paths into a copy of the
 * checkout's index, `write-tree`, `commit-tree`. This is what `git add -A && git commit` makes of
 * the checkout, with `.planning/dispatch/` kept out of the work commit and taken (ignored or not)
 * into the second. commit.ts uses it where its own reading of the files cannot be git's: with
 * `FLOTILLA_GIT=cli`, and for what it does not handle — a name that is not UTF-8, a path below a
 * link (a folder replaced by a link: git commits the link and the deletions, never the files
 * behind it), a folder among the changed paths (a nested repository, which git records as a
 * gitlink; a submodule moved; a link replaced by a folder). Given the paths git's status listed,
 * so the cost follows what the attempt changed: no walk of the tree.
 */
import { copyFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { FlotillaError } from '../../shared/errors.js';
import { gitDirOf } from './checkout-head.js';
import { describeGitFailure, NO_HOOKS, readGit, runGit } from './git.js';
import { lstatOrNull } from './git-files.js';
import { isUtf8 } from './snapshot-changes.js';
import { pathRefusal, type RefusedPath } from './verify-path.js';

export interface GitCommitInput {
  readonly dir: string;
  readonly base: string;
  /** The work's changed paths, as git named them (bytes). */
  readonly work: readonly Buffer[];
  /** `.planning/dispatch/` paths: changed ones and every file below it. */
  readonly dispatch: readonly Buffer[];
  readonly message: string;
  readonly dispatchMessage: string;
  /** `Name <email>` each. */
  readonly author: string;
  readonly committer: string;
  /** Seconds since the epoch. */
  readonly time: number;
}

export interface GitCommitResult {
  readonly workCommit: string;
  readonly commit: string;
  /** Paths git refuses, left out of both commits (the caller fails the attempt naming each). */
  readonly refused: RefusedPath[];
}

/**
 * True when the in-process commit (commit.ts) cannot read `paths` as git would: a name that is not
 * UTF-8, a folder (a nested repository, a submodule, a link replaced by a folder) or a path below
 * a link. One `lstat` a path and one a folder above them.
 */
export function gitMustCommit(dir: string, paths: readonly Buffer[]): boolean {
  const root = Buffer.from(`${dir}/`);
  const links = new Map<string, boolean>();
  return paths.some(
    (path) =>
      !isUtf8(path) ||
      belowLink(root, path, links) ||
      (lstatOrNull(Buffer.concat([root, path]))?.isDirectory() ?? false),
  );
}

/**
 * The two commits, HEAD detached at the second and the index at its tree (the copy moved into
 * place, with the stat data `git add` took). The caller publishes.
 */
export async function commitByGit(input: GitCommitInput): Promise<GitCommitResult> {
  const { dir } = input;
  const gitDir = gitDirOf(dir);
  // In the checkout's git folder, beside the index: a split index's shared file is found there.
  const index = join(gitDir, `flotilla-commit-${process.pid}.index`);
  const env = { GIT_INDEX_FILE: index };
  const real = join(gitDir, 'index');
  try {
    if (lstatOrNull(real)) copyFileSync(real, index);
    const refused: RefusedPath[] = [];
    await stage(dir, input.work, env, refused, false);
    // The work commit holds `.planning/dispatch/` as the base does, whatever the agent staged there.
    await runGit(['reset', '-q', input.base, '--', ':(top,literal).planning/dispatch'], { cwd: dir, env });
    const workCommit = await commitTree(dir, env, input, input.base, input.message);
    await stage(dir, input.dispatch, env, refused, true);
    const commit = await commitTree(dir, env, input, workCommit, input.dispatchMessage);
    await runGit(['update-ref', '--no-deref', 'HEAD', commit], { cwd: dir });
    renameSync(index, real);
    return { workCommit, commit, refused };
  } finally {
    rmSync(index, { force: true });
  }
}

/**
 * `paths` staged as `git add` takes them: those git would find in the work tree added (a link as
 * a link, a repository as its commit), the others removed from the index, each refused one left
 * out and added to `refused`. `force` adds what git ignores (flotilla's dispatch files).
 */
async function stage(
  dir: string,
  paths: readonly Buffer[],
  env: Record<string, string>,
  refused: RefusedPath[],
  force: boolean,
): Promise<void> {
  const present: Buffer[] = [];
  const gone: Buffer[] = [];
  const root = Buffer.from(`${dir}/`);
  const links = new Map<string, boolean>();
  for (const listed of paths) {
    // git status names an untracked repository as a folder, `nested/`; git add takes `nested`.
    const path = listed.at(-1) === SLASH ? listed.subarray(0, -1) : listed;
    const seen = belowLink(root, path, links) ? null : lstatOrNull(Buffer.concat([root, path]));
    if (!seen) {
      gone.push(path);
      continue;
    }
    const refusal = pathRefusal(path, seen.isSymbolicLink() ? '120000' : '100644');
    if (refusal) refused.push({ path: path.toString('utf8'), refusal });
    else present.push(path);
  }
  if (gone.length > 0) {
    // --force-remove: a path below a link is gone for git too, whatever the link leads to.
    await runGit(['update-index', '--force-remove', '-z', '--stdin'], {
      cwd: dir,
      env,
      input: Buffer.concat(gone.flatMap((path) => [path, NUL])),
    });
  }
  let adding = present;
  while (adding.length > 0) {
    const args = [
      '-c',
      'advice.addEmbeddedRepo=false',
      'add',
      ...(force ? ['-f'] : []),
      '--pathspec-from-file=-',
      '--pathspec-file-nul',
    ];
    const added = await runGit(args, {
      cwd: dir,
      env,
      input: Buffer.concat(adding.flatMap((path) => [LITERAL, path, NUL])),
      allowFailure: true,
    });
    if (added.exitCode === 0) return;
    // A repository without a commit checked out: git add refuses it, and so does the attempt.
    const empty = adding.filter((path) =>
      added.stderr.includes(`'${path.toString('utf8')}/' does not have a commit`),
    );
    if (empty.length === 0) throw new FlotillaError('git/failed', describeGitFailure(args, added));
    for (const path of empty) refused.push({ path: path.toString('utf8'), refusal: 'no-commit' });
    adding = adding.filter((path) => !empty.includes(path));
  }
}

const NUL = Buffer.from([0]);
const LITERAL = Buffer.from(':(top,literal)');
const SLASH = 0x2f;

/** True when a folder above `path` is a link (git's has_symlink_leading_path), `links` caching each folder. */
function belowLink(root: Buffer, path: Buffer, links: Map<string, boolean>): boolean {
  for (let slash = path.indexOf(SLASH); slash !== -1; slash = path.indexOf(SLASH, slash + 1)) {
    const folder = path.subarray(0, slash);
    const key = folder.toString('latin1');
    let link = links.get(key);
    if (link === undefined) {
      link = lstatOrNull(Buffer.concat([root, folder]))?.isSymbolicLink() ?? false;
      links.set(key, link);
    }
    if (link) return true;
  }
  return false;
}

/** `write-tree` of the index, committed on `parent` with the attempt's identity and time. */
async function commitTree(
  dir: string,
  env: Record<string, string>,
  input: GitCommitInput,
  parent: string,
  message: string,
): Promise<string> {
  const tree = await readGit(['write-tree'], { cwd: dir, env });
  const [authorName, authorEmail] = nameAndEmail(input.author);
  const [committerName, committerEmail] = nameAndEmail(input.committer);
  const date = `${input.time} +0000`;
  return readGit([...NO_HOOKS, 'commit-tree', tree, '-p', parent], {
    cwd: dir,
    input: message,
    env: {
      GIT_AUTHOR_NAME: authorName,
      GIT_AUTHOR_EMAIL: authorEmail,
      GIT_AUTHOR_DATE: date,
      GIT_COMMITTER_NAME: committerName,
      GIT_COMMITTER_EMAIL: committerEmail,
      GIT_COMMITTER_DATE: date,
    },
  });
}

/** `Name <email>` apart. */
function nameAndEmail(ident: string): [string, string] {
  const match = /^(.*?)\s*<([^>]*)>\s*$/.exec(ident);
  return match ? [match[1] ?? '', match[2] ?? ''] : [ident, ''];
}
