import { type Adapter, type DispatchConfigInput, dispatchConfigSchema } from '../../src/shared/adapter.js';
import { type AuditEvent, renderAuditEvent } from '../../src/shared/audit.js';
import type { AuditEntry } from '../../src/shared/contracts.js';
import type { MissionSpec, TaskSpec } from '../../src/shared/mission.js';

/**
 * The shapes tests build over and over: a normalised task, a mission of tasks, an adapter, an
 * audit entry. Each takes overrides; the defaults are the ones a validated mission file gets.
 */

export function taskSpec(overrides: Partial<TaskSpec> = {}): TaskSpec {
  return {
    id: 'mean',
    title: 'Add mean()',
    description: '',
    capability: 'code_implementation',
    kind: 'coding',
    languages: [],
    frameworks: [],
    dependsOn: [],
    exitCriteria: ['true'],
    files: [],
    critic: true,
    controlMode: 'guarded',
    maxAttempts: 3,
    timeoutMs: 600_000,
    minScore: 7,
    backoffMs: 5_000,
    ...overrides,
  };
}

/** A mission whose tasks are given by their dependencies: `{ b: ['a'], a: [] }`. */
export function missionSpec(
  edges: Readonly<Record<string, readonly string[]>>,
  task: Partial<TaskSpec> = {},
  mission: Partial<MissionSpec> = {},
): MissionSpec {
  const tasks = Object.entries(edges).map(([id, deps]) =>
    taskSpec({ id, title: id, dependsOn: [...deps], ...task }),
  );
  return { goal: 'g', workspace: '/tmp/x', agents: {}, tasks, ...mission };
}

export function adapter(
  overrides: Partial<Omit<Adapter, 'config'>> & { readonly config?: Partial<DispatchConfigInput> } = {},
): Adapter {
  const cli = overrides.cli ?? 'x';
  const { config, ...rest } = overrides;
  return {
    cli,
    displayName: cli,
    file: `${cli}.md`,
    order: 0,
    models: {},
    ...rest,
    config: dispatchConfigSchema.parse({
      available: true,
      capabilities: ['code_implementation'],
      detection_command: `${cli} --version`,
      invoke_command: cli,
      prompt_delivery: 'stdin_pipe',
      result_path: '.planning/dispatch/{task-id}-RESULT.md',
      timeout_ms: 1000,
      ...config,
    }),
  };
}

/** An audit entry as the store writes it: the event and its rendered sentence. */
export function auditEntry(
  event: AuditEvent,
  fields: Partial<Omit<AuditEntry, 'event' | 'message'>> = {},
): AuditEntry {
  return {
    at: '2024-01-01T00:00:00.000Z',
    taskId: 't',
    attempt: 1,
    stage: stageOf(event),
    ...fields,
    event,
    message: renderAuditEvent(event),
  };
}

function stageOf(event: AuditEvent): AuditEntry['stage'] {
  switch (event.kind) {
    case 'run':
    case 'run-cancelled':
    case 'run-refused':
    case 'rate-limited':
    case 'cli-unusable':
    case 'setup-failed':
    case 'escaped-checkout':
    case 'origin-changed':
    case 'checkpoint':
    case 'checkpoint-failed':
    case 'resumed':
      return 'run';
    case 'on-finish':
      return 'finish';
    default:
      return event.kind;
  }
}
