import { z } from 'zod';
import { MISSION_STATUSES, type MissionStatus, TASK_STATUSES, type TaskStatus } from '../shared/contracts.js';
import type { MissionStore } from '../shared/store/mission-store.js';

/** The fields of a task state the list and the metrics need; anything else in the JSON is ignored. */
const taskStateSchema = z.object({
  status: z.enum(TASK_STATUSES).catch('pending'),
  cli: z.string().nullable().catch(null),
  costUsd: z.number().optional().catch(undefined),
});

export interface MissionRow {
  readonly id: string;
  readonly goal: string;
  readonly status: MissionStatus;
  readonly createdAt: string;
  readonly finishedAt: string | null;
  readonly costUsd: number;
  readonly tasks: readonly {
    readonly id: string;
    readonly status: TaskStatus;
    readonly cli: string | null;
    readonly costUsd: number;
  }[];
}

function missionStatus(value: string | null | undefined): MissionStatus {
  return MISSION_STATUSES.find((s) => s === value) ?? 'running';
}

function parseTask(id: string, json: string): MissionRow['tasks'][number] {
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch {
    raw = {};
  }
  const parsed = taskStateSchema.safeParse(raw);
  const state = parsed.success ? parsed.data : { status: 'pending' as const, cli: null, costUsd: undefined };
  return { id, status: state.status, cli: state.cli, costUsd: state.costUsd ?? 0 };
}

/**
 * The newest missions with their task states, in one pipelined round trip: the list page and
 * every metrics scrape read this, so it must not cost a round trip per mission. The spec (which
 * may hold whole agent files) is not read.
 */
export async function readMissionRows(store: MissionStore, limit: number): Promise<MissionRow[]> {
  const rows: MissionRow[] = [];
  for (const { id, meta, tasks } of await store.missionRows(limit)) {
    if (!meta) continue;
    const [goal, status, createdAt, finishedAt, costUsd] = meta;
    // A mission whose keys are gone (deleted by hand) is left out rather than shown empty.
    if (goal === null && status === null) continue;
    rows.push({
      id,
      goal: goal ?? '',
      status: missionStatus(status ?? null),
      createdAt: createdAt ?? '',
      finishedAt: finishedAt ?? null,
      costUsd: Number(costUsd ?? 0) || 0,
      tasks: Object.entries(tasks).map(([taskId, json]) =>
        parseTask(taskId, typeof json === 'string' ? json : '{}'),
      ),
    });
  }
  return rows;
}
