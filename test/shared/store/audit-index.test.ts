import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { missionKeys } from '../../../src/shared/store/keys.js';
import { type AuditInput, MissionStore } from '../../../src/shared/store/mission-store.js';
import { missionSpec } from '../../helpers/factories.js';
import { type RedisHandle, startRedis, uniquePrefix } from '../../helpers/redis-server.js';

/**
 * One task's audit trail read by position (the board's task detail), not by reading the whole
 * trail: the mission store indexes each entry under its task as it appends it.
 */

function entry(taskId: string, attempt: number, reason: string): AuditInput {
  return {
    at: new Date().toISOString(),
    taskId,
    attempt,
    stage: 'gate',
    event: { kind: 'gate', action: 'retry', reason, delayMs: 1_000 },
  };
}

async function lrangeCalls(client: Redis): Promise<number> {
  const info = await client.info('commandstats');
  return Number(/cmdstat_lrange:calls=(\d+)/.exec(info)?.[1] ?? 0);
}

describe('the audit index', () => {
  let redis: RedisHandle;
  let client: Redis;
  let store: MissionStore;
  let prefix: string;

  beforeAll(async () => {
    redis = await startRedis();
    client = new Redis(redis.url);
    prefix = uniquePrefix();
    store = new MissionStore(client, prefix);
  });
  afterAll(async () => {
    await client.quit();
    await redis.stop();
  });

  it("reads one task's entries, in order, without reading the whole trail", async () => {
    const id = 'indexed';
    await store.createMission({
      id,
      spec: missionSpec({ a: [], b: [], c: [] }),
      repo: '/r',
      baseCommit: 'x',
      roots: ['a', 'b', 'c'],
      now: new Date().toISOString(),
    });
    // Interleaved and concurrent, as hosts write them.
    await Promise.all(
      Array.from({ length: 30 }, (_, i) => store.audit(id, entry(['a', 'b'][i % 2] ?? 'a', i, `r${i}`))),
    );
    const before = await lrangeCalls(client);
    const a = await store.getTaskAudit(id, 'a');
    expect(await lrangeCalls(client)).toBe(before);
    expect(a.map((e) => e.attempt)).toEqual([0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28]);
    expect(a.every((e) => e.taskId === 'a' && e.message === `retry in 1s: r${e.attempt}`)).toBe(true);
    expect((await store.getTaskAudit(id, 'b')).map((e) => e.attempt)).toHaveLength(15);
    expect(await store.getTaskAudit(id, 'c')).toEqual([]);
    // The whole trail is unchanged: the index is beside it, not instead of it.
    expect((await store.getAudit(id)).map((e) => e.attempt).sort((x, y) => x - y)).toEqual(
      Array.from({ length: 30 }, (_, i) => i),
    );
  });

  it('falls back to filtering the whole trail of a mission written before the index', async () => {
    const id = 'unindexed';
    const keys = missionKeys(prefix, id);
    for (const [taskId, attempt] of [
      ['a', 1],
      ['b', 1],
      ['a', 2],
    ] as const) {
      await client.rpush(keys.audit, JSON.stringify({ ...entry(taskId, attempt, 'old'), message: 'old' }));
    }
    expect((await store.getTaskAudit(id, 'a')).map((e) => e.attempt)).toEqual([1, 2]);
  });
});
