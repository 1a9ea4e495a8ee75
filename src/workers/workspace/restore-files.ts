/**
 * `git restore --source=<commit> --staged --worktree -- <paths>` in-process, for a warm checkout's
 * reset by what changed (monitored-checkout.ts): each path written as the commit holds it, or
 * deleted (with the folders it leaves empty) where it holds none, and the index moved along
 * (index-file.ts). On the kernel tree the git process reads and writes an 8 MB index to restore
 * a handful of files; here the cost follows the paths. Whenever git must decide (content that may
 * be converted on its way out, a submodule, a folder where a file goes, a name matched ignoring
 * case, modes not taken from the file system, an index not written in-process), the answer is
 * false and the caller runs git, which writes every path again.
 */
import { lstatSync, mkdirSync, rmdirSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { gitDirOf } from './checkout-head.js';
import { contentMayConvert } from './content-filters.js';
import { cachedWriteRules, lstatOrNull } from './git-files.js';
import { type CommittedPath, indexWritable, writeIndexUpdates } from './index-file.js';
import type { LooseEntry, LooseReader } from './loose-trees.js';
import { verifyPath } from './verify-path.js';

const FILE = '100644';
const EXECUTABLE = '100755';
const LINK = '120000';

/**
 * Makes `paths` (files of the checkout at `dir`) in its work tree and index as `target` (the
 * commit's entries at those paths, from treeEntriesAt()) has them; a path `target` lacks is
 * deleted from both. False when git must do it: some paths may then be written already.
 */
export async function restoreInProcess(
  dir: string,
  paths: readonly string[],
  target: readonly LooseEntry[],
  reader: LooseReader,
): Promise<boolean> {
  if (!(await indexWritable(dir))) return false;
  if (!paths.every((path) => checkoutPath(path))) return false;
  // Attributes are read from the files restored with them: git's order (index first) decides.
  if (paths.some((path) => basename(path) === '.gitattributes')) return false;
  if (contentMayConvert(dir, paths, await cachedWriteRules(gitDirOf(dir)))) return false;
  // A link standing for a folder above a path would take the write or removal outside it.
  if (underLink(resolve(dir), paths)) return false;
  const byPath = new Map(target.map((entry) => [entry.path, entry]));
  const contents = new Map<string, Buffer>();
  for (const path of paths) {
    const entry = byPath.get(path);
    if (!entry) continue;
    if (entry.mode !== FILE && entry.mode !== EXECUTABLE && entry.mode !== LINK) return false;
    if (!checkoutPath(path, entry.mode)) return false;
    const content = await reader.blob(entry.oid).catch(() => null);
    if (!content) return false;
    contents.set(path, content);
  }
  const root = resolve(dir);
  const written: CommittedPath[] = [];
  // Deletions first: a folder whose files go may be where a file of the commit is to be.
  const gone = paths.filter((path) => !contents.has(path));
  try {
    for (const path of gone) {
      const full = inside(root, path);
      const info = lstatOrNull(full);
      if (info?.isDirectory()) return false;
      if (info) {
        unlinkSync(full);
        removeEmptyFolders(root, dirname(full));
      }
      written.push({ path, entry: null });
    }
    for (const [path, content] of contents) {
      const full = inside(root, path);
      const mode = byPath.get(path)?.mode;
      const info = lstatOrNull(full);
      if (info?.isDirectory()) return false;
      if (info) unlinkSync(full);
      mkdirSync(dirname(full), { recursive: true });
      if (mode === LINK) symlinkSync(content, full);
      // Created, not overwritten: the mode is the new file's, less the umask, as git makes it.
      else writeFileSync(full, content, { flag: 'wx', mode: mode === EXECUTABLE ? 0o777 : 0o666 });
      const seen = lstatSync(full, { bigint: true });
      written.push({
        path,
        entry: {
          mode: mode ?? FILE,
          content,
          seen: { ino: seen.ino, size: seen.size, mtimeNs: seen.mtimeNs, ctimeNs: seen.ctimeNs },
        },
      });
    }
  } catch {
    return false;
  }
  return writeIndexUpdates(dir, written);
}

/**
 * A path git would check out: its verify_path() (verify-path.ts) takes it, and it is UTF-8 (git's
 * listing reached here with the bytes replaced: git must find the path). git refuses the others,
 * and so must its stand-in: a tree holding `sub/.GIT/hooks/…` would otherwise plant a hook.
 */
export function checkoutPath(path: string, mode = FILE): boolean {
  return !path.includes('\uFFFD') && verifyPath(path, mode);
}

/**
 * True when a folder above one of `paths` (below `root`) is a link: removing or writing below it
 * would follow it (an attempt that moved a folder away and linked to it).
 */
export function underLink(root: string, paths: readonly string[]): boolean {
  const folders = new Set<string>();
  for (const path of paths) {
    for (let slash = path.indexOf('/'); slash !== -1; slash = path.indexOf('/', slash + 1)) {
      folders.add(path.slice(0, slash));
    }
  }
  return [...folders].some((folder) => lstatOrNull(join(root, folder))?.isSymbolicLink() ?? false);
}

/** `root/path`, refusing a path that would leave `root` (a monitor's names never do; be sure). */
export function inside(root: string, path: string): string {
  const full = resolve(root, path);
  if (!full.startsWith(`${resolve(root)}/`)) throw new Error(`${path}: outside the checkout`);
  return full;
}

/** Removes `folder` and the folders above it, up to `root`, while each is empty (as git does). */
function removeEmptyFolders(root: string, folder: string): void {
  for (let at = folder; at.startsWith(`${root}/`); at = dirname(at)) {
    try {
      rmdirSync(at);
    } catch {
      return;
    }
  }
}
