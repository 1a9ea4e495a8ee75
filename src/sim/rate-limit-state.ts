import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

/**
 * `rate_limit` with `times: n` must answer "rate limited" n times and then let the run through. A
 * rate limit does not use up an attempt, so the prompt cannot count for us: the count lives in a
 * small file outside the worktree (which flotilla may recreate when the job comes back).
 *
 * The key is the git repository the worktree belongs to, the role and the dispatch task id, so the
 * same task in a fresh mission repository (a new demo run, a new test) starts counting from zero.
 * Counts expire after an hour without use.
 */

const EXPIRE_MS = 60 * 60 * 1000;

export function defaultStateDir(env: NodeJS.ProcessEnv): string {
  return env.FLOTILLA_SIM_STATE_DIR ?? join(tmpdir(), 'flotilla-sim-state');
}

export function rateLimitKey(cwd: string, role: string, dispatchTaskId: string): string {
  return createHash('sha256')
    .update(`${gitCommonDir(cwd)}\n${role}\n${dispatchTaskId}`)
    .digest('hex')
    .slice(0, 32);
}

export async function takeRateLimit(
  stateDir: string,
  key: string,
  times: number | undefined,
): Promise<boolean> {
  if (times === undefined) return true;
  const file = join(stateDir, `${key}.json`);
  const state = await readState(file);
  if (state.count >= times) return false;
  await mkdir(stateDir, { recursive: true });
  await writeFile(file, JSON.stringify({ count: state.count + 1, at: Date.now() }));
  return true;
}

async function readState(file: string): Promise<{ count: number }> {
  try {
    const parsed: unknown = JSON.parse(await readFile(file, 'utf8'));
    if (typeof parsed !== 'object' || parsed === null) return { count: 0 };
    const { count, at } = parsed as Record<string, unknown>;
    if (typeof count !== 'number' || typeof at !== 'number' || Date.now() - at > EXPIRE_MS)
      return { count: 0 };
    return { count };
  } catch {
    return { count: 0 };
  }
}

/** The shared `.git` directory of the repository `cwd` is in (a worktree's `.git` file points at it). */
export function gitCommonDir(cwd: string): string {
  for (let dir = resolve(cwd); ; dir = dirname(dir)) {
    const dotGit = join(dir, '.git');
    if (existsSync(dotGit)) {
      if (statSync(dotGit).isDirectory()) return dotGit;
      const pointer = /^gitdir:\s*(.+)$/m.exec(readFileSync(dotGit, 'utf8'))?.[1]?.trim();
      if (!pointer) return dotGit;
      const gitDir = resolve(dir, pointer);
      const common = join(gitDir, 'commondir');
      return existsSync(common) ? resolve(gitDir, readFileSync(common, 'utf8').trim()) : gitDir;
    }
    if (dirname(dir) === dir) return resolve(cwd);
  }
}
