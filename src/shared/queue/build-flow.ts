import type { FlowJob } from 'bullmq';
import { type AttemptRef, attemptJobId, JOBS, QUEUES, type RunJobData } from '../contracts.js';
import { requirementQueue } from '../host-facts.js';
import { withSignature } from '../signing.js';
import { INFRA_ATTEMPTS, RETENTION } from './queues.js';

export interface AttemptFlowInput extends AttemptRef {
  /** The queue the route chose: `dispatch.<capability>` or `dispatch.internal`. */
  readonly queue: string;
  readonly capability: string;
  /** The key of the task's `requires`: its verify and critic go to that key's queues, like its run. */
  readonly requirementsKey?: string;
  readonly cli?: string;
  /** Backoff before the run starts (retries). */
  readonly delayMs?: number;
  /** BullMQ priority of the run job (queue/priority.ts); none for missions without one. */
  readonly priority?: number;
  readonly secret?: string;
}

/**
 * One attempt of one task as a BullMQ flow: run → verify → critic → gate, children finishing
 * before parents. Every child ignores its own failure on the parent's behalf, so an
 * infrastructure failure still reaches the gate (as a missing result) instead of leaving the
 * parent in waiting-children forever. Job ids are deterministic, so adding the same attempt twice
 * is a no-op.
 */
export function buildAttemptFlow(input: AttemptFlowInput): FlowJob {
  const ref: AttemptRef = { missionId: input.missionId, taskId: input.taskId, attempt: input.attempt };
  const stage = withSignature(ref, input.secret);
  const runData: RunJobData = withSignature(
    { ...ref, capability: input.capability, ...(input.cli ? { cli: input.cli } : {}) },
    input.secret,
  );
  const childOpts = { ...RETENTION, ...INFRA_ATTEMPTS, ignoreDependencyOnFailure: true };
  const id = (stage: keyof typeof JOBS) => attemptJobId(input.missionId, input.taskId, input.attempt, stage);
  return {
    name: JOBS.gate,
    queueName: QUEUES.mission,
    data: stage,
    opts: { ...RETENTION, attempts: 5, backoff: { type: 'exponential', delay: 1_000 }, jobId: id('gate') },
    children: [
      {
        name: JOBS.critic,
        queueName: requirementQueue(QUEUES.critic, input.requirementsKey),
        data: stage,
        opts: { ...childOpts, jobId: id('critic') },
        children: [
          {
            name: JOBS.verify,
            queueName: requirementQueue(QUEUES.verify, input.requirementsKey),
            data: stage,
            opts: { ...childOpts, jobId: id('verify') },
            children: [
              {
                name: JOBS.run,
                queueName: input.queue,
                data: runData,
                opts: {
                  ...childOpts,
                  jobId: id('run'),
                  ...(input.delayMs ? { delay: input.delayMs } : {}),
                  ...(input.priority ? { priority: input.priority } : {}),
                },
              },
            ],
          },
        ],
      },
    ],
  };
}
