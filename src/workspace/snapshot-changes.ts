/** What an agent changed in its checkout, read from `git status` relative to HEAD. */
import { runGit } from './git.js';

/** flotilla's own by-products (prompts, results, archive): never the agent's work, never rolled back. */
export const PLANNING_DIR = '.planning/';

export function isPlanningPath(path: string): boolean {
  return path === '.planning' || path.startsWith(PLANNING_DIR);
}

export interface ChangedFile {
  readonly path: string;
  /** True for a file git does not track (`??`): restoring it means deleting it. */
  readonly untracked: boolean;
}

/**
 * Parses `git status --porcelain=v1 -z`. A rename or copy entry is followed by its source path,
 * which counts as changed too (it was deleted or read from); both sides are reported.
 */
export function parsePorcelainZ(output: string): ChangedFile[] {
  const fields = output.split('\0');
  const changes: ChangedFile[] = [];
  for (let i = 0; i < fields.length; i++) {
    const field = fields[i] ?? '';
    if (field.length < 4) continue;
    const code = field.slice(0, 2);
    changes.push({ path: field.slice(3), untracked: code === '??' });
    if (code.includes('R') || code.includes('C')) {
      const source = fields[++i];
      if (source) changes.push({ path: source, untracked: false });
    }
  }
  return changes;
}

/** Every changed path including untracked and deleted files, `.planning/` excluded. */
export async function readChanges(dir: string): Promise<ChangedFile[]> {
  const { stdout } = await runGit(
    ['status', '--porcelain=v1', '-z', '--untracked-files=all', '--no-renames'],
    {
      cwd: dir,
      // status refreshes the index opportunistically; that lock would collide with the agent's own git use.
      env: { GIT_OPTIONAL_LOCKS: '0' },
    },
  );
  const seen = new Set<string>();
  return parsePorcelainZ(stdout).filter((change) => {
    if (isPlanningPath(change.path) || seen.has(change.path)) return false;
    seen.add(change.path);
    return true;
  });
}

export async function snapshotChanges(dir: string): Promise<string[]> {
  return (await readChanges(dir)).map((change) => change.path).sort();
}
