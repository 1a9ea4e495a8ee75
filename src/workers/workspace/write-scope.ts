/**
 * Write scope: changes outside a task's `allowed_paths`, or any change in a
 * read-only control mode, are rolled back before the attempt is committed. The decision is pure;
 * the rollback is the thin git shell around it.
 */
import { readdir, rm, rmdir } from 'node:fs/promises';
import { resolve, sep } from 'node:path';
import { runGit } from './git.js';
import { type ChangedFile, isPlanningPath, pathBytes, readChanges } from './snapshot-changes.js';

interface ScopeEntry {
  /** A path allowed exactly, or '' for "everything". */
  readonly exact: string;
  /** Paths under this prefix are allowed; always ends with '/'. */
  readonly prefix: string;
}

/**
 * `./src`, `src` and `src/` all name the directory `src`; `src/**` is read as `src/` too, since
 * that is what people mean by it. `a.ts` allows `a.ts` (and, should it be a directory, what is in it).
 */
function toScopeEntry(raw: string): ScopeEntry {
  let entry = raw.trim().replace(/\\/g, '/');
  while (entry.startsWith('./')) entry = entry.slice(2);
  entry = entry.replace(/^\/+/, '').replace(/\/\*\*(\/\*)?$/, '/');
  if (entry === '.' || entry === '') return { exact: '', prefix: '' };
  const base = entry.replace(/\/+$/, '');
  return { exact: base, prefix: `${base}/` };
}

function isAllowed(path: string, entries: readonly ScopeEntry[]): boolean {
  return entries.some((entry) => entry.exact === '' || path === entry.exact || path.startsWith(entry.prefix));
}

/** False when no change at all could break the scope: no list (or only blank entries), not read-only. */
export function limitsWrites(allowedPaths: readonly string[] | undefined, readOnly: boolean): boolean {
  return readOnly || (allowedPaths ?? []).some((raw) => raw.trim() !== '');
}

/**
 * The changed paths that break the write scope, sorted. Empty or missing `allowedPaths` means no
 * limit; `readOnly` makes every change a violation; `.planning/` is never one.
 */
export function scopeViolations(
  changed: readonly string[],
  allowedPaths: readonly string[] | undefined,
  readOnly: boolean,
): string[] {
  const candidates = [...new Set(changed)].filter((path) => !isPlanningPath(path)).sort();
  if (readOnly) return candidates;
  const entries = (allowedPaths ?? []).filter((raw) => raw.trim() !== '').map(toScopeEntry);
  if (entries.length === 0) return [];
  return candidates.filter((path) => !isAllowed(path, entries));
}

export interface EnforceWriteScopeOptions {
  readonly dir: string;
  /** The checkout's changes when the caller has read them already (one `git status` per attempt). */
  readonly changes?: readonly ChangedFile[];
  readonly allowedPaths?: readonly string[];
  readonly readOnly: boolean;
}

/**
 * Deletes a file git reported as untracked, then the directories it leaves empty. `path` as git
 * named it: a Buffer keeps a name that is not UTF-8 (ChangedFile.bytes).
 */
export async function deleteUntracked(root: string, path: string | Buffer): Promise<void> {
  const named = typeof path === 'string' ? Buffer.from(path) : path;
  // An untracked repository is listed as a folder, `nested/`.
  const bytes = named.at(-1) === SLASH ? named.subarray(0, -1) : named;
  const parts = bytes.toString('latin1').split('/');
  // git's paths never leave the checkout; be sure (`..`, an absolute path).
  if (parts.some((part) => part === '' || part === '.' || part === '..')) return;
  const target = Buffer.concat([Buffer.from(`${root}${sep}`), bytes]);
  await rm(target, { recursive: true, force: true });
  for (let end = bytes.lastIndexOf(SLASH); end > 0; end = bytes.lastIndexOf(SLASH, end - 1)) {
    const parent = Buffer.concat([Buffer.from(`${root}${sep}`), bytes.subarray(0, end)]);
    const left = await readdir(parent).catch(() => null);
    if (left === null || left.length > 0) break;
    await rmdir(parent).catch(() => undefined);
  }
}

const SLASH = 0x2f;
const NUL = Buffer.from([0]);

export async function enforceWriteScope(
  options: EnforceWriteScopeOptions,
): Promise<{ violations: string[] }> {
  const root = resolve(options.dir);
  // No limit at all: nothing can violate it, and a `git status` of a large tree is not free.
  if (!limitsWrites(options.allowedPaths, options.readOnly)) return { violations: [] };
  const changes = options.changes ?? (await readChanges(root));
  const violations = scopeViolations(
    changes.map((change) => change.path),
    options.allowedPaths,
    options.readOnly,
  );
  if (violations.length === 0) return { violations };

  const violating = new Set(violations);
  const tracked = changes.filter((change) => violating.has(change.path) && !change.untracked);
  if (tracked.length > 0) {
    // Index and working tree both go back to HEAD, so staged edits, deletions and additions are
    // undone too (`git checkout -- <file>` alone restores from the index and would keep them).
    // Paths go on stdin: no argument-length limit, and literal, so `*` in a name is not a glob.
    await runGit(
      [
        '--literal-pathspecs',
        'restore',
        '--source=HEAD',
        '--staged',
        '--worktree',
        '--pathspec-from-file=-',
        '--pathspec-file-nul',
      ],
      { cwd: root, input: Buffer.concat(tracked.flatMap((change) => [pathBytes(change), NUL])) },
    );
  }
  for (const change of changes) {
    if (violating.has(change.path) && change.untracked) await deleteUntracked(root, pathBytes(change));
  }
  return { violations };
}

/** The rolled-back paths for the attempt's summary, or '' when there were none; long lists are cut. */
export function describeViolations(violations: readonly string[], limit = 20): string {
  if (violations.length === 0) return '';
  const shown = violations.slice(0, limit).join(', ');
  const more = violations.length > limit ? ` and ${violations.length - limit} more` : '';
  return `${shown}${more}`;
}
