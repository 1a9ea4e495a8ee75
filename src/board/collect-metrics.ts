import type { RedisClient } from '../shared/redis.js';
import type { MissionStore } from '../shared/store/mission-store.js';
import { listHosts } from '../shared/store/registry.js';
import type { BoardQueues } from './board-queues.js';
import { formatPrometheus } from './metrics-format.js';
import { type AuditStats, auditStats, buildMetricFamilies } from './metrics-model.js';
import { readMissionRows } from './read-missions.js';

/**
 * The gate writes its audit entry just after the transition that finishes the mission, so a
 * trail counts as final only a while after `finishedAt`.
 */
const SETTLE_MS = 60_000;

function settledLongAgo(finishedAt: string | null, now = Date.now()): boolean {
  return finishedAt !== null && now - Date.parse(finishedAt) > SETTLE_MS;
}

/**
 * A scrape reads the newest `window` missions. Audit trails hold prompts and outputs and can be
 * large, so a finished mission's stats are computed once and kept (its audit no longer grows);
 * only running missions' trails are read on every scrape.
 */
export function createMetricsCollector(deps: {
  store: MissionStore;
  redis: RedisClient;
  prefix: string;
  queues: BoardQueues;
  window: number;
}) {
  const finished = new Map<string, AuditStats>();

  return async function collect(): Promise<string> {
    const [rows, counts, hosts] = await Promise.all([
      readMissionRows(deps.store, deps.window),
      deps.queues.counts(),
      listHosts(deps.redis, deps.prefix),
    ]);
    const missions = await Promise.all(
      rows.map(async (row) => {
        const cached = finished.get(row.id);
        if (cached) return { row, stats: cached };
        const stats = auditStats(await deps.store.getAudit(row.id));
        if (settledLongAgo(row.finishedAt)) finished.set(row.id, stats);
        return { row, stats };
      }),
    );
    // Missions that left the window leave the cache too, so it never holds more than `window`.
    const inWindow = new Set(rows.map((r) => r.id));
    for (const id of finished.keys()) if (!inWindow.has(id)) finished.delete(id);
    return formatPrometheus(buildMetricFamilies({ queues: counts, missions, hosts, window: deps.window }));
  };
}
