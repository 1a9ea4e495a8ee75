/**
 * Whether git would change a file's bytes on their way into the repository, as `git add` does: a
 * clean filter (git-lfs stores a pointer for the file), line endings (`text`, `eol`, the legacy
 * `crlf`, core.autocrlf), `ident`, a working-tree encoding. An attempt's commit is written from the
 * files' bytes as they are (commit.ts); where any of these may apply, git cleans the files first.
 * The check errs one way only: an attribute file that names a converting attribute anywhere
 * counts, whatever its patterns match, so a repository that only marks files `-text` or `diff=cpp`
 * (the kernel's) keeps the in-process commit.
 */
import { homedir } from 'node:os';
import { basename, join } from 'node:path';
import { commonDirOf, gitDirOf } from './checkout-head.js';
import { lstatOrNull, type RepoWriteRules, readTextOr } from './git-files.js';

/**
 * An attribute set or given a value (`text`, `text=auto`, `filter=lfs`; `crlf`, git's legacy
 * spelling of `text`, and `crlf=input`, of `eol=lf`); `-text`, `!eol`, `-crlf` unset it.
 */
const CONVERTING = /^(text|crlf|eol|filter|ident|working-tree-encoding)(=|$)/;

/**
 * True when a gitattributes file's text sets an attribute that converts content, on any line
 * (a macro's definition included: `[attr]crlf text eol=crlf`).
 */
export function attributesConvert(text: string): boolean {
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    // The first word is the pattern (or `[attr]name`); a quoted pattern with spaces leaves
    // fragments that cannot look like an attribute.
    if (
      line
        .split(/\s+/)
        .slice(1)
        .some((word) => CONVERTING.test(word))
    )
      return true;
  }
  return false;
}

/** Every folder `path` is in, the top ('') first. */
function foldersOf(path: string): string[] {
  const folders = [''];
  for (let slash = path.indexOf('/'); slash > 0; slash = path.indexOf('/', slash + 1)) {
    folders.push(path.slice(0, slash));
  }
  return folders;
}

/**
 * The attribute files git reads for `paths` in the checkout at `dir`, as `git add` does: the
 * system's (unless GIT_ATTR_NOSYSTEM), the user's (core.attributesFile, else the XDG one), the
 * repository's `info/attributes`, and the `.gitattributes` of every folder the paths are in.
 * Null when one cannot be named (a `~user/` path).
 */
export function attributeFiles(
  dir: string,
  paths: readonly string[],
  rules: Pick<RepoWriteRules, 'attributesFile'>,
  env: Readonly<Record<string, string | undefined>>,
): string[] | null {
  const files: string[] = [];
  const noSystem = ['true', 'yes', 'on', '1'].includes((env.GIT_ATTR_NOSYSTEM ?? '').toLowerCase());
  if (!noSystem) files.push('/etc/gitattributes', '/usr/local/etc/gitattributes');
  const home = env.HOME || homedir();
  const own = rules.attributesFile;
  if (own === undefined) {
    files.push(join(env.XDG_CONFIG_HOME || join(home, '.config'), 'git', 'attributes'));
  } else if (own.startsWith('~/')) {
    files.push(join(home, own.slice(2)));
  } else if (own.startsWith('~')) {
    return null;
  } else {
    files.push(own.startsWith('/') ? own : join(dir, own));
  }
  files.push(join(commonDirOf(gitDirOf(dir)), 'info', 'attributes'));
  const folders = new Set(paths.flatMap(foldersOf));
  for (const folder of [...folders].sort()) files.push(join(dir, folder, '.gitattributes'));
  return files;
}

/**
 * True when git may store other bytes than the files at `paths` (repository paths in the checkout
 * at `dir`) hold: core.autocrlf, an attribute source from the environment (GIT_ATTR_SOURCE), a
 * `.gitattributes` among the paths that is gone (git then reads the index's copy), or an attribute
 * file that converts (attributesConvert()).
 */
export function contentMayConvert(
  dir: string,
  paths: readonly string[],
  rules: Pick<RepoWriteRules, 'autocrlf' | 'attributesFile'>,
  env: Readonly<Record<string, string | undefined>> = process.env,
): boolean {
  if (rules.autocrlf || env.GIT_ATTR_SOURCE) return true;
  const goneAttributes = paths.some(
    (path) => basename(path) === '.gitattributes' && lstatOrNull(join(dir, path)) === null,
  );
  if (goneAttributes) return true;
  const files = attributeFiles(dir, paths, rules, env);
  if (files === null) return true;
  return files.some((file) => attributesConvert(readTextOr(file, '')));
}
