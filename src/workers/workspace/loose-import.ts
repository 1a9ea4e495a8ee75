/**
 * An attempt's commits written in-process into a local mission repo, as `git fast-import` would
 * write them (the same objects, so the same ids), when every tree they touch can be read
 * in-process there (loose, or in a pack pack-files.ts reads). Blobs, the changed trees and the two
 * commits go into one pack (object-batch.ts), and the attempt's ref is a file renamed into place.
 * Two git processes fewer a task (`fast-import` and the `unpack-objects` it starts). Null whenever
 * git must do it (a tree it cannot read, an object store elsewhere, a repository asking for more
 * than plain objects): the caller runs fast-import.
 */
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { ATTEMPT_REF_PREFIX } from '../../shared/contracts.js';
import type { ImportCommit } from './fast-import.js';
import { cachedWriteRules, commitBody, readStoredObject } from './git-files.js';
import { ObjectBatch } from './object-batch.js';
import { isObjectId, writeRefFile } from './ref-files.js';

/** One entry of a tree object. */
export interface TreeRecord {
  readonly mode: string;
  readonly name: Buffer;
  readonly id: string;
}

const TREE_MODE = '40000';

/** A tree object's body as its entries. */
export function parseTree(body: Buffer): TreeRecord[] {
  const entries: TreeRecord[] = [];
  let at = 0;
  while (at < body.length) {
    const space = body.indexOf(0x20, at);
    const nul = body.indexOf(0, space);
    if (space < 0 || nul < 0 || nul + 21 > body.length) throw new Error('a malformed tree');
    entries.push({
      mode: body.subarray(at, space).toString('latin1'),
      name: Buffer.from(body.subarray(space + 1, nul)),
      id: body.subarray(nul + 1, nul + 21).toString('hex'),
    });
    at = nul + 21;
  }
  return entries;
}

/** git's order of tree entries: by name bytes, a tree's name compared as if it ended in `/`. */
export function compareEntries(a: TreeRecord, b: TreeRecord): number {
  const ka = a.mode === TREE_MODE ? Buffer.concat([a.name, Buffer.from('/')]) : a.name;
  const kb = b.mode === TREE_MODE ? Buffer.concat([b.name, Buffer.from('/')]) : b.name;
  return Buffer.compare(ka, kb);
}

/** A tree object's body from its entries, in git's order. */
export function treeBody(entries: readonly TreeRecord[]): Buffer {
  const sorted = [...entries].sort(compareEntries);
  return Buffer.concat(
    sorted.flatMap((entry) => [
      Buffer.from(`${entry.mode} `, 'latin1'),
      entry.name,
      Buffer.from([0]),
      Buffer.from(entry.id, 'hex'),
    ]),
  );
}

/** Raised when the import needs what it cannot do in-process (an object it cannot read): git does it. */
class GitMustDoIt extends Error {}

function readLoose(batch: ObjectBatch, id: string, type: string): Buffer {
  const body = batch.read(id, type) ?? readStoredObject([join(batch.gitDir, 'objects')], id, type);
  if (!body) throw new GitMustDoIt(`${id}: no ${type} read here`);
  return body;
}

/** A change below a tree: a file's new blob (or its deletion) by path parts. */
type Change = { readonly mode: string; readonly id: string } | { readonly deleted: true };

interface Level {
  readonly files: Map<string, Change>;
  readonly folders: Map<string, Level>;
}

function newLevel(): Level {
  return { files: new Map(), folders: new Map() };
}

