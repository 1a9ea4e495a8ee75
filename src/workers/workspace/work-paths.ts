/**
 * The path gate (verify-path.ts) on a work commit about to be merged: every file it adds or
 * changes against its first parent, read in-process where its trees can be (loose-trees.ts), else
 * from `git diff-tree`. `git merge-tree` takes any name a tree holds, and so would the in-process
 * merge; an attempt commitAttempt() wrote passes this already, so this stops only a work commit
 * made some other way (a ref an agent pushed itself, a commit of an older flotilla).
 */
import { runGitBytes } from './git.js';
import { repoReader, treeDiff } from './loose-trees.js';
import type { ObjectBatch } from './object-batch.js';
import { nulFields } from './snapshot-changes.js';
import { pathRefusal, type RefusedPath } from './verify-path.js';

/** More changed files than this and git lists them. */
const MAX_FILES = 2_000;

/** The files `work` brings that git refuses, sorted; none for a commit without a parent to diff. */
export async function refusedInWork(
  dir: string,
  batch: ObjectBatch | null,
  work: string,
): Promise<RefusedPath[]> {
  const changed = (batch ? await changedInProcess(batch, work) : null) ?? (await changedByGit(dir, work));
  const refused: RefusedPath[] = [];
  for (const { path, mode, bytes } of changed) {
    const refusal = pathRefusal(bytes ?? path, mode);
    if (refusal) refused.push({ path, refusal });
  }
  return refused.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

interface ChangedFile {
  readonly path: string;
  readonly mode: string;
  /** The path as git named it, checked as git checks it (a name that is not UTF-8 included). */
  readonly bytes?: Buffer;
}

async function changedInProcess(batch: ObjectBatch, work: string): Promise<ChangedFile[] | null> {
  try {
    const reader = await repoReader(batch.gitDir, batch);
    const [base] = await reader.parentsOf(work);
    if (!base) return null;
    const diff = await treeDiff(reader, await reader.treeOf(base), await reader.treeOf(work), MAX_FILES);
    if (!diff) return null;
    return diff.files.flatMap((file) => (file.after ? [{ path: file.path, mode: file.after.mode }] : []));
  } catch {
    return null;
  }
}

/** `git diff-tree -r -z` of the work against its first parent: `:<old> <new> <ids> <status>\0<path>\0`. */
async function changedByGit(dir: string, work: string): Promise<ChangedFile[]> {
  const args = ['diff-tree', '-r', '-z', '--no-renames', '--root', '--no-commit-id', work];
  const fields = nulFields((await runGitBytes(args, { cwd: dir })).stdout);
  const changed: ChangedFile[] = [];
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const [, mode = '', , , status = ''] = (fields[i]?.toString('latin1') ?? '').split(' ');
    const bytes = fields[i + 1] ?? Buffer.alloc(0);
    if (status !== 'D') changed.push({ path: bytes.toString('utf8'), mode, bytes });
  }
  return changed;
}
