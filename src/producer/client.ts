import { Redis } from 'ioredis';
import { type Config, loadConfig } from '../shared/config.js';
import type { MissionEvent, MissionStatusJson } from '../shared/contracts.js';
import { FlotillaError } from '../shared/errors.js';
import { chooseRedis, type HomeRedis } from '../shared/home-redis.js';
import { type Logger, silentLogger } from '../shared/logger.js';
import type { MissionInput, MissionSpec } from '../shared/mission.js';
import type { PrepareWorkspace } from '../shared/prepare-workspace.js';
import { enqueueAttempt, enqueueFinalize } from '../shared/queue/enqueue.js';
import { QueueSet } from '../shared/queue/queues.js';
import { connectOrFail, type RedisClient } from '../shared/redis.js';
import { MissionStore } from '../shared/store/mission-store.js';
import { createTelemetry } from '../shared/telemetry.js';
import { type SentVerdict, sendVerdict } from './approve.js';
import { loadMissionOrThrow, type MissionObjectOptions, missionFromObjectOrThrow } from './load.js';
import { submitValidMission } from './submit.js';

/** The connection name `events()` and `wait()` read with (`CLIENT LIST` shows it). */
export const EVENTS_READER_NAME = 'flotilla-events';

function timeoutMessage(status: MissionStatusJson, timeoutMs: number): string {
  const open = status.tasks.filter(
    (task) => !['completed', 'failed', 'skipped', 'cancelled'].includes(task.status),
  );
  const shown = open
    .slice(0, 5)
    .map((task) => `${task.id} ${task.status}${task.route ? ` (${task.route})` : ''}`);
  const more = open.length > shown.length ? `, … ${open.length - shown.length} more` : '';
  return `mission ${status.id} did not finish within ${timeoutMs} ms; still ${status.status}: ${shown.join(', ')}${more} (is a worker host running against this Redis and prefix?)`;
}

export interface ClientOptions {
  /**
   * Defaults to REDIS_URL, then the machine's own Redis under FLOTILLA_HOME (started when down,
   * its jobs signed with the home's secret unless FLOTILLA_SECRET is set; shared/home-redis.ts).
   */
  readonly redisUrl?: string;
  readonly prefix?: string;
  readonly secret?: string;
  readonly logger?: Logger;
  readonly config?: Config;
  /** How a submit makes the workspace ready; the library's client (src/client.ts) gives the workers' git. */
  readonly prepareWorkspace?: PrepareWorkspace;
}

/** Where an object's relative paths are resolved, and where agent files are read. */
export type SubmitOptions = MissionObjectOptions;

export interface SubmittedMission {
  readonly id: string;
  readonly branch: string;
  readonly repo: string;
  /** What preparing the workspace did that a person should hear about (see prepare-workspace). */
  readonly notes: readonly string[];
  /**
   * What a person must act on: a credential taken out of the workspace URL, which other worker
   * hosts have to get from their own git credential helper.
   */
  readonly warnings: readonly string[];
}

/**
 * The library API for scripts: submit, follow, cancel and answer missions. A client holds one
 * Redis connection; close it when done. The named functions below open and close one per call.
 */
export class FlotillaClient {
  /** A subclass names the workspace preparation its clients use unless an option gives one. */
  protected static readonly prepareWorkspace: PrepareWorkspace | undefined = undefined;

  /** The lease on the home's Redis this client took, given up by close(). */
  private home: HomeRedis | undefined;

  protected constructor(
    readonly redis: RedisClient,
    readonly store: MissionStore,
    private readonly queues: QueueSet,
    private readonly config: Config,
    private readonly logger: Logger,
    private readonly prepareWorkspace: PrepareWorkspace | undefined,
  ) {}

  static async connect(options: ClientOptions = {}): Promise<FlotillaClient> {
    const base = options.config ?? loadConfig();
    const { config, home } = await chooseRedis({
      ...base,
      prefix: options.prefix ?? base.prefix,
      secret: options.secret ?? base.secret,
      redisUrl: options.redisUrl ?? base.redisUrl,
    });
    const redis = await connectOrFail(config.redisUrl ?? '').catch(async (error: unknown) => {
      await home?.release();
      throw error;
    });
    const store = new MissionStore(redis, config.prefix, config.secret);
    const client = new FlotillaClient(
      redis,
      store,
      new QueueSet(redis, config.prefix, createTelemetry(config.otel)),
      config,
      options.logger ?? silentLogger(),
      // biome-ignore lint/complexity/noThisInStatic: the subclass's preparation (src/client.ts), not this class's
      options.prepareWorkspace ?? this.prepareWorkspace,
    );
    client.home = home;
    return client;
  }

  /**
   * Validates and submits a mission file (a path) or an object with the file's fields and
   * spellings (`depends_on`, `exit_criteria`, …): the same schema, rules and defaults either way.
   * An invalid mission throws `mission/invalid` (its `problems` name the file's lines, or the
   * object's JSON paths) before anything reaches Redis. A relative `workspace` of an object is
   * resolved from `options.dir` (default the current directory), as a file's is from its folder.
   */
  async submit(mission: string | MissionInput, options: SubmitOptions = {}): Promise<SubmittedMission> {
    const spec =
      typeof mission === 'string'
        ? await loadMissionOrThrow(mission, options)
        : await missionFromObjectOrThrow(mission, options);
    return this.submitSpec(spec);
  }

