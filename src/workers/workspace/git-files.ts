/**
 * The gate's merge commit written in-process as a loose object, byte for byte what `git
 * commit-tree` writes, where the repository asks for nothing more than a plain object: a few file
 * writes against a process (docs/BENCHMARKS.md, "In-process git: what it buys"). Whenever it asks
 * for more (signed commits, shared permissions, SHA-256 objects, fsync settings, dates from the
 * environment), the caller runs git as before. A crash half-way leaves at most a temporary file
 * git's own prune removes.
 */
import { createHash } from 'node:crypto';
import {
  type BigIntStats,
  closeSync,
  constants,
  linkSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { deflateSync, inflateSync } from 'node:zlib';
import { runGit } from './git.js';
import { packedHere, readPacked } from './pack-files.js';

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
 * Synchronous, like the rest of the in-process git plumbing (docs/ARCHITECTURE.md, "Synchronous
 * git files"): the object is compressed on the host's thread anyway.
 */
export function writeLooseObject(gitDir: string, type: string, body: Buffer): string {
  const { id, stored } = objectId(type, body);
  const folder = join(gitDir, 'objects', id.slice(0, 2));
  const path = join(folder, id.slice(2));
  if (freshened(path)) return id;
  mkdirSync(folder, { recursive: true });
  const temporary = join(folder, `tmp_obj_flotilla_${process.pid}_${Math.random().toString(36).slice(2)}`);
  const file = openSync(temporary, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o444);
  try {
    writeFileSync(file, deflateSync(stored));
  } finally {
    closeSync(file);
  }
  try {
    linkSync(temporary, path);
  } catch (error) {
    // A file system without hard links (vfat, some network mounts): a rename, as git falls back to.
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') renameSync(temporary, path);
  } finally {
    rmSync(temporary, { force: true });
  }
  return id;
}

/**
 * The body of object `id` of `type` where it is loose, or in a pack the reader follows
 * (pack-files.ts), in one of `stores` (object folders, searched in order); null when it is in none
 * of them, or is of another type.
 */
export function readStoredObject(stores: readonly string[], id: string, type: string): Buffer | null {
  for (const store of stores) {
    let stored: Buffer;
    try {
      stored = readFileSync(join(store, id.slice(0, 2), id.slice(2)));
    } catch {
      const packed = readPacked(store, id);
      if (!packed) continue;
      return packed.type === type ? packed.body : null;
    }
    const raw = inflateSync(stored);
    const nul = raw.indexOf(0);
    return raw.subarray(0, nul).toString('latin1').split(' ')[0] === type ? raw.subarray(nul + 1) : null;
  }
  return null;
}

/** True when `id` is loose, or packed, in one of `stores`. */
export function storedIn(stores: readonly string[], id: string): boolean {
  return stores.some(
    (store) =>
      (lstatOrNull(join(store, id.slice(0, 2), id.slice(2)))?.isFile() ?? false) || packedHere(store, id),
  );
}

/**
 * True when the loose object at `path` is there, its modification time set to now as git's own
 * writers do: a prune (`gc --auto`: unreachable loose objects older than two weeks) would
 * otherwise take an old object a new tree or commit has just come to name.
 */
export function freshened(path: string): boolean {
  try {
    const now = new Date();
    utimesSync(path, now, now);
    return true;
  } catch {
    return false;
  }
}

/** True when something is at `path`. */
export function exists(path: string): boolean {
  try {
    return statSync(path, { throwIfNoEntry: false }) !== undefined;
  } catch {
    return false;
  }
}

/**
 * The lstat of `path` with nanosecond times and inode numbers that do not round, or null when
 * nothing is there or it cannot be read.
 */
export function lstatOrNull(path: string | Buffer): BigIntStats | null {
  try {
    return lstatSync(path, { bigint: true, throwIfNoEntry: false }) ?? null;
  } catch {
    return null;
  }
}

/** A small file's text, or `missing` when it cannot be read. */
export function readTextOr<T>(path: string, missing: T): string | T {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return missing;
  }
}

/** Closes a descriptor on a path that ends in failure anyway: a close error changes nothing there. */
export function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // the answer is already a failure; what it held is removed next
  }
}

