/**
 * A branch's or attempt ref's commit read from the repository's files, without starting git: a
 * task asked git for the integration tip two or three times (for-each-ref, rev-parse), a process
 * each. Git keeps a ref as a loose file (`<git dir>/refs/…`, written by renaming a lock file into
 * place, so a reader sees the old value or the new one) or as a line of `packed-refs`, the loose
 * file winning. Anything else (a symbolic ref, the reftable format, a file that is not a ref) is
 * `unknown`, and the caller asks git as before.
 */
import { constants } from 'node:fs';
import { type FileHandle, open, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';

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
  if (!plainRefName(ref)) return UNKNOWN;
  // A reftable repository keeps refs in a format of its own (git ≥ 2.45): git reads those.
  if (
    await stat(join(gitDir, 'reftable')).then(
      () => true,
      () => false,
    )
  )
    return UNKNOWN;
  const loose = await readLoose(join(gitDir, ref));
  if (loose === undefined) return UNKNOWN;
  if (loose !== null) return looseRefValue(loose);
  const packed = await readFile(join(gitDir, 'packed-refs'), 'utf8').catch((error: NodeJS.ErrnoException) =>
    error.code === 'ENOENT' ? '' : undefined,
  );
  return packed === undefined ? UNKNOWN : packedRefValue(packed, ref);
}

/**
 * A loose ref file's text; null when there is none; undefined when it is something git reads
 * otherwise: a link (git takes one pointing into `refs/` as a symbolic ref, and fails on any
 * other, never falling back to `packed-refs`), a directory, or a file it cannot read.
 */
async function readLoose(path: string): Promise<string | null | undefined> {
  let file: FileHandle;
  try {
    file = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === 'ENOENT' || code === 'ENOTDIR' ? null : undefined;
  }
  try {
    return await file.readFile('utf8');
  } catch {
    return undefined;
  } finally {
    await file.close();
  }
}