  /**
   * @internal Submits a mission that was already validated and normalised (the CLI's, which has
   * printed its warnings). Not the library's API: scripts give `submit()` a path or an object.
   */
  submitSpec(spec: MissionSpec): Promise<SubmittedMission> {
    return submitValidMission(this.submitContext(), spec);
  }

  status(id: string): Promise<MissionStatusJson> {
    return this.store.status(id);
  }

  async summary(id: string): Promise<string | null> {
    return this.store.getMetaField(id, 'summary');
  }

  /**
   * Resolves with the final status when the mission has finished and its summary is written;
   * `onEvent` sees every event. Stopped by `signal`, it resolves with the status as it is then (the
   * caller chose to stop following); past `timeoutMs` it rejects with `wait/timeout`, which names
   * the tasks still unfinished and why they wait. Either way its Redis reader is closed.
   */
  async wait(
    id: string,
    options: {
      onEvent?: (event: MissionEvent) => void;
      signal?: AbortSignal;
      timeoutMs?: number;
      pollMs?: number;
    } = {},
  ): Promise<MissionStatusJson> {
    const timeout = options.timeoutMs === undefined ? undefined : AbortSignal.timeout(options.timeoutMs);
    const signals = [options.signal, timeout].filter((s): s is AbortSignal => s !== undefined);
    const signal = signals.length > 1 ? AbortSignal.any(signals) : signals[0];
    for await (const event of this.events(id, { signal, pollMs: options.pollMs })) options.onEvent?.(event);
    const status = await this.store.status(id);
    if (timeout?.aborted && !options.signal?.aborted && status.status === 'running') {
      throw new FlotillaError('wait/timeout', timeoutMessage(status, options.timeoutMs ?? 0));
    }
    return status;
  }

  /**
   * The mission's events, oldest first, as they come (`for await (const event of
   * client.events(id))`). Ends after the mission's final event once its summary is written, when
   * `signal` aborts (a read in progress is cut off), or when the loop leaves early; it holds one
   * extra Redis connection while iterated and closes it whichever way it ends.
   */
  async *events(
    id: string,
    options: { signal?: AbortSignal; pollMs?: number } = {},
  ): AsyncGenerator<MissionEvent, void, undefined> {
    for await (const entry of this.eventEntries(id, options)) yield entry.event;
  }

  /**
   * `events()` with each event's Redis stream id, starting after `after` (a stream id, default the
   * beginning): what the board's Server-Sent Events send as `id:` and resume from on `Last-Event-ID`.
   */
  async *eventEntries(
    id: string,
    options: { signal?: AbortSignal; pollMs?: number; after?: string } = {},
  ): AsyncGenerator<{ id: string; event: MissionEvent }, void, undefined> {
    const { signal } = options;
    if (signal?.aborted) return;
    if (!(await this.store.missionExists(id)))
      throw new FlotillaError('mission/not-found', `no mission '${id}'`);
    const reader =
      this.redis instanceof Redis
        ? this.redis.duplicate({ connectionName: EVENTS_READER_NAME })
        : this.redis.duplicate();
    reader.on('error', () => {});
    const stop = () => reader.disconnect();
    signal?.addEventListener('abort', stop, { once: true });
    const readerStore = new MissionStore(reader, this.store.prefix, this.config.secret);
    let last = options.after ?? '0';
    try {
      while (!signal?.aborted) {
        let events: Awaited<ReturnType<MissionStore['readEvents']>>;
        try {
          events = await readerStore.readEvents(id, last, options.pollMs ?? 1_000);
        } catch (error) {
          if (signal?.aborted) return;
          throw error;
        }
        for (const entry of events) {
          if (signal?.aborted) return;
          last = entry.id;
          yield entry;
        }
        // Finalize writes the summary before its `mission` event, so the summary is read only when
        // that event came, or when nothing came at all (a trimmed stream): not once per event.
        const ended = events.length === 0 || events.some(({ event }) => event.type === 'mission');
        if (ended && (await this.store.getMetaField(id, 'summary')) !== null) return;
      }
    } finally {
      signal?.removeEventListener('abort', stop);
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

  /**
   * A person's verdict on a task held for approval (`approve: human`): approved, the held attempt
   * merges on a host and releases its dependents; rejected, it is a failed attempt whose retry
   * prompt carries `reason`. The first verdict sent for an attempt is the one that counts:
   * `counted` is false, and `sent` names the other one, when someone decided first.
   */
  async approve(
    id: string,
    taskId: string,
    verdict: { reject?: string; by?: string } = {},
  ): Promise<SentVerdict> {
    return sendVerdict(this.context(), id, taskId, verdict);
  }

  async close(): Promise<void> {
    await this.queues.close();
    await this.redis.quit().catch(() => undefined);
    await this.home?.release();
  }

  private context() {
    return { store: this.store, queues: this.queues, secret: this.config.secret, logger: this.logger };
  }

  private submitContext() {
    const prepareWorkspace = this.prepareWorkspace;
    if (!prepareWorkspace) {
      throw new FlotillaError(
        'usage',
        "this client cannot submit: it has no workspace preparation (use the library's FlotillaClient)",
      );
    }
    return { ...this.context(), prepareWorkspace };
  }
}
