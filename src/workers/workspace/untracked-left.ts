/**
 * Whether a small warm checkout holds anything its index does not: what the walked reset's `git
 * clean` would remove. A reset after an attempt whose files are all committed (the run moved the
 * index to its commit; verify's claim removed what git ignores; criteria that leave nothing behind)
 * finds nothing, and leaves out the `git clean` process: the directories are read in-process, every
 * entry held to the index's paths. Anything the index does not hold (a file, an empty folder, a
 * link where a tracked folder was, a nested repository), or anything it cannot tell (an index over
 * the bound or of a form git must read, an unreadable folder), answers yes, and git cleans as before.
 */
import { type Dirent, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { gitDirOf } from './checkout-head.js';
import { inProcessGit } from './git-mode.js';
import { type EntryKind, readIndexKinds } from './index-file.js';
import { keptMatcher } from './monitored-paths.js';

/** One directory entry: its name's bytes as a latin1 string, and what it is. */
export interface Listed {
  readonly name: string;
  readonly kind: 'dir' | 'file' | 'link' | 'other';
}

/**
 * True when the tree `list` shows (the listing of a folder, by repository path with '' the top;
 * null when unreadable) holds an entry git would call untracked against `tracked` (the index's
 * paths and kinds): what `git clean -ffdx` without exclusions beyond `kept` (setup's outputs,
 * keptMatcher()) would remove. Null when a folder cannot be listed. The top's `.git` is git's own.
 */
export function untrackedFound(
  tracked: ReadonlyMap<string, EntryKind>,
  list: (path: string) => readonly Listed[] | null,
  kept: (path: string, isDirectory: boolean) => boolean,
): boolean | null {
  const folders = new Set<string>();
  for (const path of tracked.keys()) {
    for (let slash = path.indexOf('/'); slash > 0; slash = path.indexOf('/', slash + 1)) {
      folders.add(path.slice(0, slash));
    }
  }
  const walk = (folder: string): boolean | null => {
    const entries = list(folder);
    if (entries === null) return null;
    for (const { name, kind } of entries) {
      if (folder === '' && name === '.git') continue;
      const path = folder === '' ? name : `${folder}/${name}`;
      if (kept(path, kind === 'dir')) continue;
      const entry = tracked.get(path);
      // A tracked file or link is put back by the checkout whatever stands there, unless a folder
      // does: what is in it is untracked. A submodule's folder is its own repository's.
      if (entry !== undefined) {
        if (kind === 'dir' && entry !== 'gitlink') return true;
        continue;
      }
      if (!folders.has(path) || kind !== 'dir') return true;
      const below = walk(path);
      if (below !== false) return below;
    }
    return false;
  };
  return walk('');
}

/** An index this small is read and held to the tree in-process; a bigger one is left to `git clean`. */
export const CHECKED_INDEX_BYTES = 256 * 1024;

/**
 * True when the checkout at `dir` may hold something `git clean` (keeping `keep`, setup's outputs
 * as anchored patterns) would remove; false only when its folders, read now, hold nothing but what
 * its index tracks.
 */
export function leftUntracked(dir: string, keep: readonly string[]): boolean {
  const patterns = keptAsNames(keep);
  if (!patterns || !inProcessGit()) return true;
  const kept = keptMatcher(patterns);
  const tracked = readIndexKinds(join(gitDirOf(dir), 'index'), CHECKED_INDEX_BYTES);
  if (!tracked) return true;
  const list = (path: string): Listed[] | null => {
    // The folder's name as its bytes: one that is not UTF-8 is read where it is.
    const full = path === '' ? dir : Buffer.concat([Buffer.from(`${dir}/`), Buffer.from(path, 'latin1')]);
    let entries: Dirent<Buffer>[];
    try {
      entries = readdirSync(full, { withFileTypes: true, encoding: 'buffer' });
    } catch {
      return null;
    }
    return entries.map((entry) => ({
      name: entry.name.toString('latin1'),
      kind: entry.isDirectory() ? 'dir' : entry.isFile() ? 'file' : entry.isSymbolicLink() ? 'link' : 'other',
    }));
  };
  return untrackedFound(tracked, list, kept) ?? true;
}

/**
 * Setup's kept outputs (`/node_modules/`, `/out.log`) with their names as latin1 of their bytes,
 * as the listing spells them; null for a pattern git would read as more than one name (not
 * anchored, a wildcard, a bracket, an escape, a negation), which this check leaves to git.
 */
export function keptAsNames(keep: readonly string[]): string[] | null {
  const names: string[] = [];
  for (const pattern of keep) {
    const path = pattern.slice(1, pattern.endsWith('/') ? -1 : undefined);
    if (!pattern.startsWith('/') || path === '' || /[*?[\\!]|\/\/|^\/|\/$/.test(path)) return null;
    names.push(Buffer.from(pattern, 'utf8').toString('latin1'));
  }
  return names;
}
