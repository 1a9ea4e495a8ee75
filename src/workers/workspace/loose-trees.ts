/**
 * A warm checkout's trees read in-process, where git would read its whole index to answer: which
 * paths differ between two commits (`diff-index --cached` against an index known to hold the
 * first), and what a commit holds at a few paths (`ls-tree -r -- <paths>`). Only the trees along
 * what differs are read, so the cost follows the change, not the size of the tree: on the kernel
 * tree each of those git processes reads an 8 MB index. Objects are read loose or from packs
 * (pack-files.ts); one the reader cannot find, a name that is not UTF-8 or more paths than the
 * caller's limit answers null, and the caller asks git.
 */
import { objectStores, objectStoresOf } from './checkout-head.js';
import { literalPathspec, runGit } from './git.js';
import { readStoredObject } from './git-files.js';
import { inProcessGit } from './git-mode.js';
import { parseTree, type TreeRecord } from './loose-import.js';
import { parseLsTree } from './monitored-paths.js';
import type { ObjectBatch } from './object-batch.js';
import { isObjectId } from './ref-files.js';

const TREE_MODE = '40000';

/** What `git ls-tree -r` prints of a file: its mode, id and path. */
export interface LooseEntry {
  readonly mode: string;
  readonly oid: string;
  readonly path: string;
}

/** Thrown inside a walk whenever git must answer instead. */
class GitMustAnswer extends Error {}

/** Reads loose objects from a checkout's object stores (its own, and those it borrows from). */
export interface LooseReader {
  tree(id: string): Promise<TreeRecord[]>;
  treeOf(commit: string): Promise<string>;
  /** A commit's parents, in order. */
  parentsOf(commit: string): Promise<string[]>;
  /** A file's (or a link's) content. */
  blob(id: string): Promise<Buffer>;
}

/** A reader for the checkout at `dir`. */
export async function looseReader(dir: string): Promise<LooseReader> {
  return looseReaderOf(objectStores(dir));
}

/**
 * A reader of the repository whose git directory is `gitDir` (a bare one's is itself); `held`:
 * objects made but not written yet, read first.
 */
export async function repoReader(gitDir: string, held?: ObjectBatch): Promise<LooseReader> {
  return looseReaderOf(objectStoresOf(gitDir), held);
}

