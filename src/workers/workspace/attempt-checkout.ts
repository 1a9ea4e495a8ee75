/** The integration branch as a host's repo cache sees it: its tip, and an attempt's diff against it. */
import { integrationBranch } from '../../shared/contracts.js';
import { FlotillaError } from '../../shared/errors.js';
import { runGit } from './git.js';
import type { RepoCache } from './repo-cache.js';

/** The latest integration commit, after a fetch; a clear error when the mission was never prepared. */
export async function integrationCommit(cache: RepoCache, missionId: string): Promise<string> {
  const branch = integrationBranch(missionId);
  const commit = await cache.remoteCommit(branch);
  if (!commit) {
    throw new FlotillaError(
      'git/failed',
      `${cache.repo}: integration branch ${branch} not found (was the mission prepared?)`,
    );
  }
  return commit;
}

export interface DiffAgainstIntegrationOptions {
  readonly cache: RepoCache;
  readonly missionId: string;
  readonly branch: string;
  /** Characters kept; the rest is cut with a note saying so. Default 100 000. */
  readonly maxChars?: number;
}

export const DEFAULT_DIFF_CAP = 100_000;

/**
 * A unified diff of the attempt branch against the point where it left the integration branch (the
 * three-dot form), so work integrated since by other tasks does not show up as this attempt's. The
 * `.planning/` audit files are left out: the critic gets the task and results separately.
 */
export async function diffAgainstIntegration(options: DiffAgainstIntegrationOptions): Promise<string> {
  const { cache, missionId, branch } = options;
  const cap = options.maxChars ?? DEFAULT_DIFF_CAP;
  const integration = integrationBranch(missionId);
  await cache.fetch([integration, branch]);
  const commitOf = async (name: string) => {
    const commit = await cache.remoteCommit(name);
    if (!commit) throw new FlotillaError('git/failed', `${cache.repo}: branch ${name} not found`);
    return commit;
  };
  const from = await commitOf(integration);
  const to = await commitOf(branch);
  const args = [
    'diff',
    '--no-color',
    '--no-ext-diff',
    '--find-renames',
    `${from}...${to}`,
    '--',
    '.',
    ':(exclude).planning/',
  ];
  // Reading a few bytes past the cap is enough to know the diff was cut; a huge diff is never read whole.
  const result = await runGit(args, { cwd: cache.dir, maxBuffer: cap + 1 });
  if (!result.truncated && result.stdout.length <= cap) return result.stdout;
  return `${result.stdout.slice(0, cap)}\n[diff truncated at ${cap} characters]\n`;
}
