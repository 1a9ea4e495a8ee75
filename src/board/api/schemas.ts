import { z } from 'zod';
import {
  MISSION_STATUSES,
  type MissionEvent,
  type MissionStatusJson,
  TASK_STATUSES,
} from '../../shared/contracts.js';
import { missionSchema } from '../../shared/mission.js';

/**
 * What the HTTP API takes and gives, as zod schemas: the request bodies it parses with them, and
 * the responses, which openapi.ts turns into the OpenAPI document. The status and event shapes
 * are the contracts' (shared/contracts.ts); the checks at the bottom fail to compile if they part.
 */
export const apiRegistry = z.registry<{ id: string; description?: string }>();

const taskStatus = z
  .object({
    id: z.string(),
    title: z.string().optional(),
    status: z.enum(TASK_STATUSES),
    attempts: z.number().int(),
    cli: z.string().nullable(),
    host: z.string().nullable(),
    score: z.number().nullable(),
    error: z.string().nullable(),
    route: z.string().nullable().optional(),
    tier: z.string().nullable().optional(),
    escalation: z.string().nullable().optional(),
    costUsd: z.number().optional(),
    questions: z.unknown().optional(),
    startedAt: z.string().nullable().optional(),
    finishedAt: z.string().nullable().optional(),
  })
  .register(apiRegistry, { id: 'TaskStatus', description: "One task's line of the status object." });

const missionFields = {
  id: z.string(),
  goal: z.string(),
  status: z.enum(MISSION_STATUSES),
  createdAt: z.string(),
  finishedAt: z.string().nullable(),
  branch: z.string(),
  workspace: z.string().optional(),
  costUsd: z.number().optional(),
};

export const missionStatusSchema = z
  .object({ ...missionFields, tasks: z.array(taskStatus) })
  .register(apiRegistry, {
    id: 'MissionStatus',
    description: 'The status object, exactly as `flotilla status <id> --json` prints it.',
  });

export const missionListSchema = z
  .object({
    missions: z.array(z.object({ ...missionFields, tasks: z.number().int() })),
  })
  .register(apiRegistry, {
    id: 'MissionList',
    description:
      'The latest missions, newest first, as `flotilla status --json` lists them: `tasks` is their number.',
  });

export const missionEventSchema = z
  .object({
    at: z.string(),
    missionId: z.string(),
    taskId: z.string().optional(),
    attempt: z.number().int().optional(),
    type: z.enum(['submitted', 'task', 'mission', 'log']),
    status: z.string().optional(),
    message: z.string(),
  })
  .register(apiRegistry, {
    id: 'MissionEvent',
    description:
      "One event of the mission's stream: each Server-Sent Event's `data`, its `event` the type, its `id` the Redis stream id.",
  });

export const missionInputSchema = missionSchema.register(apiRegistry, {
  id: 'Mission',
  description:
    "A mission, with the fields and spellings of a mission file. Over HTTP `workspace` must be an absolute path (on the board's machine) or a URL.",
});

export const problemSchema = z
  .object({
    path: z.string(),
    line: z.number().int().optional(),
    column: z.number().int().optional(),
    message: z.string(),
  })
  .register(apiRegistry, {
    id: 'Problem',
    description:
      'One problem of a mission: its JSON path, and for a YAML body the line and column it starts at.',
  });

export const errorSchema = z
  .object({
    error: z.object({
      code: z.string(),
      message: z.string(),
      problems: z.array(problemSchema).optional(),
    }),
  })
  .register(apiRegistry, { id: 'Error', description: 'Every error response.' });

export const submittedSchema = z
  .object({
    id: z.string(),
    branch: z.string(),
    repo: z.string(),
    notes: z.array(z.string()),
    warnings: z.array(problemSchema),
  })
  .register(apiRegistry, {
    id: 'Submitted',
    description: 'A stored and enqueued mission; `warnings` are what is allowed but probably wrong.',
  });

export const cancelledSchema = z
  .object({ cancelled: z.array(z.string()), running: z.array(z.string()) })
  .register(apiRegistry, {
    id: 'Cancelled',
    description: 'Tasks stopped before they started, and running tasks being stopped.',
  });

export const answerRequestSchema = z
  .strictObject({ task: z.string().min(1), text: z.string().min(1) })
  .register(apiRegistry, { id: 'Answer', description: 'The answer to a task paused with needs_input.' });

export const answeredSchema = z
  .object({ task: z.string(), attempt: z.number().int() })
  .register(apiRegistry, { id: 'Answered', description: 'The task resumes as this attempt.' });

export const approveRequestSchema = z
  .strictObject({
    task: z.string().min(1),
    reject: z
      .string()
      .trim()
      .min(1)
      .optional()
      .describe('reject the attempt, saying why (the next attempt reads it)'),
    by: z.string().trim().min(1).max(200).optional().describe('who decides, for the audit trail'),
  })
  .register(apiRegistry, {
    id: 'Approve',
    description:
      "A person's verdict on a task held by approve: human: approve it, or reject it with a reason.",
  });

export const approvedSchema = z
  .object({
    task: z.string(),
    attempt: z.number().int(),
    verdict: z.enum(['approve', 'reject']),
    by: z.string(),
  })
  .register(apiRegistry, {
    id: 'Approved',
    description: 'The verdict sent; a worker host merges or retries the attempt.',
  });

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const statusIsTheContract: Same<z.output<typeof missionStatusSchema>, MissionStatusJson> = true;
const eventIsTheContract: Same<z.output<typeof missionEventSchema>, MissionEvent> = true;
void statusIsTheContract;
void eventIsTheContract;
