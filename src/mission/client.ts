import { enqueueAttempt, enqueueFinalize } from '../queue/enqueue.js';
import { QueueSet } from '../queue/queues.js';
import { type Config, loadConfig } from '../shared/config.js';
import type { MissionEvent, MissionStatusJson } from '../shared/contracts.js';
import { FlotillaError } from '../shared/errors.js';
import { type Logger, silentLogger } from '../shared/logger.js';
import type { MissionSpec } from '../shared/mission.js';
import { connectOrFail, type RedisClient } from '../shared/redis.js';
import { createTelemetry } from '../shared/telemetry.js';

import { MissionStore } from '../store/mission-store.js';
import { loadMissionOrThrow } from './load.js';
import { submitValidMission } from './submit.js';

export interface ClientOptions {
  /** Defaults to REDIS_URL, then redis://127.0.0.1:6379. */
  readonly redisUrl?: string;
  readonly prefix?: string;
  readonly secret?: string;
  readonly logger?: Logger;
  readonly config?: Config;
}

export interface SubmittedMission {
  readonly id: string;
  readonly branch: string;
  readonly repo: string;
  /** What preparing the workspace did that a person should hear about (see prepare-workspace). */
  readonly notes: readonly string[];
}

/**
 * The library API for scripts: submit, follow, cancel and answer missions. A client holds one
 * Redis connection; close it when done. The named functions below open and close one per call.
 */
export class FlotillaClient {
  private constructor(
    readonly redis: RedisClient,
    readonly store: MissionStore,
    private readonly queues: QueueSet,
    private readonly config: Config,
    private readonly logger: Logger,
  ) {}

  static async connect(options: ClientOptions = {}): Promise<FlotillaClient> {
    const base = options.config ?? loadConfig();
    const config: Config = {
      ...base,
      prefix: options.prefix ?? base.prefix,
      secret: options.secret ?? base.secret,
      redisUrl: options.redisUrl ?? base.redisUrl,
    };
    const redis = await connectOrFail(config.redisUrl ?? 'redis://127.0.0.1:6379');
    const store = new MissionStore(redis, config.prefix, config.secret);
    return new FlotillaClient(
      redis,
      store,
      new QueueSet(redis, config.prefix, createTelemetry(config.otel)),
      config,
      options.logger ?? silentLogger(),
    );
  }

  /** Validates (a file) and submits; an invalid mission throws before anything reaches Redis. */
  async submit(mission: string | MissionSpec): Promise<SubmittedMission> {
    const spec = typeof mission === 'string' ? await loadMissionOrThrow(mission) : mission;
    return submitValidMission(this.context(), spec);
  }

  status(id: string): Promise<MissionStatusJson> {
    return this.store.status(id);
  }

  async summary(id: string): Promise<string | null> {
    return this.store.getMetaField(id, 'summary');
  }

  /** Resolves when the mission has finished and its summary is written; `onEvent` sees every event. */
  async wait(
    id: string,
    options: { onEvent?: (event: MissionEvent) => void; signal?: AbortSignal; pollMs?: number } = {},
  ): Promise<MissionStatusJson> {
    if (!(await this.store.missionExists(id)))
      throw new FlotillaError('mission/not-found', `no mission '${id}'`);
    const reader = this.redis.duplicate();
    reader.on('error', () => {});
    const readerStore = new MissionStore(reader, this.store.prefix, this.config.secret);
    let last = '0';
    try {
      while (!options.signal?.aborted) {
        const events = await readerStore.readEvents(id, last, options.pollMs ?? 1_000);
        for (const { id: entryId, event } of events) {
          last = entryId;
          options.onEvent?.(event);
        }
        // Finalize writes the summary before its `mission` event, so the summary is read only when
        // that event came, or when nothing came at all (a trimmed stream): not once per event.
        const ended = events.length === 0 || events.some(({ event }) => event.type === 'mission');
        if (ended && (await this.store.getMetaField(id, 'summary')) !== null) return this.store.status(id);
      }
      return this.store.status(id);
    } finally {
      reader.disconnect();
    }
  }

  /** Stops the mission on every host: no new attempts, running CLIs killed. */
  async cancel(id: string): Promise<{ cancelled: string[]; running: string[] }> {
    const result = await this.store.cancel(id, new Date().toISOString());
    await this.store.publishControl({ type: 'cancel', missionId: id });
    await this.store.emit({
      missionId: id,
      type: 'log',
      message: `cancel requested: ${result.running.length} running task(s) being stopped`,
    });
    if (result.settled) await enqueueFinalize({ queues: this.queues, secret: this.config.secret }, id);
    return result;
  }

  /** Answers a task paused with needs_input; it resumes as a continuation attempt. */
  async answer(id: string, taskId: string, text: string): Promise<{ attempt: number }> {
    const { spec } = await this.store.getMission(id);
    const task = spec.tasks.find((t) => t.id === taskId);
    const state = await this.store.getTask(id, taskId);
    if (!task || !state) throw new FlotillaError('usage', `mission ${id} has no task '${taskId}'`);
    if (state.status !== 'needs_input') {
      throw new FlotillaError('usage', `task ${taskId} is ${state.status}, not waiting for an answer`);
    }
    const answers = [...(state.answers ?? []), text];
    if (answers.length > 2) {
      throw new FlotillaError(
        'usage',
        `task ${taskId} already had two answered rounds; a person must take it from here`,
      );
    }
    const now = new Date().toISOString();
    const outcome = await this.store.settle(
      id,
      taskId,
      state.attempts,
      'answer',
      // The next pause overwrites `questions`; each round's questions stay beside its answer.
      { answers, asked: [...(state.asked ?? []), JSON.stringify(state.questions ?? [])] },
      now,
      // Written by the same script, only if the answer applied: the continuation is attempt + 1.
      { at: now, taskId, attempt: state.attempts + 1, stage: 'answer', event: { kind: 'answer', text } },
    );
    if (!outcome.applied)
      throw new FlotillaError('usage', `task ${taskId} is no longer waiting for an answer`);
    // A continuation stays where escalation had taken the task.
    await enqueueAttempt(this.context(), {
      missionId: id,
      task,
      attempt: outcome.attempts,
      cli: state.escalated?.cli ?? null,
    });
    return { attempt: outcome.attempts };
  }

  async close(): Promise<void> {
    await this.queues.close();
    await this.redis.quit().catch(() => undefined);
  }

  private context() {
    return { store: this.store, queues: this.queues, secret: this.config.secret, logger: this.logger };
  }
}

async function withClient<T>(options: ClientOptions, fn: (client: FlotillaClient) => Promise<T>): Promise<T> {
  const client = await FlotillaClient.connect(options);
  try {
    return await fn(client);
  } finally {
    await client.close();
  }
}

export function submitMission(mission: string | MissionSpec, options: ClientOptions = {}) {
  return withClient(options, (client) => client.submit(mission));
}

export function getMissionStatus(id: string, options: ClientOptions = {}) {
  return withClient(options, (client) => client.status(id));
}

export function waitForMission(
  id: string,
  options: ClientOptions & { onEvent?: (event: MissionEvent) => void; signal?: AbortSignal } = {},
) {
  return withClient(options, (client) => client.wait(id, options));
}

export function cancelMission(id: string, options: ClientOptions = {}) {
  return withClient(options, (client) => client.cancel(id));
}