/** The tree `base` with `level`'s changes applied, written; null when it ends up empty. */
function applyLevel(batch: ObjectBatch, base: string | null, level: Level): string | null {
  // Keyed by the name's bytes, so a name that is not UTF-8 in the base is kept as it is.
  const entries = new Map<string, TreeRecord>();
  if (base) {
    for (const entry of parseTree(readLoose(batch, base, 'tree'))) {
      // A zero-padded mode (`040000`, old tools) fast-import rewrites: git does it.
      if (entry.mode.startsWith('0')) throw new GitMustDoIt(`${base}: a zero-padded mode`);
      entries.set(entry.name.toString('latin1'), entry);
    }
  }
  let changed = false;
  for (const [name, change] of level.files) {
    if ('deleted' in change) {
      const existing = entries.get(name);
      // fast-import's `D` of a folder removes it whole; flotilla lists files, so git does that one.
      if (existing?.mode === TREE_MODE) throw new GitMustDoIt(`${name}: a folder deleted`);
      if (existing) changed = entries.delete(name);
      continue;
    }
    entries.set(name, { mode: change.mode, name: Buffer.from(name, 'latin1'), id: change.id });
    changed = true;
  }
  for (const [name, sub] of level.folders) {
    const existing = entries.get(name);
    const before = existing?.mode === TREE_MODE ? existing.id : null;
    const tree = applyLevel(batch, before, sub);
    if (tree === before) continue;
    changed = true;
    if (tree === null) entries.delete(name);
    else entries.set(name, { mode: TREE_MODE, name: Buffer.from(name, 'latin1'), id: tree });
  }
  // Nothing changed here (a deletion of what was not there): the tree stays, an empty one too.
  if (!changed) return base;
  if (entries.size === 0) return null;
  return batch.put('tree', treeBody([...entries.values()]));
}

/** A change of one file: its new mode and blob, or its deletion. */
export type TreeEdit =
  | { readonly path: string; readonly mode: string; readonly id: string }
  | { readonly path: string; readonly deleted: true };

/** The tree `base` with `changes` applied, written (the empty tree when nothing is left). */
function editTree(batch: ObjectBatch, base: string, changes: readonly TreeEdit[]): string {
  const level = newLevel();
  for (const change of changes) {
    // Path parts as their UTF-8 bytes (in a latin1 string), as the tree keys them.
    const parts = Buffer.from(change.path, 'utf8').toString('latin1').split('/');
    const file = parts.pop() ?? '';
    let at = level;
    for (const part of parts) {
      let next = at.folders.get(part);
      if (!next) {
        next = newLevel();
        at.folders.set(part, next);
      }
      at = next;
    }
    at.files.set(file, 'deleted' in change ? { deleted: true } : { mode: change.mode, id: change.id });
  }
  return applyLevel(batch, base, level) ?? batch.put('tree', Buffer.alloc(0));
}

/**
 * The tree `base` of the batch's repository with `changes` applied, its new trees held in `batch`
 * (written with it); null when a tree along a changed path cannot be read in-process (git must do
 * it).
 */
export function applyTreeEdits(
  batch: ObjectBatch,
  base: string,
  changes: readonly TreeEdit[],
): string | null {
  try {
    return editTree(batch, base, changes);
  } catch (error) {
    if (error instanceof GitMustDoIt) return null;
    throw error;
  }
}

/**
 * The commits of `commits` (a parent is a commit id, or `:<mark>` of an earlier one) written into
 * the repository whose git directory is `gitDir`, the last one's ref set; their ids in order, or
 * null when git must do it. Nothing is published before everything is written: a failure leaves
 * at most unreferenced objects.
 */
