/**
 * A branch's or attempt ref's commit read and written in the repository's files, without starting
 * git: a task asked git for the integration tip two or three times (for-each-ref, rev-parse) and
 * set two refs (fast-import, update-ref), a process each. Git keeps a ref as a loose file
 * (`<git dir>/refs/…`, written by renaming a lock file into place, so a reader sees the old value
 * or the new one) or as a line of `packed-refs`, the loose file winning. Anything else (a symbolic
 * ref, the reftable format, a file that is not a ref) is `unknown`, and the caller asks git as
 * before. The files are read and written with synchronous calls, like the rest of the in-process
 * git plumbing (docs/ARCHITECTURE.md, "Synchronous git files"); the two entry points stay async
 * for the tests' seam (test/helpers/ref-write-seam.ts).
 */
import {
  appendFileSync,
  closeSync,
  constants,
  fstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  type Stats,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { closeQuietly, exists, gitZone, lstatOrNull, type RepoWriteRules, readTextOr } from './git-files.js';
import { inProcessGit } from './git-mode.js';

const OBJECT_ID = /^[0-9a-f]{40}(?:[0-9a-f]{24})?$/;

/** A full object id as git writes one: 40 hex digits (SHA-1) or 64 (SHA-256). */
export function isObjectId(text: string): boolean {
  return OBJECT_ID.test(text);
}

/** What a ref's files say: its commit, that it does not exist, or that only git can tell. */
export type RefFileValue =
  | { readonly kind: 'commit'; readonly commit: string }
  | { readonly kind: 'missing' }
  | { readonly kind: 'unknown' };

const MISSING: RefFileValue = { kind: 'missing' };
const UNKNOWN: RefFileValue = { kind: 'unknown' };

/** A loose ref file's text: an object id, or `unknown` (`ref: …` for a symbolic ref, or junk). */
export function looseRefValue(text: string): RefFileValue {
  const value = text.trim();
  return isObjectId(value) ? { kind: 'commit', commit: value } : UNKNOWN;
}

/**
 * `ref` in a `packed-refs` file's text: `<id> <ref>` lines, `^<id>` lines peeling the tag above
 * them, `#` for the header. A ref absent from the file is `missing`.
 */
export function packedRefValue(text: string, ref: string): RefFileValue {
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line.startsWith('^')) continue;
    const space = line.indexOf(' ');
    if (space < 0 || line.slice(space + 1).trimEnd() !== ref) continue;
    return looseRefValue(line.slice(0, space));
  }
  return MISSING;
}

/** Names git would read as something other than one ref file under `refs/`. */
function plainRefName(ref: string): boolean {
  return (
    ref.startsWith('refs/') &&
    !ref.split('/').some((part) => part === '' || part === '.' || part === '..' || part.endsWith('.lock'))
  );
}

/**
 * The commit `ref` (a full name such as `refs/heads/flotilla/m`) points at in the repository whose
 * common git directory is `gitDir`. Annotated tags are not peeled: flotilla reads only branches and
 * attempt refs, which hold commits.
 */
export async function readRefFile(gitDir: string, ref: string): Promise<RefFileValue> {
  if (!plainRefName(ref) || !inProcessGit()) return UNKNOWN;
  // A reftable repository keeps refs in a format of its own (git ≥ 2.45): git reads those.
  if (exists(join(gitDir, 'reftable'))) return UNKNOWN;
  return readRefValue(gitDir, ref);
}

/** readRefFile() once the name and the repository's format are known to be plain. */
function readRefValue(gitDir: string, ref: string): RefFileValue {
  const loose = readLoose(join(gitDir, ref));
  if (loose === undefined) return UNKNOWN;
  if (loose !== null) return looseRefValue(loose);
  let packed: string;
  try {
    packed = readFileSync(join(gitDir, 'packed-refs'), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') return UNKNOWN;
    packed = '';
  }
  return packedRefValue(packed, ref);
}

/**
 * A loose ref file's text; null when there is none; undefined when it is something git reads
 * otherwise: a link (git takes one pointing into `refs/` as a symbolic ref, and fails on any
 * other, never falling back to `packed-refs`), a directory, or a file it cannot read.
 */
function readLoose(path: string): string | null | undefined {
  let file: number;
  try {
    file = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === 'ENOENT' || code === 'ENOTDIR' ? null : undefined;
  }
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  } finally {
    closeSync(file);
  }
}

/**
 * How long a writer waits for a ref lock another holds before it answers `locked`. A writer holds
 * one for well under a millisecond; git waits `core.filesRefLockTimeout` (100 ms by default) and
 * then fails naming the lock. A lock is never taken away, however old: git cannot tell one a
 * killed process left from one a live process holds, and neither can this writer, so whoever
 * knows removes it, as git's own message asks.
 */
export const REF_LOCK_WAIT_MS = 1_000;
const REF_LOCK_POLL_MS = 10;

/** Who wrote a ref, and why, for its reflog (`logs/<ref>`), as git's update-ref -m writes it. */
export interface RefLogEntry {
  /** `Name <email>`, the committer git would name. */
  readonly committer: string;
  readonly message: string;
  /** When git writes a ref's reflog. */
  readonly mode: RepoWriteRules['refLogs'];
}

