/**
 * The one path gate: git's `verify_path()` (read-cache.c, git 2.39) with `core.protectNTFS` and
 * `core.protectHFS` on, as git defaults them on macOS (NTFS is on by default everywhere since git
 * 2.24.1; HFS+ only on macOS, where a branch flotilla publishes is checked out by its reviewers).
 * The helpers follow git's own: `verify_dotfile()` (read-cache.c), `is_hfs_dotgit()` and
 * `next_hfs_char()` (utf8.c), `is_ntfs_dotgit()` and `is_ntfs_dot_generic()` (path.c), on the
 * path's bytes, as git reads them. What git checks only on Windows (`is_valid_path()`: reserved
 * names, `:`; a backslash as a separator; a drive prefix) it does not check here, and neither does
 * this gate. Every path flotilla commits, restores or merges passes it; git itself refuses the
 * others ("invalid path"), `git fsck` flags a tree holding them, and a checkout of one on a
 * case-insensitive file system writes into `.git/`.
 *
 * test/workers/workspace/verify-path.test.ts holds it to `git update-index` on seeded random and
 * adversarial names.
 */

/**
 * Why git refuses a path: each is one of the checks of `verify_path()`, but `no-commit`, which is
 * `git add`'s (a nested repository with nothing checked out has no commit to record).
 */
export type PathRefusal =
  | 'empty-component'
  | 'dot-component'
  | 'dotgit'
  | 'hfs-dotgit'
  | 'ntfs-dotgit'
  | 'gitmodules-link'
  | 'nul'
  | 'no-commit';

const REASONS: Readonly<Record<PathRefusal, string>> = {
  'empty-component': 'it has an empty part (a leading, doubled or trailing `/`)',
  'dot-component': 'it has a `.` or `..` part',
  dotgit: 'a part of it is `.git`, in upper or lower case',
  'hfs-dotgit': 'macOS would read a part of it as `.git` (its file system ignores some invisible characters)',
  'ntfs-dotgit': 'Windows would read a part of it as `.git` (`git~1`, trailing dots or spaces, a `:` stream)',
  'gitmodules-link': '`.gitmodules` may not be a symbolic link',
  nul: 'it holds a NUL byte',
  'no-commit': 'it is a repository with no commit checked out, which `git add` cannot record',
};

/** A path git would not take, and the check of git's that refuses it. */
export interface RefusedPath {
  readonly path: string;
  readonly refusal: PathRefusal;
}

/** The sentence an attempt's error and the next prompt carry: "`.GIT/x`: git refuses this path (…)". */
export function describeRefusal(path: string, refusal: PathRefusal): string {
  return `\`${path}\`: git refuses this path (${REASONS[refusal]})`;
}

const NUL = 0;
const SPACE = 0x20;
const DOT = 0x2e;
const SLASH = 0x2f;
const COLON = 0x3a;
const BACKSLASH = 0x5c;
const TILDE = 0x7e;

/** The byte at `i`, or NUL past the end: git's paths are NUL-terminated strings. */
function at(bytes: Uint8Array, i: number): number {
  return i < bytes.length ? (bytes[i] ?? NUL) : NUL;
}

/** git's ASCII-only `tolower()`. */
function lower(c: number): number {
  return c >= 0x41 && c <= 0x5a ? c + 0x20 : c;
}

/** `is_dir_sep()` where git runs here: `/` alone (the backslash is a separator on Windows only). */
function isDirSep(c: number): boolean {
  return c === SLASH;
}

/**
 * Null when git takes `path` into its index with `mode` (a tree entry's mode: `100644`, `100755`,
 * `120000`, `160000`, `40000`), else the check that refuses it. A string is taken as UTF-8.
 */
