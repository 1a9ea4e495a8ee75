/**
 * The gate's merge of a work commit into the integration tip done in-process, where git's answer
 * needs no merge of any file: the work's own changes (against the base it was made on) land on
 * paths the tip still has as the base had them. The merged tree is then the tip's with the work's
 * changes applied, held in the caller's batch of objects (object-batch.ts), one `git merge-tree`
 * process fewer a task. Everything else is left to `merge-tree` (null): a path both sides changed
 * (even the same way), a folder one side removed that the other changed (git's rename detection
 * may move a file across it), a work commit the tip already holds, an object not read here, a repository
 * that matches names ignoring case. test/workers/workspace/loose-merge.test.ts holds the answers to
 * merge-tree's on random changes.
 */
import { cachedWriteRules } from './git-files.js';
import { applyTreeEdits, type TreeEdit, type TreeRecord } from './loose-import.js';
import { entryAt, repoReader, treeDiff } from './loose-trees.js';
import type { ObjectBatch } from './object-batch.js';

/** Merges walked back from the tip to the work's base before git is asked instead. */
const MAX_WALK = 1_000;

/** More changed files than this and git merges. */
const MAX_FILES = 2_000;

export interface LooseMergeOptions {
  /** Holds the merged trees until the caller writes them; its repository's objects are read. */
  readonly batch: ObjectBatch;
  readonly head: { readonly commit: string; readonly tree: string };
  readonly work: string;
}

/** The merged tree, as `git merge-tree --write-tree <head> <work>` would write it; null: ask git. */
export async function looseMerge(options: LooseMergeOptions): Promise<string | null> {
  const { head, work } = options;
  const { batch } = options;
  if ((await cachedWriteRules(batch.gitDir)).ignoreCase) return null;
  try {
    const reader = await repoReader(batch.gitDir, batch);
    const [base, ...more] = await reader.parentsOf(work);
    if (!base || more.length > 0) return null;
    // The base must be on the tip's first-parent line (the integration branch's merges), and the
    // work not merged since (its merge base would be the work itself).
    for (let at = head.commit, steps = 0; at !== base; steps++) {
      if (steps >= MAX_WALK) return null;
      const parents = await reader.parentsOf(at);
      if (parents.length === 0 || parents.length > 2 || parents[1] === work) return null;
      at = parents[0] ?? '';
    }
    const baseTree = await reader.treeOf(base);
    const diff = await treeDiff(reader, baseTree, await reader.treeOf(work), MAX_FILES);
    if (!diff) return null;
    if (diff.files.length === 0) return head.tree;
    const same = (a: TreeRecord | undefined, b: TreeRecord | undefined) =>
      a === b || (a !== undefined && b !== undefined && a.mode === b.mode && a.id === b.id);
    const asBase = async (path: string) =>
      same(await entryAt(reader, head.tree, path), await entryAt(reader, baseTree, path));
    const folders = new Set<string>();
    for (const file of diff.files) {
      if (!(await asBase(file.path))) return null;
      for (let slash = file.path.indexOf('/'); slash > 0; slash = file.path.indexOf('/', slash + 1)) {
        folders.add(file.path.slice(0, slash));
      }
    }
    // A folder above a changed file is a folder in the tip, or there as the base had it.
    for (const folder of folders) {
      if ((await entryAt(reader, head.tree, folder))?.mode !== '40000' && !(await asBase(folder)))
        return null;
    }
    for (const folder of diff.removedFolders) if (!(await asBase(folder))) return null;
    const edits: TreeEdit[] = diff.files.map((file) =>
      file.after
        ? { path: file.path, mode: file.after.mode, id: file.after.id }
        : { path: file.path, deleted: true },
    );
    return applyTreeEdits(batch, head.tree, edits);
  } catch {
    // Not read here, or not as git writes it: git merges.
    return null;
  }
}