export interface WriteRefOptions {
  /** Compare-and-swap: the value the ref must hold now (null: that it does not exist). */
  readonly expected?: string | null;
  /** Append to the ref's reflog where git would. */
  readonly log?: RefLogEntry;
}

/**
 * `written`: the ref holds `id`. `moved`: it did not hold the expected value, nothing changed.
 * `locked`: another writer held the ref's lock for all of REF_LOCK_WAIT_MS, nothing changed.
 * `declined`: git must do it (a name or a file this writer does not take), nothing changed.
 */
export type RefWrite = 'written' | 'moved' | 'locked' | 'declined';

/**
 * Points `ref` at `id` as git's files backend does: `<ref>.lock` taken (O_EXCL), the current value
 * read under it, the new one written to it, the reflog line appended, the lock renamed into place.
 * Every writer, git included, takes the same lock, so a compare-and-swap holds against them all.
 */
export async function writeRefFile(
  gitDir: string,
  ref: string,
  id: string,
  options: WriteRefOptions = {},
): Promise<RefWrite> {
  if (!inProcessGit() || !plainRefName(ref) || !isObjectId(id) || exists(join(gitDir, 'reftable')))
    return 'declined';
  // git's update-ref also logs to HEAD's reflog when HEAD names the ref: git does that.
  if (readTextOr(join(gitDir, 'HEAD'), '').trim() === `ref: ${ref}`) return 'declined';
  const path = join(gitDir, ref);
  const lock = `${path}.lock`;
  let ours: bigint;
  try {
    mkdirSync(dirname(path), { recursive: true });
  } catch {
    return 'declined';
  }
  const taken = await takeLock(lock);
  if (taken === 'held') return 'locked';
  if (taken === null) return 'declined';
  let file: number | null = taken;
  try {
    ours = fstatSync(file, { bigint: true }).ino;
  } catch {
    closeQuietly(file);
    rmSync(lock, { force: true });
    return 'declined';
  }
  // The lock file at its name is still the one this writer made (no one removed it meanwhile).
  const stillOurs = () => lstatOrNull(lock)?.ino === ours;
  let renamed = false;
  try {
    const now = readRefValue(gitDir, ref);
    if (now.kind === 'unknown') return 'declined';
    if (options.expected !== undefined) {
      const current = now.kind === 'commit' ? now.commit : null;
      if (current !== options.expected) return 'moved';
    }
    const logPath = join(gitDir, 'logs', ref);
    const logged = options.log ? reflogWanted(logPath, ref, options.log.mode) : false;
    if (logged === undefined) return 'declined';
    writeFileSync(file, `${id}\n`);
    const written = file;
    file = null;
    closeSync(written);
    if (!stillOurs()) return 'declined';
    if (logged && options.log) {
      const old = now.kind === 'commit' ? now.commit : '0'.repeat(id.length);
      appendFileSync(logPath, reflogLine(old, id, options.log, new Date()));
    }
    renameSync(lock, path);
    renamed = true;
    return 'written';
  } catch {
    return 'declined';
  } finally {
    if (file !== null) closeQuietly(file);
    if (!renamed && stillOurs()) rmSync(lock, { force: true });
  }
}

/**
 * The ref's lock, made with O_EXCL as git makes it: its descriptor, `held` when another writer's
 * lock stayed for all of REF_LOCK_WAIT_MS (it is left as it is), null on any other failure.
 */
async function takeLock(lock: string): Promise<number | 'held' | null> {
  const deadline = Date.now() + REF_LOCK_WAIT_MS;
  for (;;) {
    try {
      return openSync(lock, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o666);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') return null;
      if (Date.now() >= deadline) return 'held';
      await new Promise((done) => setTimeout(done, REF_LOCK_POLL_MS));
    }
  }
}

/**
 * Whether git would append to the reflog at `logPath`: when it exists, or when the mode makes one
 * for this ref (`normal`: branches, remote-tracking refs and notes); undefined when the folder in
 * its place is not one git would write either.
 */
function reflogWanted(logPath: string, ref: string, mode: RefLogEntry['mode']): boolean | undefined {
  let info: Stats | undefined;
  try {
    info = statSync(logPath, { throwIfNoEntry: false });
  } catch {
    info = undefined;
  }
  if (info) return info.isFile() ? true : undefined;
  const made = mode === 'always' || (mode === 'normal' && /^refs\/(heads|remotes|notes)\//.test(ref));
  if (made) mkdirSync(dirname(logPath), { recursive: true });
  return made;
}

/** One reflog line: `<old> <new> <committer> <seconds> <zone>\t<message>`, the message on one line. */
export function reflogLine(old: string, id: string, log: RefLogEntry, when: Date): string {
  const zone = gitZone(-when.getTimezoneOffset());
  const message = log.message.replace(/\s+/g, ' ').trim();
  const seconds = Math.floor(when.getTime() / 1000);
  return `${old} ${id} ${log.committer} ${seconds} ${zone}${message ? `\t${message}` : ''}\n`;
}
