import type { MissionEvent } from '../contracts.js';
import type { RedisClient } from '../redis.js';
import { missionKeys } from './keys.js';

/** A mission event as a writer gives it; `at` defaults to now. */
export type NewMissionEvent = Omit<MissionEvent, 'at'> & { at?: string };

const EVENTS_MAXLEN = 20_000;

/** A mission's event stream, which `run`, `status --watch` and scripts follow. */
export class EventStream {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  async emit(event: NewMissionEvent): Promise<void> {
    const full: MissionEvent = { at: event.at ?? new Date().toISOString(), ...event };
    await this.redis.xadd(
      missionKeys(this.prefix, event.missionId).events,
      'MAXLEN',
      '~',
      String(EVENTS_MAXLEN),
      '*',
      'event',
      JSON.stringify(full),
    );
  }

  /** Events after `lastId` (exclusive), waiting up to blockMs for new ones. */
  async readEvents(
    id: string,
    lastId: string,
    blockMs: number,
  ): Promise<{ id: string; event: MissionEvent }[]> {
    const key = missionKeys(this.prefix, id).events;
    const reply = (
      blockMs > 0
        ? await this.redis.xread('COUNT', 500, 'BLOCK', blockMs, 'STREAMS', key, lastId)
        : await this.redis.xread('COUNT', 500, 'STREAMS', key, lastId)
    ) as [string, [string, string[]][]][] | null;
    if (!reply) return [];
    const entries = reply[0]?.[1] ?? [];
    return entries.map(([entryId, fields]) => ({
      id: entryId,
      event: JSON.parse(fields[1] ?? '{}') as MissionEvent,
    }));
  }

  /** The id of the newest event on the mission's stream ('0' if none): it changes whenever a task does. */
  async lastEventId(id: string): Promise<string> {
    const reply = await this.redis.xrevrange(missionKeys(this.prefix, id).events, '+', '-', 'COUNT', 1);
    return reply[0]?.[0] ?? '0';
  }
}