function looseReaderOf(stores: readonly string[], held?: ObjectBatch): LooseReader {
  const read = async (id: string, type: string): Promise<Buffer> => {
    if (!isObjectId(id) || id.length !== 40 || !inProcessGit()) throw new GitMustAnswer(id);
    const body = held?.read(id, type) ?? readStoredObject(stores, id, type);
    if (!body) throw new GitMustAnswer(id);
    return body;
  };
  // A tree's entries by id, read once per reader (a lookup of many paths reads the root each time).
  const trees = new Map<string, Promise<TreeRecord[]>>();
  const readTree = async (id: string): Promise<TreeRecord[]> => {
    const entries = parseTree(await read(id, 'tree'));
    // A zero-padded mode (`040000`, old tools) git reads as a tree: let git answer.
    if (entries.some((entry) => entry.mode.startsWith('0'))) throw new GitMustAnswer(id);
    return entries;
  };
  return {
    tree(id) {
      let known = trees.get(id);
      if (!known) {
        known = readTree(id);
        trees.set(id, known);
      }
      return known;
    },
    async treeOf(commit) {
      const tree = (await read(commit, 'commit'))
        .subarray(0, 46)
        .toString('latin1')
        .match(/^tree ([0-9a-f]{40})\n/)?.[1];
      if (!tree) throw new GitMustAnswer(commit);
      return tree;
    },
    async parentsOf(commit) {
      const body = await read(commit, 'commit');
      const end = body.indexOf('\n\n');
      const header = body.subarray(0, end < 0 ? body.length : end).toString('latin1');
      return [...header.matchAll(/^parent ([0-9a-f]{40})$/gm)].map((match) => match[1] ?? '');
    },
    blob(id) {
      return read(id, 'blob');
    },
  };
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

function nameOf(entry: TreeRecord): string {
  try {
    const name = utf8.decode(entry.name);
    if (name.includes('\0')) throw new GitMustAnswer(name);
    return name;
  } catch {
    throw new GitMustAnswer('a name that is not UTF-8');
  }
}

const isTree = (entry: TreeRecord | undefined): boolean => entry?.mode === TREE_MODE;
const treeId = (entry: TreeRecord | undefined): string | null => (entry && isTree(entry) ? entry.id : null);

/**
 * The files (and links, submodules) that differ between the trees of commits `from` and `to`,
 * as `git diff-index --cached --name-only --no-renames <to>` lists them for an index holding
 * `from`'s tree: a file whose mode or content differs, or that only one side has, each once.
 * Null when git must answer, or when there are more than `limit`.
 */
export async function treeChanges(
  reader: LooseReader,
  from: string,
  to: string,
  limit: number,
): Promise<string[] | null> {
  try {
    const [a, b] = await Promise.all([reader.treeOf(from), reader.treeOf(to)]);
    return (await treeDiff(reader, a, b, limit))?.files.map((file) => file.path) ?? null;
  } catch {
    return null;
  }
}

/** What differs between two trees: files, and the folders only the first has. */
export interface TreeDiff {
  /** Each file (link, submodule) that differs: its entry in either tree, undefined where it has none. */
  readonly files: readonly {
    readonly path: string;
    readonly before?: TreeRecord;
    readonly after?: TreeRecord;
  }[];
  /** Folders of the first tree the second has not (as folders). */
  readonly removedFolders: readonly string[];
}

/** The difference of trees `a` and `b`, read where their ids differ; null when git must answer. */
export async function treeDiff(
  reader: LooseReader,
  a: string,
  b: string,
  limit: number,
): Promise<TreeDiff | null> {
  const files: TreeDiff['files'][number][] = [];
  const removedFolders: string[] = [];
  const walk = async (prefix: string, a: string | null, b: string | null): Promise<void> => {
    if (a === b) return;
    const left = new Map((a ? await reader.tree(a) : []).map((entry) => [nameOf(entry), entry]));
    const right = new Map((b ? await reader.tree(b) : []).map((entry) => [nameOf(entry), entry]));
    for (const name of new Set([...left.keys(), ...right.keys()])) {
      const x = left.get(name);
      const y = right.get(name);
      const path = `${prefix}${name}`;
      if (isTree(x) && !isTree(y)) removedFolders.push(path);
      if (isTree(x) || isTree(y)) await walk(`${path}/`, treeId(x), treeId(y));
      const before = isTree(x) ? undefined : x;
      const after = isTree(y) ? undefined : y;
      if ((before || after) && (before?.mode !== after?.mode || before?.id !== after?.id)) {
        files.push({ path, ...(before ? { before } : {}), ...(after ? { after } : {}) });
        if (files.length > limit) throw new GitMustAnswer('too many');
      }
    }
  };
  try {
    await walk('', a, b);
    return { files, removedFolders };
  } catch {
    // Not loose here, or not readable as git writes it: git answers.
    return null;
  }
}

/** The entry at `path` below the tree `root`; undefined when there is none. Throws when git must answer. */
export async function entryAt(
  reader: LooseReader,
  root: string,
  path: string,
): Promise<TreeRecord | undefined> {
  const parts = path.split('/');
  if (parts.some((part) => part === '' || part === '.' || part === '..')) throw new GitMustAnswer(path);
  let tree: string | null = root;
  let entry: TreeRecord | undefined;
  for (const part of parts) {
    entry = tree ? (await reader.tree(tree)).find((candidate) => nameOf(candidate) === part) : undefined;
    tree = treeId(entry);
    if (!entry) break;
  }
  return entry;
}

/**
 * What `commit` holds at `paths`, as `git ls-tree -r --full-tree <commit> -- <literal paths>`
 * lists it: a path that is a file gives its entry, one that is a folder every file below it, one
 * it lacks nothing. Null when git must answer, or when there are more than `limit` entries.
 */
export async function looseLsTree(
  reader: LooseReader,
  commit: string,
  paths: readonly string[],
  limit: number,
): Promise<LooseEntry[] | null> {
  const found = new Map<string, LooseEntry>();
  const add = (entry: LooseEntry) => {
    found.set(entry.path, entry);
    if (found.size > limit) throw new GitMustAnswer('too many');
  };
  const everything = async (prefix: string, tree: string): Promise<void> => {
    for (const entry of await reader.tree(tree)) {
      const path = `${prefix}${nameOf(entry)}`;
      if (isTree(entry)) await everything(`${path}/`, entry.id);
      else add({ mode: entry.mode, oid: entry.id, path });
    }
  };
  try {
    const root = await reader.treeOf(commit);
    for (const path of paths) {
      const entry = await entryAt(reader, root, path);
      if (!entry) continue;
      const folder = treeId(entry);
      if (folder) await everything(`${path}/`, folder);
      else add({ mode: entry.mode, oid: entry.id, path });
    }
    return [...found.values()].sort((a, b) => Buffer.compare(Buffer.from(a.path), Buffer.from(b.path)));
  } catch {
    // Not loose here, or not readable as git writes it: git answers.
    return null;
  }
}

/**
 * looseLsTree(), or `git ls-tree -r` in the checkout at `dir` where the reader cannot answer (an
 * object it cannot find, a name that is not UTF-8, more than `limit` entries).
 */
export async function treeEntriesAt(
  dir: string,
  reader: LooseReader,
  commit: string,
  paths: readonly string[],
  limit: number,
): Promise<LooseEntry[]> {
  if (paths.length === 0) return [];
  const read = await looseLsTree(reader, commit, paths, limit);
  if (read) return read;
  const args = ['ls-tree', '-r', '-z', '--full-tree', commit, '--', ...paths.map(literalPathspec)];
  return parseLsTree((await runGit(args, { cwd: dir })).stdout);
}

/**
 * For each of `paths`, whether `commit` holds a folder there, something else (a file, a link, a
 * submodule), or nothing: what `git cat-file --batch-check` tells of `<commit>:<path>`. Null when
 * git must answer.
 */
export async function looseKinds(
  reader: LooseReader,
  commit: string,
  paths: readonly string[],
): Promise<('folder' | 'other' | 'none')[] | null> {
  try {
    const root = await reader.treeOf(commit);
    const kinds: ('folder' | 'other' | 'none')[] = [];
    for (const path of paths) {
      const entry = await entryAt(reader, root, path);
      kinds.push(!entry ? 'none' : isTree(entry) ? 'folder' : 'other');
    }
    return kinds;
  } catch {
    // Not loose here, or not readable as git writes it: git answers.
    return null;
  }
}