export function pathRefusal(path: string | Uint8Array, mode = '100644'): PathRefusal | null {
  const bytes = typeof path === 'string' ? Buffer.from(path, 'utf8') : path;
  if (bytes.includes(NUL)) return 'nul';
  const link = mode === '120000';
  const folder = mode === '40000' || mode === '040000';
  // verify_path_internal() starts "inside", at the first part; `p` is git's `path` pointer.
  let p = 0;
  let c = NUL;
  let inside = true;
  for (;;) {
    if (!inside && c === NUL) return null;
    if (inside || isDirSep(c)) {
      inside = false;
      // The checks at the start of a part, each refusing on its own: git's order is HFS, NTFS,
      // then the part's first character; the order here names the plainest reason first.
      const first = at(bytes, p);
      if (first === DOT) {
        const dotfile = dotfileRefusal(bytes, p + 1, link);
        if (dotfile) return dotfile;
      }
      if (isDirSep(first)) return 'empty-component';
      if (isHfsDot(bytes, p, 'git')) return 'hfs-dotgit';
      if (link && isHfsDot(bytes, p, 'gitmodules')) return 'gitmodules-link';
      if (isNtfsDotGit(bytes, p)) return 'ntfs-dotgit';
      if (link && isNtfsDotGitmodules(bytes, p)) return 'gitmodules-link';
      c = at(bytes, p++);
      // A trailing separator is allowed for a sparse index's folder entries alone.
      if (c === NUL) return folder ? null : 'empty-component';
    } else if (c === BACKSLASH) {
      // Under protectNTFS a backslash starts a part too, as Windows reads it.
      if (isNtfsDotGit(bytes, p)) return 'ntfs-dotgit';
      if (link && isNtfsDotGitmodules(bytes, p)) return 'gitmodules-link';
    }
    c = at(bytes, p++);
  }
}

/** True when git takes `path` with `mode` (pathRefusal() finds nothing). */
export function verifyPath(path: string | Uint8Array, mode = '100644'): boolean {
  return pathRefusal(path, mode) === null;
}

/** `verify_dotfile()`: the part after a leading `.`, which starts at `i`. */
function dotfileRefusal(bytes: Uint8Array, i: number, link: boolean): PathRefusal | null {
  const c = at(bytes, i);
  if (c === NUL || isDirSep(c)) return 'dot-component';
  if (c === 0x67 || c === 0x47) {
    const i2 = at(bytes, i + 1);
    const t = at(bytes, i + 2);
    if (i2 !== 0x69 && i2 !== 0x49) return null;
    if (t !== 0x74 && t !== 0x54) return null;
    const after = at(bytes, i + 3);
    if (after === NUL || isDirSep(after)) return 'dotgit';
    if (link && startsWithIgnoringCase(bytes, i + 3, 'modules')) {
      const end = at(bytes, i + 3 + 'modules'.length);
      if (end === NUL || isDirSep(end)) return 'gitmodules-link';
    }
    return null;
  }
  if (c === DOT) {
    const next = at(bytes, i + 1);
    if (next === NUL || isDirSep(next)) return 'dot-component';
  }
  return null;
}

function startsWithIgnoringCase(bytes: Uint8Array, i: number, ascii: string): boolean {
  for (let k = 0; k < ascii.length; k++) {
    if (lower(at(bytes, i + k)) !== ascii.charCodeAt(k)) return false;
  }
  return true;
}

/** Code points HFS+ ignores in a name (utf8.c's `next_hfs_char()`). */
const HFS_IGNORED = new Set([
  0x200c, 0x200d, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x206a, 0x206b, 0x206c, 0x206d,
  0x206e, 0x206f, 0xfeff,
]);

/**
 * `pick_one_utf8_char()`: the code point at `i` and the index after it, or null where the bytes
 * are not UTF-8 (overlong forms, surrogates, U+FFFE/U+FFFF and past U+10FFFF included).
 */
function pickUtf8(bytes: Uint8Array, i: number): { ch: number; next: number } | null {
  const s0 = at(bytes, i);
  if (s0 < 0x80) return { ch: s0, next: i + 1 };
  const s1 = at(bytes, i + 1);
  const cont = (b: number) => (b & 0xc0) === 0x80;
  if ((s0 & 0xe0) === 0xc0) {
    if (!cont(s1) || (s0 & 0xfe) === 0xc0) return null;
    return { ch: ((s0 & 0x1f) << 6) | (s1 & 0x3f), next: i + 2 };
  }
  const s2 = at(bytes, i + 2);
  if ((s0 & 0xf0) === 0xe0) {
    if (
      !cont(s1) ||
      !cont(s2) ||
      (s0 === 0xe0 && (s1 & 0xe0) === 0x80) ||
      (s0 === 0xed && (s1 & 0xe0) === 0xa0) ||
      (s0 === 0xef && s1 === 0xbf && (s2 & 0xfe) === 0xbe)
    )
      return null;
    return { ch: ((s0 & 0x0f) << 12) | ((s1 & 0x3f) << 6) | (s2 & 0x3f), next: i + 3 };
  }
  const s3 = at(bytes, i + 3);
  if ((s0 & 0xf8) === 0xf0) {
    if (
      !cont(s1) ||
      !cont(s2) ||
      !cont(s3) ||
      (s0 === 0xf0 && (s1 & 0xf0) === 0x80) ||
      (s0 === 0xf4 && s1 > 0x8f) ||
      s0 > 0xf4
    )
      return null;
    return {
      ch: ((s0 & 0x07) << 18) | ((s1 & 0x3f) << 12) | ((s2 & 0x3f) << 6) | (s3 & 0x3f),
      next: i + 4,
    };
  }
  return null;
}

