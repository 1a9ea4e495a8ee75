import type { MissionSpec, TaskSpec } from '../../../shared/mission.js';
import type { MissionStore } from '../../../shared/store/mission-store.js';
import { readAgentSettings } from '../../agent/personality.js';
import { continuationInput, type PromptInput } from './prompt.js';

/**
 * Everything the run prompt needs that lives in mission state: the approved dependencies'
 * handoffs, the previous attempt's feedback, the answers to a paused task's questions, and the
 * agent personality's settings.
 */
export interface RunPromptFacts {
  readonly input: PromptInput;
  /** The write scope: the task's own allowed_paths, else the agent's. */
  readonly allowedPaths?: readonly string[];
  /** The agent's model tier, or the one escalation (gate/escalation.ts) moved the task to. */
  readonly modelTier: string;
  /** Why this attempt runs escalated, when it does. */
  readonly escalation?: string;
  /** What the task has spent so far, to add this attempt's cost to. */
  readonly costUsd: number;
}

export async function gatherPromptFacts(
  store: MissionStore,
  ref: {
    readonly missionId: string;
    readonly spec: MissionSpec;
    readonly task: TaskSpec;
    readonly attempt: number;
  },
  resultPath: string,
): Promise<RunPromptFacts> {
  const { missionId, spec, task, attempt } = ref;
  // The task's own state and only its dependencies', in one round trip: reading every task's
  // state made each run O(tasks).
  const [state, ...depStates] = await store.getTaskStates(missionId, [task.id, ...task.dependsOn]);
  const personality = task.agent ? (spec.agents[task.agent] ?? '') : '';
  const agent = readAgentSettings(personality);
  // agent-dispatch checks writes against the agent's allowed_paths; the task's own list wins.
  const allowedPaths = task.allowedPaths ?? agent.allowedPaths;
  const input: PromptInput = {
    personality,
    missionGoal: spec.goal,
    task: allowedPaths === task.allowedPaths ? task : { ...task, allowedPaths },
    handoff: task.dependsOn.map((dep, i) => {
      const handoff = depStates[i]?.handoff;
      return {
        taskId: dep,
        title: spec.tasks.find((t) => t.id === dep)?.title ?? dep,
        summary: handoff?.summary ?? '',
        outputs: handoff?.outputs ?? '',
        findings: handoff?.findings ?? '',
      };
    }),
    controlMode: task.controlMode,
    resultPath,
    ...(attempt > 1 && state?.feedback
      ? { retry: { attempt: attempt - 1, maxAttempts: task.maxAttempts, feedback: state.feedback } }
      : {}),
    ...(state?.answers?.length
      ? {
          continuation: continuationInput(
            state.asked ?? [JSON.stringify(state.questions ?? [])],
            state.answers,
          ),
        }
      : {}),
  };
  return {
    input,
    ...(allowedPaths ? { allowedPaths } : {}),
    modelTier: state?.escalated?.tier ?? agent.modelTier,
    ...(state?.escalated?.reason ? { escalation: state.escalated.reason } : {}),
    costUsd: state?.costUsd ?? 0,
  };
}
