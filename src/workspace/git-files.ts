/**
 * The gate's last two git processes done in-process, on a local repository that needs nothing
 * git would add: the merge commit written as a loose object (`git commit-tree`), and the
 * integration branch moved by compare-and-swap with git's own lock file (`git update-ref <ref>
 * <new> <old>`), its reflog line included. Each costs a few file writes against a process each
 * (docs/BENCHMARKS.md §18). Whenever the repository asks for more than that (signed commits,
 * shared permissions, SHA-256 objects, reftable refs, a branch checked out, dates from the
 * environment), the callers run git as before.
 */
import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { appendFile, link, mkdir, open, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { deflateSync } from 'node:zlib';
import { runGit } from './git.js';
import { isObjectId, readRefFile } from './ref-files.js';

export interface CommitFields {
  readonly tree: string;
  readonly parents: readonly string[];
  /** `Name <email>`. */
  readonly author: string;
  readonly committer: string;
  /** Seconds since the epoch. */
  readonly time: number;
  /** Minutes east of UTC, as git writes the zone (`+0100` is 60). */
  readonly zoneMinutes: number;
  readonly message: string;
}

/** `+hhmm` / `-hhmm`, git's zone. */
export function gitZone(minutes: number): string {
  const sign = minutes < 0 ? '-' : '+';
  const abs = Math.abs(minutes);
  return `${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}${String(abs % 60).padStart(2, '0')}`;
}

/** A commit object's body as `git commit-tree` writes it (no encoding header: the text is UTF-8). */
export function commitBody(fields: CommitFields): Buffer {
  const when = `${fields.time} ${gitZone(fields.zoneMinutes)}`;
  const lines = [
    `tree ${fields.tree}`,
    ...fields.parents.map((parent) => `parent ${parent}`),
    `author ${fields.author} ${when}`,
    `committer ${fields.committer} ${when}`,
    '',
    fields.message,
  ];
  return Buffer.from(lines.join('\n'), 'utf8');
}

/** The id git gives an object: SHA-1 of `<type> <size>\0<body>`. */
export function objectId(type: string, body: Buffer): { id: string; stored: Buffer } {
  const stored = Buffer.concat([Buffer.from(`${type} ${body.byteLength}\0`), body]);
  return { id: createHash('sha1').update(stored).digest('hex'), stored };
}

/**
 * Writes a loose object into `gitDir`'s object store as git does: compressed into a temporary
 * file beside it, then linked into place (an object that exists already is left as it is).
 */
export async function writeLooseObject(gitDir: string, type: string, body: Buffer): Promise<string> {
  const { id, stored } = objectId(type, body);
  const folder = join(gitDir, 'objects', id.slice(0, 2));
  const path = join(folder, id.slice(2));
  if (await exists(path)) return id;
  await mkdir(folder, { recursive: true });
  const temporary = join(folder, `tmp_obj_flotilla_${process.pid}_${Math.random().toString(36).slice(2)}`);
  const file = await open(temporary, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o444);
  try {
    await file.writeFile(deflateSync(stored));
  } finally {
    await file.close();
  }
  try {
    await link(temporary, path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    await rm(temporary, { force: true });
  }
  return id;
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

/** What a repository's configuration asks of a commit or ref update, read with one `git config`. */
export interface RepoWriteRules {
  /** Nothing beyond a plain loose object and a plain ref file: the in-process writes may be used. */
  readonly plain: boolean;
  /** Ref updates are logged (core.logAllRefUpdates, which defaults to true outside bare repos). */
  readonly logRefs: boolean;
}

const KEYS =
  /^(commit\.gpgsign|core\.sharedrepository|extensions\.objectformat|extensions\.refstorage|core\.logallrefupdates|core\.bare|core\.fsync|core\.fsyncobjectfiles)$/;

/** The rules from `git config --get-regexp` output (every scope: system, global, repository). */
export function writeRules(
  configText: string,
  env: Readonly<Record<string, string | undefined>>,
): RepoWriteRules {
  const values = new Map<string, string>();
  for (const line of configText.split('\n')) {
    const space = line.indexOf(' ');
    const key = (space < 0 ? line : line.slice(0, space)).toLowerCase();
    if (KEYS.test(key))
      values.set(
        key,
        space < 0
          ? 'true'
          : line
              .slice(space + 1)
              .trim()
              .toLowerCase(),
      );
  }
  const yes = (key: string) => ['true', 'yes', 'on', '1'].includes(values.get(key) ?? '');
  const shared = values.get('core.sharedrepository');
  const format = values.get('extensions.objectformat');
  const refs = values.get('extensions.refstorage');
  const plain =
    !yes('commit.gpgsign') &&
    (shared === undefined || ['false', 'umask', '0', 'no', 'off'].includes(shared)) &&
    (format === undefined || format === 'sha1') &&
    (refs === undefined || refs === 'files') &&
    !values.has('core.fsync') &&
    !yes('core.fsyncobjectfiles') &&
    !env.GIT_AUTHOR_DATE &&
    !env.GIT_COMMITTER_DATE;
  const logging = values.get('core.logallrefupdates');
  const logRefs =
    logging === undefined ? !yes('core.bare') : logging === 'always' || yes('core.logallrefupdates');
  return { plain, logRefs };
}

const rulesOf = new Map<string, Promise<RepoWriteRules>>();

/** writeRules() for the repository whose git directory is `gitDir`, asked of git once per process. */
export function cachedWriteRules(gitDir: string): Promise<RepoWriteRules> {
  let rules = rulesOf.get(gitDir);
  if (!rules) {
    rules = runGit(['config', '--get-regexp', KEYS.source], { cwd: gitDir, allowFailure: true }).then(
      (result) =>
        // Exit 1 is "no such key", every rule at its default.
        result.exitCode <= 1 ? writeRules(result.stdout, process.env) : { plain: false, logRefs: true },
    );
    rulesOf.set(gitDir, rules);
    rules.catch(() => rulesOf.delete(gitDir));
  }
  return rules;
}

export type SwapOutcome = 'published' | 'lost-race' | 'unknown';

export interface SwapOptions {
  readonly gitDir: string;
  /** A full ref name, e.g. `refs/heads/flotilla/m`. */
  readonly ref: string;
  readonly next: string;
  readonly expected: string;
  /** The reflog line's identity (`Name <email>`) and message; no line when `log` is false. */
  readonly committer: string;
  readonly message: string;
  readonly log: boolean;
  /** Seconds since the epoch, and the zone, for the reflog line. */
  readonly time: number;
  readonly zoneMinutes: number;
}

/**
 * `git update-ref <ref> <next> <expected>` on a files-backend repository: take `<ref>.lock`
 * (O_EXCL, as git does, so git and flotilla exclude each other), check the ref still holds
 * `expected`, append the reflog line, rename the lock into place. `lost-race` when another writer
 * holds the lock or moved the ref; `unknown` (nothing changed) when only git can do it: a ref git
 * reads otherwise (symbolic, packed oddly), a branch checked out in a worktree (git also logs its
 * HEAD), or a name that clashes with a folder.
 */
export async function compareAndSwapRef(options: SwapOptions): Promise<SwapOutcome> {
  const { gitDir, ref, next, expected } = options;
  if (!isObjectId(next) || !isObjectId(expected) || !ref.startsWith('refs/heads/')) return 'unknown';
  if (await checkedOut(gitDir, ref)) return 'unknown';
  const path = join(gitDir, ref);
  const lock = `${path}.lock`;
  try {
    await mkdir(dirname(path), { recursive: true });
  } catch {
    return 'unknown';
  }
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(lock, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o666);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EEXIST' ? 'lost-race' : 'unknown';
  }
  let renamed = false;
  try {
    try {
      await handle.writeFile(`${next}\n`);
    } finally {
      await handle.close();
    }
    const now = await readRefFile(gitDir, ref);
    if (now.kind === 'unknown') return 'unknown';
    if (now.kind !== 'commit' || now.commit !== expected) return 'lost-race';
    if (options.log) {
      const logFile = join(gitDir, 'logs', ref);
      await mkdir(dirname(logFile), { recursive: true });
      const when = `${options.time} ${gitZone(options.zoneMinutes)}`;
      await appendFile(logFile, `${expected} ${next} ${options.committer} ${when}\t${options.message}\n`);
    }
    await rename(lock, path);
    renamed = true;
    return 'published';
  } finally {
    if (!renamed) await rm(lock, { force: true });
  }
}

/** True when a worktree of the repository (the main one or a linked one) has `ref` checked out. */
async function checkedOut(gitDir: string, ref: string): Promise<boolean> {
  const heads = [join(gitDir, 'HEAD')];
  const linked = await readdir(join(gitDir, 'worktrees')).catch(() => [] as string[]);
  for (const name of linked) heads.push(join(gitDir, 'worktrees', name, 'HEAD'));
  for (const head of heads) {
    const text = await readFile(head, 'utf8').catch(() => '');
    if (text.trim() === `ref: ${ref}`) return true;
  }
  return false;
}