/**
 * `is_hfs_dot_generic()`: the part at `i` reads as `.<needle>` once HFS+ drops the code points it
 * ignores and folds ASCII case. Bytes that are not UTF-8 end the name where they stand, as in git.
 */
function isHfsDot(bytes: Uint8Array, start: number, needle: string): boolean {
  let i = start;
  const next = (): number => {
    for (;;) {
      const picked = pickUtf8(bytes, i);
      if (!picked) return NUL;
      i = picked.next;
      if (!HFS_IGNORED.has(picked.ch)) return picked.ch;
    }
  };
  if (next() !== DOT) return false;
  for (let k = 0; k < needle.length; k++) {
    const c = next();
    if (c > 127 || lower(c) !== needle.charCodeAt(k)) return false;
  }
  const c = next();
  return c === NUL || isDirSep(c);
}

/** `is_ntfs_dotgit()`: `.git` or `git~1` in any case, then only dots and spaces to a separator or `:`. */
function isNtfsDotGit(bytes: Uint8Array, start: number): boolean {
  let i = start;
  const first = at(bytes, i++);
  const is = (c: number, letter: string) => lower(c) === letter.charCodeAt(0);
  if (first === DOT) {
    if (!is(at(bytes, i++), 'g') || !is(at(bytes, i++), 'i') || !is(at(bytes, i++), 't')) return false;
  } else if (is(first, 'g')) {
    if (!is(at(bytes, i++), 'i') || !is(at(bytes, i++), 't')) return false;
    if (at(bytes, i++) !== TILDE || at(bytes, i++) !== 0x31) return false;
  } else return false;
  for (;;) {
    const c = at(bytes, i++);
    if (c === NUL || c === BACKSLASH || c === SLASH || c === COLON) return true;
    if (c !== DOT && c !== SPACE) return false;
  }
}

/**
 * `is_ntfs_dotgitmodules()`: `.gitmodules`, its short name `gitmod~1`…`~4`, or the fall-back
 * short name `gi7eba~N`, each followed by nothing but dots and spaces up to the end or a `:`.
 */
function isNtfsDotGitmodules(bytes: Uint8Array, start: number): boolean {
  const name = (k: number) => at(bytes, start + k);
  const onlySpacesAndPeriods = (from: number): boolean => {
    for (let k = from; ; k++) {
      const c = name(k);
      if (c === NUL || c === COLON) return true;
      if (c !== SPACE && c !== DOT) return false;
    }
  };
  const dotgitName = 'gitmodules';
  if (name(0) === DOT && strncasecmp(bytes, start + 1, dotgitName, dotgitName.length)) {
    return onlySpacesAndPeriods(dotgitName.length + 1);
  }
  if (strncasecmp(bytes, start, dotgitName, 6) && name(6) === TILDE && name(7) >= 0x31 && name(7) <= 0x34) {
    return onlySpacesAndPeriods(8);
  }
  const prefix = 'gi7eba';
  let sawTilde = false;
  for (let k = 0; k < 8; k++) {
    const c = name(k);
    if (c === NUL) return false;
    if (sawTilde) {
      if (c < 0x30 || c > 0x39) return false;
    } else if (c === TILDE) {
      k++;
      if (name(k) < 0x31 || name(k) > 0x39) return false;
      sawTilde = true;
    } else if (k >= 6) return false;
    else if (c & 0x80) return false;
    else if (lower(c) !== prefix.charCodeAt(k)) return false;
  }
  return onlySpacesAndPeriods(8);
}

/** C's `strncasecmp(bytes + i, ascii, n) == 0` in the C locale (a shorter name differs). */
function strncasecmp(bytes: Uint8Array, i: number, ascii: string, n: number): boolean {
  for (let k = 0; k < n; k++) {
    if (lower(at(bytes, i + k)) !== ascii.charCodeAt(k)) return false;
  }
  return true;
}