/** What a repository's configuration asks of a commit, read with one `git config`. */
export interface RepoWriteRules {
  /** Nothing beyond a plain loose object: the in-process write may be used. */
  readonly plain: boolean;
  /**
   * core.ignoreCase (macOS, Windows): git matches names in a tree ignoring case, which the
   * attempt's in-process commits (loose-import.ts) do not; the merge commit is unaffected.
   */
  readonly ignoreCase: boolean;
  /**
   * Which refs git keeps a reflog of when it writes them (core.logAllRefUpdates; unset: `normal`,
   * branches and the like, in a repository with a work tree, `none` in a bare one).
   */
  readonly refLogs: 'none' | 'normal' | 'always';
  /**
   * Neither core.fileMode nor core.symlinks is off: git takes a file's mode from the file system,
   * as an attempt's commit does (off, `update-index` keeps the mode the index had).
   */
  readonly modesTrusted: boolean;
  /** core.fileMode is not off: git takes the executable bit from the file system. */
  readonly executableBit: boolean;
  /** core.symlinks is not off: a link is a link (off, a file holding the target stands for one). */
  readonly symlinks: boolean;
  /**
   * core.autocrlf is `true` or `input`: git converts line endings on the way in, where the
   * in-process commit would store the bytes as they are (content-filters.ts).
   */
  readonly autocrlf: boolean;
  /** core.attributesFile as written (a path, `~/` allowed), when set. */
  readonly attributesFile?: string;
}

const KEYS =
  /^(commit\.gpgsign|core\.sharedrepository|extensions\.objectformat|core\.fsync|core\.fsyncobjectfiles|i18n\.commitencoding|extensions\.refstorage|core\.ignorecase|core\.logallrefupdates|core\.bare|core\.filemode|core\.symlinks|core\.autocrlf|core\.attributesfile)$/;

/** The rules from `git config --get-regexp` output (every scope: system, global, repository). */
export function writeRules(
  configText: string,
  env: Readonly<Record<string, string | undefined>>,
): RepoWriteRules {
  const values = new Map<string, string>();
  let attributesFile: string | undefined;
  for (const line of configText.split('\n')) {
    const space = line.indexOf(' ');
    const key = (space < 0 ? line : line.slice(0, space)).toLowerCase();
    // A path: its case kept.
    if (key === 'core.attributesfile' && space > 0) attributesFile = line.slice(space + 1).trim();
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
  // Another encoding gets an `encoding` header from commit-tree.
  const encoding = values.get('i18n.commitencoding');
  const plain =
    !yes('commit.gpgsign') &&
    (shared === undefined || ['false', 'umask', '0', 'no', 'off'].includes(shared)) &&
    (format === undefined || format === 'sha1') &&
    (encoding === undefined || encoding === 'utf-8' || encoding === 'utf8') &&
    // A reftable repository (git ≥ 2.45) keeps refs where a loose ref file is ignored.
    (values.get('extensions.refstorage') ?? 'files') === 'files' &&
    !values.has('core.fsync') &&
    !yes('core.fsyncobjectfiles') &&
    !env.GIT_AUTHOR_DATE &&
    !env.GIT_COMMITTER_DATE;
  // Unset, git logs branches and the like in a repository with a work tree, nothing in a bare one.
  const logs = values.get('core.logallrefupdates');
  const logsBranches = logs === undefined ? !yes('core.bare') : yes('core.logallrefupdates');
  const refLogs = logs === 'always' ? 'always' : logsBranches ? 'normal' : 'none';
  const off = (key: string) => ['false', 'no', 'off', '0'].includes(values.get(key) ?? '');
  const executableBit = !off('core.filemode');
  const symlinks = !off('core.symlinks');
  const modesTrusted = executableBit && symlinks;
  const autocrlf = yes('core.autocrlf') || values.get('core.autocrlf') === 'input';
  return {
    plain,
    ignoreCase: yes('core.ignorecase'),
    refLogs,
    modesTrusted,
    executableBit,
    symlinks,
    autocrlf,
    ...(attributesFile ? { attributesFile } : {}),
  };
}

const rulesOf = new Map<string, Promise<RepoWriteRules>>();

/** writeRules() for the repository whose git directory is `gitDir`, asked of git once per process. */
export function cachedWriteRules(gitDir: string): Promise<RepoWriteRules> {
  let rules = rulesOf.get(gitDir);
  if (!rules) {
    rules = runGit(['config', '--get-regexp', KEYS.source], { cwd: gitDir, allowFailure: true }).then(
      (result) =>
        // Exit 1 is "no such key", every rule at its default.
        result.exitCode <= 1
          ? writeRules(result.stdout, process.env)
          : {
              plain: false,
              ignoreCase: true,
              refLogs: 'normal' as const,
              modesTrusted: false,
              executableBit: false,
              symlinks: false,
              autocrlf: true,
            },
    );
    rulesOf.set(gitDir, rules);
    rules.catch(() => rulesOf.delete(gitDir));
  }
  return rules;
}