export async function looseImport(
  gitDir: string,
  commits: readonly ImportCommit[],
): Promise<string[] | null> {
  const ref = commits.at(-1)?.ref ?? '';
  // Attempt refs only: a branch would want its reflog, and might be checked out somewhere.
  if (!ref.startsWith(ATTEMPT_REF_PREFIX) || commits.some((commit) => commit.ref !== ref)) return null;
  if (!refNameGitTakes(ref) || !commits.every(plainInput)) return null;
  const rules = await cachedWriteRules(gitDir);
  if (!rules.plain || rules.ignoreCase) return null;
  try {
    const batch = new ObjectBatch(gitDir);
    const ids: string[] = [];
    const marks = new Map<string, { commit: string; tree: string }>();
    for (const commit of commits) {
      const parent = commit.parent.startsWith(':')
        ? marks.get(commit.parent)
        : loadCommit(batch, commit.parent);
      if (!parent) return null;
      const changes: TreeEdit[] = [];
      for (const entry of commit.entries) {
        changes.push(
          'deleted' in entry
            ? entry
            : {
                path: entry.path,
                mode: entry.mode,
                id: batch.put('blob', Buffer.from(entry.content)),
              },
        );
      }
      const tree = editTree(batch, parent.tree, changes);
      const id = batch.put(
        'commit',
        commitBody({
          tree,
          parents: [parent.commit],
          author: commit.author,
          committer: commit.committer,
          time: commit.time,
          zoneMinutes: 0,
          message: commit.message,
        }),
      );
      marks.set(`:${commit.mark}`, { commit: id, tree });
      ids.push(id);
    }
    const last = ids.at(-1);
    batch.write();
    // Forced, as fast-import's update: an attempt's ref is that attempt's alone.
    if (!last || (await writeRefFile(gitDir, ref, last)) !== 'written') return null;
    return ids;
  } catch (error) {
    if (error instanceof GitMustDoIt) return null;
    throw error;
  }
}

/**
 * What fast-import would take as it is: `Name <email>` identities, and paths in order, each once,
 * with no empty part and no NUL (fast-import refuses or cuts those; flotilla never makes them).
 */
function plainInput(commit: ImportCommit): boolean {
  const identity = /^[^<>\n]+ <[^<>\n]*>$/;
  if (!identity.test(commit.author) || !identity.test(commit.committer)) return false;
  const paths = commit.entries.map((entry) => entry.path);
  return paths.every(
    (path, i) =>
      path !== '' &&
      !path.includes('\0') &&
      !path.split('/').includes('') &&
      (i === 0 || (paths[i - 1] ?? '') < path),
  );
}

/**
 * A ref name git accepts (check-ref-format's rules), so the file written is the ref git reads. A
 * clash with a packed ref of a parent's name is not looked for: that would read all of
 * `packed-refs` (every attempt of every mission) each task, and attempt refs' parents
 * (`refs/flotilla/<mission>/<task>`) are never refs flotilla makes.
 */
export function refNameGitTakes(ref: string): boolean {
  if (ref.endsWith('/') || ref.endsWith('.') || ref.includes('..') || ref.includes('@{')) return false;
  if ([...ref].some((char) => char <= ' ' || char === '\x7f' || '~^:?*[\\'.includes(char))) return false;
  return ref.split('/').every((part) => part !== '' && !part.startsWith('.') && !part.endsWith('.lock'));
}

/** A commit's id and tree, read in-process. */
function loadCommit(batch: ObjectBatch, id: string): { commit: string; tree: string } | null {
  if (!isObjectId(id) || id.length !== 40) return null;
  const body = readLoose(batch, id, 'commit');
  const tree = body
    .subarray(0, 46)
    .toString('latin1')
    .match(/^tree ([0-9a-f]{40})\n/)?.[1];
  return tree ? { commit: id, tree } : null;
}

/**
 * The git directory of the repository at `repo` when it keeps its own objects and refs there: its
 * `.git` folder, or `repo` itself when bare; null otherwise (a worktree, a `.git` file): git does it.
 */
export function ownGitDir(repo: string): Promise<string | null> {
  let known = ownGitDirs.get(repo);
  if (!known) {
    known = findOwnGitDir(repo).catch(() => null);
    ownGitDirs.set(repo, known);
  }
  return known;
}

/** ownGitDir()'s answers: a mission repo's layout does not change while a host runs. */
const ownGitDirs = new Map<string, Promise<string | null>>();

async function findOwnGitDir(repo: string): Promise<string | null> {
  const dotGit = join(repo, '.git');
  if ((await stat(dotGit).catch(() => null))?.isDirectory()) return dotGit;
  const bare = await Promise.all(
    ['objects', 'refs', 'HEAD'].map((name) => stat(join(repo, name)).catch(() => null)),
  );
  return bare.every(Boolean) ? repo : null;
}
