import { readdir } from 'node:fs/promises';
import { join, posix } from 'node:path';
import { DISPATCH_DIR } from '../../shared/contracts.js';

/**
 * What the paths that changed in the repository flotilla runs in, during one run, say about that
 * run. The repository is often the user's own project, which the user (or another slot's CLI) may
 * be editing meanwhile, so a change there proves nothing by itself. Only files that no one but
 * this attempt would write prove an escape: its own dispatch files (`.planning/dispatch/<name>-…`)
 * and the result file its prompt asked for, written there instead of in its checkout.
 */

/** The files one agent run is told about, relative to its working directory. */
export interface AttemptFiles {
  /** The dispatch base name: `t1-a1` for a run, `t1-a1-review` for its review. */
  readonly name: string;
  readonly promptPath: string;
  readonly resultPath: string;
}

/**
 * The changed paths (relative to the repository top) that are this attempt's own files. A file in
 * the dispatch folder is the attempt's when its name is `<name>-` and an upper-case word
 * (`t1-a1-RESULT.md`), so `t1-a1-review-PROMPT.md` is not attempt `t1-a1`'s and `t1-a10-…` is not
 * `t1-a1`'s either. Directories (an untracked `.planning/`) are never own: list them first.
 */
export function classifyOriginChanges(paths: readonly string[], files: AttemptFiles): string[] {
  const exact = new Set([normal(files.promptPath), normal(files.resultPath)]);
  return [...new Set(paths)].filter((path) => {
    if (path.endsWith('/')) return false;
    const normalised = normal(path);
    if (exact.has(normalised)) return true;
    if (posix.dirname(normalised) !== DISPATCH_DIR) return false;
    const base = posix.basename(normalised);
    return base.startsWith(`${files.name}-`) && OWN_SUFFIX.test(base.slice(files.name.length + 1));
  });
}

/** `PROMPT.md`, `RESULT.md`, `RESULT.json`: what follows an attempt's name in its dispatch files. */
const OWN_SUFFIX = /^[A-Z][A-Z0-9_]*(\.[A-Za-z0-9]+)*$/;

/**
 * The folders to list before classifying: git shows a new untracked folder as one entry
 * (`?? .planning/`), so the attempt's files in it show only when the folders that may hold them
 * (the dispatch folder, the result file's and the prompt's) lie at or under a changed folder.
 */
export function foldersToList(paths: readonly string[], files: AttemptFiles): string[] {
  const candidates = [
    DISPATCH_DIR,
    posix.dirname(normal(files.resultPath)),
    posix.dirname(normal(files.promptPath)),
  ];
  const changedDirs = paths.filter((path) => path.endsWith('/')).map(normal);
  return [...new Set(candidates)].filter((dir) =>
    changedDirs.some((changed) => dir === changed || dir.startsWith(`${changed}/`)),
  );
}

/**
 * The attempt's own files among `paths`, after listing the folders `foldersToList` names under
 * `root`; a folder that cannot be read is only what it is, a changed folder.
 */
export async function ownOriginChanges(
  root: string,
  paths: readonly string[],
  files: AttemptFiles,
): Promise<string[]> {
  const listed: string[] = [];
  for (const dir of foldersToList(paths, files)) {
    const names = await readdir(join(root, dir)).catch(() => []);
    listed.push(...names.map((name) => `${dir}/${name}`));
  }
  return classifyOriginChanges([...paths, ...listed], files);
}

function normal(path: string): string {
  return posix.normalize(path.replaceAll('\\', '/')).replace(/\/+$/, '').replace(/^\.\//, '');
}
