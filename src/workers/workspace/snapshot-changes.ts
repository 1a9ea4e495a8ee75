/** What an agent changed in its checkout, read from one `git status` relative to HEAD. */
import { rmSync } from 'node:fs';
import { FEW_PATHS, literalPathspec, runGitBytes } from './git.js';
import { writeStatusIndex } from './index-file.js';

/** flotilla's own by-products (prompts, results, archive): never the agent's work, never rolled back. */
export const PLANNING_DIR = '.planning/';

export function isPlanningPath(path: string): boolean {
  return path === '.planning' || path.startsWith(PLANNING_DIR);
}

export interface ChangedFile {
  /** The path as UTF-8; a name that is not UTF-8 has its bad bytes replaced (U+FFFD) here. */
  readonly path: string;
  /** True for a file git does not track (`??`): restoring it means deleting it. */
  readonly untracked: boolean;
  /** The path's bytes as git wrote them, where they are not UTF-8: only git can be given this path. */
  readonly bytes?: Buffer;
}

/** A checkout as one `git status` saw it: its HEAD and every path that differs from HEAD. */
export interface WorktreeState {
  /** HEAD's commit, or null in a repository without one. */
  readonly head: string | null;
  /** Changed, deleted and untracked paths (not ignored ones), `.planning/` included, each once. */
  readonly changes: readonly ChangedFile[];
  /**
   * Untracked paths git ignores, as `git status --ignored=matching` lists them: a directory an
   * ignore pattern matches as one entry ending in `/` (`node_modules/`), else each file.
   */
  readonly ignored: readonly string[];
}

/** Fields before the path in porcelain v2's records: `1 XY sub mH mI mW hH hI path`, and so on. */
const FIELDS_BEFORE_PATH: Readonly<Record<string, number>> = { '1': 8, '2': 9, u: 10, '?': 1, '!': 1 };

/**
 * Parses `git status --porcelain=v2 -z --branch`. A rename or copy record (`2`) is followed by its
 * source path, which counts as changed too (it was deleted or read from); both sides are reported.
 * Ignored records (`!`) are listed apart. Given git's bytes, a path that is not UTF-8 keeps them
 * (ChangedFile.bytes).
 */
export function parsePorcelainV2Z(output: string | Buffer): WorktreeState {
  const bytes = typeof output === 'string' ? Buffer.from(output) : output;
  const records = nulFields(bytes);
  let head: string | null = null;
  const changes: ChangedFile[] = [];
  const ignored: string[] = [];
  const seen = new Set<string>();
  const add = (raw: Buffer | undefined, untracked: boolean) => {
    if (raw === undefined || raw.length === 0) return;
    const path = raw.toString('utf8');
    const key = isUtf8(raw, path) ? path : raw.toString('latin1');
    if (seen.has(key)) return;
    seen.add(key);
    changes.push(key === path ? { path, untracked } : { path, untracked, bytes: raw });
  };
  for (let i = 0; i < records.length; i++) {
    const record = records[i] ?? Buffer.alloc(0);
    if (record[0] === HASH) {
      const line = record.toString('utf8');
      if (line.startsWith('# branch.oid ')) {
        const oid = line.slice('# branch.oid '.length);
        head = oid === '(initial)' ? null : oid;
      }
      continue;
    }
    const kind = String.fromCharCode(record[0] ?? 0);
    const fields = FIELDS_BEFORE_PATH[kind];
    if (fields === undefined || record[1] !== SPACE) continue;
    let start = 0;
    for (let n = 0; n < fields && start !== -1; n++) start = record.indexOf(SPACE, start + 1);
    if (start === -1) continue;
    const path = record.subarray(start + 1);
    if (kind === '!') {
      ignored.push(path.toString('utf8'));
      continue;
    }
    add(path, kind === '?');
    if (kind === '2') add(records[++i], false);
  }
  return { head, changes, ignored };
}

const HASH = 0x23;
const SPACE = 0x20;

/** `bytes` split at each NUL (git's `-z` output), the empty field after the last NUL dropped. */
export function nulFields(bytes: Buffer): Buffer[] {
  const fields: Buffer[] = [];
  let from = 0;
  for (let nul = bytes.indexOf(0); nul !== -1; nul = bytes.indexOf(0, from)) {
    fields.push(bytes.subarray(from, nul));
    from = nul + 1;
  }
  if (from < bytes.length) fields.push(bytes.subarray(from));
  return fields;
}

/** True when `raw` is UTF-8: `decoded` (its UTF-8 decoding) gives the same bytes back. */
export function isUtf8(raw: Buffer, decoded = raw.toString('utf8')): boolean {
  return !decoded.includes('\uFFFD') || Buffer.from(decoded).equals(raw);
}

/** The bytes of a changed path, as git named it. */
export function pathBytes(change: Pick<ChangedFile, 'path' | 'bytes'>): Buffer {
  return change.bytes ?? Buffer.from(change.path);
}

export interface ReadWorktreeOptions {
  /**
   * Git looks at these paths alone (and below them): the paths a file-system monitor said changed,
   * or the entries of the directories that changed (warm-checkout.ts), so nothing else can differ.
   */
  readonly only?: readonly string[];
  /** False: the tracked files alone (`-uno`), no untracked or ignored ones, no directory read. */
  readonly untracked?: boolean;
}

/** One walk of the checkout: its HEAD, every changed path (`.planning/` included) and what git ignores. */
export async function readWorktree(dir: string, options: ReadWorktreeOptions = {}): Promise<WorktreeState> {
  const { only, untracked = true } = options;
  // A few paths of a large tree: git reads the entries at and above them alone (status-index.ts).
  const indexFile = only ? await writeStatusIndex(dir, only) : null;
  try {
    return await statusOf(dir, only, untracked, indexFile);
  } finally {
    if (indexFile) rmSync(indexFile, { force: true });
  }
}

async function statusOf(
  dir: string,
  only: readonly string[] | undefined,
  untracked: boolean,
  indexFile: string | null,
): Promise<WorktreeState> {
  const { stdout } = await runGitBytes(
    [
      ...(only ? FEW_PATHS : []),
      'status',
      '--porcelain=v2',
      '-z',
      '--branch',
      ...(untracked ? ['--untracked-files=all', '--ignored=matching'] : ['--untracked-files=no']),
      '--no-renames',
      ...(only ? ['--', ...only.map(literalPathspec)] : []),
    ],
    {
      cwd: dir,
      // status refreshes the index opportunistically; that lock would collide with the agent's own git use.
      env: { GIT_OPTIONAL_LOCKS: '0', ...(indexFile ? { GIT_INDEX_FILE: indexFile } : {}) },
    },
  );
  return parsePorcelainV2Z(stdout);
}

/** The agent's changes: `.planning/` left out. */
export function agentChanges(state: WorktreeState): ChangedFile[] {
  return state.changes.filter((change) => !isPlanningPath(change.path));
}

/** Every changed path including untracked and deleted files, `.planning/` excluded. */
export async function readChanges(dir: string): Promise<ChangedFile[]> {
  return agentChanges(await readWorktree(dir));
}

export function changedPaths(state: WorktreeState): string[] {
  return agentChanges(state)
    .map((change) => change.path)
    .sort();
}

export async function snapshotChanges(dir: string): Promise<string[]> {
  return changedPaths(await readWorktree(dir));
}
