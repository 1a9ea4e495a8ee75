import { readdir, rmdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { FlotillaClient } from '../../client.js';
import type { Config } from '../../shared/config.js';
import { formatDuration, parseDuration } from '../../shared/duration.js';
import { FlotillaError } from '../../shared/errors.js';
import { chooseRedis, isHomeRedis } from '../../shared/home-redis.js';
import type { RedisClient } from '../../shared/redis.js';
import { missionIndexKey, missionKeys } from '../../shared/store/keys.js';
import type { Io } from '../io.js';

/**
 * Mission records never expire on their own (a finished mission's report must stay readable), so
 * `flotilla prune` is the retention: finished missions older than a cut-off leave Redis, and the
 * empty per-host work folders that attempts leave under FLOTILLA_HOME go too. The git branch of a
 * mission is the user's and stays. BullMQ's own jobs expire by age (shared/queues.ts RETENTION).
 * On the home's own Redis (no REDIS_URL) the append-only file is rewritten afterwards, so what
 * was pruned leaves the disk too.
 */

/** A folder younger than this may be one a host is about to fill; it is left for next time. */
const EMPTY_FOLDER_MIN_AGE_MS = 3_600_000;

export interface PruneDecision {
  readonly id: string;
  readonly prune: boolean;
  readonly why: string;
}

/** Pure: which missions go. A running mission is never pruned, whatever its age. */
export function decidePrune(
  missions: readonly { id: string; status: string; createdAt: string; finishedAt: string | null }[],
  cutoffMs: number,
): PruneDecision[] {
  return missions.map((mission) => {
    if (mission.status === 'running') return { id: mission.id, prune: false, why: 'running' };
    const ended = Date.parse(mission.finishedAt ?? mission.createdAt);
    return ended < cutoffMs
      ? {
          id: mission.id,
          prune: true,
          why: `${mission.status}, ended ${mission.finishedAt ?? mission.createdAt}`,
        }
      : { id: mission.id, prune: false, why: 'too recent' };
  });
}

export async function prune(
  args: { olderThan: string; dryRun: boolean },
  given: Config,
  io: Io,
): Promise<number> {
  const ageMs = parseDuration(args.olderThan);
  if (ageMs === undefined) {
    throw new FlotillaError(
      'usage',
      `--older-than: expected an age like 30d, 12h or 90m, got '${args.olderThan}'`,
    );
  }
  const cutoff = Date.now() - ageMs;
  const { config, home } = await chooseRedis(given);
  const client = await FlotillaClient.connect({ config }).catch(async (error: unknown) => {
    await home?.release();
    throw error;
  });
  try {
    const index = missionIndexKey(config.prefix);
    // The index is scored by creation time; a mission created after the cut-off cannot have ended before it.
    const candidates = await client.redis.zrangebyscore(index, '-inf', String(cutoff));
    const found = await Promise.all(candidates.map((id) => client.status(id).catch(() => null)));
    const gone = candidates.filter((_, i) => found[i] === null);
    const decisions = decidePrune(
      found.filter((s) => s !== null),
      cutoff,
    ).filter((d) => d.prune);
    for (const decision of decisions) {
      io.out(`${args.dryRun ? 'would prune' : 'pruned'} ${decision.id} (${decision.why})`);
      if (!args.dryRun) {
        await client.redis.del(...Object.values(missionKeys(config.prefix, decision.id)));
        await client.redis.zrem(index, decision.id);
      }
    }
    // Index entries whose mission record is already gone are dangling; they go without a word.
    if (!args.dryRun && gone.length > 0) await client.redis.zrem(index, ...gone);
    const folders = await emptyFolders(join(config.home, 'work'), Date.now() - EMPTY_FOLDER_MIN_AGE_MS);
    if (!args.dryRun) for (const folder of folders) await rmdir(folder).catch(() => undefined);
    io.out(
      `${args.dryRun ? 'would prune' : 'pruned'} ${decisions.length} mission(s) finished over ${formatDuration(ageMs)} ago and ${folders.length} empty work folder(s)`,
    );
    if (!args.dryRun && isHomeRedis(config)) await compact(client.redis);
    return 0;
  } finally {
    await client.close();
    await home?.release();
  }
}

/** How long prune waits for the append-only file's rewrite; a larger file finishes in the background. */
const REWRITE_WAIT_MS = 30_000;

/**
 * Rewrites the append-only file to what is left and waits for it, so that the last process to
 * leave does not stop the server mid-rewrite (the old file would stay, whole, until next time).
 */
async function compact(redis: RedisClient): Promise<void> {
  await redis.bgrewriteaof().catch(() => undefined);
  const deadline = Date.now() + REWRITE_WAIT_MS;
  while (Date.now() < deadline) {
    const info = await redis.info('persistence');
    if (/aof_rewrite_in_progress:0/.test(info) && /aof_rewrite_scheduled:0/.test(info)) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Empty folders below `root` (deepest first, so a parent emptied by its children goes too), older than `before`. */
async function emptyFolders(root: string, before: number): Promise<string[]> {
  const found: string[] = [];
  const visit = async (dir: string): Promise<boolean> => {
    let entries: import('node:fs').Dirent[];
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch {
      return false;
    }
    let empty = true;
    for (const entry of entries) {
      if (!entry.isDirectory() || !(await visit(join(dir, entry.name)))) empty = false;
    }
    if (empty && dir !== root && (await stat(dir)).mtimeMs < before) {
      found.push(dir);
      return true;
    }
    return false;
  };
  await visit(root);
  return found;
}
