import {
  type DeliveryStatus,
  integrationBranch,
  type MissionStatusJson,
  type TaskState,
} from '../contracts.js';
import type { MissionSpec } from '../mission.js';

/** How task states are stored (and read back), and the status JSON built from them; no IO. */

/**
 * An agent's questions are its own JSON, and the Lua scripts decode and re-encode task state, which
 * would turn every empty list inside them (`"options": []`) into `{}`. They cross Lua as text.
 */
export function toStored(patch: Partial<TaskState>): Record<string, unknown> {
  if (!('questions' in patch)) return patch;
  const { questions, ...rest } = patch;
  return {
    ...rest,
    questionsJson: questions === undefined || questions === null ? null : JSON.stringify(questions),
  };
}

export function fromStored(json: string): TaskState {
  const { questionsJson, ...state } = JSON.parse(json) as TaskState & { questionsJson?: string | null };
  return typeof questionsJson === 'string'
    ? { ...state, questions: JSON.parse(questionsJson) as unknown }
    : state;
}

/** The status JSON (`flotilla status <id> --json`) from a mission's meta, spec and task states. */
export function statusJson(
  id: string,
  meta: Pick<MissionStatusJson, 'goal' | 'status' | 'createdAt' | 'finishedAt' | 'costUsd'> & {
    /** The repository hosts clone, shown as the status's `workspace`. */
    readonly repo?: string;
    readonly delivery?: DeliveryStatus | null;
  },
  spec: MissionSpec,
  states: Readonly<Record<string, TaskState>>,
): MissionStatusJson {
  return {
    id,
    goal: meta.goal,
    status: meta.status,
    createdAt: meta.createdAt,
    finishedAt: meta.finishedAt,
    branch: integrationBranch(id),
    ...(meta.repo ? { workspace: meta.repo } : {}),
    costUsd: meta.costUsd,
    ...(meta.delivery ? { delivery: meta.delivery } : {}),
    tasks: spec.tasks.map((task) => {
      const s = states[task.id];
      return {
        id: task.id,
        title: task.title,
        status: s?.status ?? 'pending',
        attempts: s?.attempts ?? 0,
        cli: s?.cli ?? null,
        host: s?.host ?? null,
        score: s?.score ?? null,
        error: s?.error ?? null,
        route: s?.route ?? null,
        tier: s?.escalated?.tier ?? null,
        escalation: s?.escalated?.reason ?? null,
        costUsd: s?.costUsd,
        startedAt: s?.startedAt ?? null,
        finishedAt: s?.finishedAt ?? null,
        // Questions are shown while they wait for an answer, not after the task went on.
        ...(s?.status === 'needs_input' && s.questions ? { questions: s.questions } : {}),
        ...(s?.status === 'awaiting_approval' && s.heldAt ? { heldAt: s.heldAt } : {}),
        ...(s?.approval ? { approval: s.approval } : {}),
      };
    }),
  };
}
