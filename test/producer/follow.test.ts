import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FlotillaClient } from '../../src/client.js';
import { EVENTS_READER_NAME } from '../../src/producer/client.js';
import type { MissionEvent } from '../../src/shared/contracts.js';
import { FlotillaError } from '../../src/shared/errors.js';
import { sim, startCluster, type TestCluster } from '../helpers/flotilla.js';
import { uniquePrefix } from '../helpers/redis-server.js';

/**
 * Following a mission from a script: `for await (const event of client.events(id))`, and
 * `wait()` with an AbortSignal and a timeout, neither leaving its Redis reader open.
 */

const task = (id: string) => ({
  id,
  title: `Task ${id}`,
  critic: false,
  exit_criteria: [`test -f ${id}.txt`],
  description: sim(`- write: {path: ${id}.txt, content: "${id}"}`),
});

let cluster: TestCluster;
let dir: string;
let probe: Redis;

/** The server's clients named as the events reader, and the command each is in. */
async function readers(): Promise<string[]> {
  const list = String(await probe.client('LIST'));
  return list
    .split('\n')
    .filter((line) => line.includes(` name=${EVENTS_READER_NAME} `))
    .map((line) => / cmd=(\S+)/.exec(line)?.[1] ?? '');
}

/** Polls (no clock asserted): the server drops a disconnected client a moment later. */
async function until(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 200 && !(await check()); i++) await sleep(25);
  expect(await check()).toBe(true);
}

beforeAll(async () => {
  cluster = await startCluster({ hosts: 1, slots: 2 });
  dir = join(cluster.dir, 'follow');
  await mkdir(join(dir, 'ws'), { recursive: true });
  probe = new Redis(cluster.redis.url);
});
afterAll(async () => {
  probe?.disconnect();
  await cluster?.stop();
});

describe('client.events(id)', () => {
  it('yields every event and ends with the mission, its reader closed', async () => {
    const { id } = await cluster.client.submit(
      { goal: 'followed', workspace: './ws', tasks: [task('a'), { ...task('b'), depends_on: ['a'] }] },
      { dir },
    );
    const seen: MissionEvent[] = [];
    for await (const event of cluster.client.events(id, { pollMs: 200 })) seen.push(event);
    expect(seen[0]?.type).toBe('submitted');
    expect(seen.at(-1)).toMatchObject({ type: 'mission', status: 'done' });
    expect(seen.filter((e) => e.status === 'completed').map((e) => e.taskId)).toEqual(['a', 'b']);
    await until(async () => (await readers()).length === 0);
  });

  it('ends when the signal aborts mid-read, and the reader connection closes', async () => {
    // A prefix no host serves: the mission waits, the reader blocks in XREAD.
    const client = await FlotillaClient.connect({
      config: cluster.config,
      redisUrl: cluster.redis.url,
      prefix: uniquePrefix(),
    });
    try {
      const { id } = await client.submit(
        { goal: 'never runs', workspace: './ws', tasks: [task('a')] },
        { dir },
      );
      const controller = new AbortController();
      const seen: MissionEvent[] = [];
      const following = (async () => {
        for await (const event of client.events(id, { signal: controller.signal, pollMs: 60_000 }))
          seen.push(event);
      })();
      // The reader is open and blocked on the stream (60 s per read) before the abort.
      await until(async () => (await readers()).includes('xread'));
      controller.abort();
      await following;
      expect(seen.map((e) => e.type)).toContain('submitted');
      await until(async () => (await readers()).length === 0);
    } finally {
      await client.close();
    }
  });
});

describe('wait()', () => {
  it('rejects with wait/timeout naming why the task waits, and closes its reader', async () => {
    const client = await FlotillaClient.connect({
      config: cluster.config,
      redisUrl: cluster.redis.url,
      prefix: uniquePrefix(),
    });
    try {
      const { id } = await client.submit({ goal: 'no host', workspace: './ws', tasks: [task('a')] }, { dir });
      const error = await client
        .wait(id, { timeoutMs: 300, pollMs: 60_000 })
        .catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(FlotillaError);
      expect((error as FlotillaError).code).toBe('wait/timeout');
      expect((error as FlotillaError).message).toMatch(
        new RegExp(
          `^mission ${id} did not finish within 300 ms; still running: a queued \\(no live host serves`,
        ),
      );
      await until(async () => (await readers()).length === 0);
    } finally {
      await client.close();
    }
  });

  it('resolves with the status as it is when the caller aborts', async () => {
    const client = await FlotillaClient.connect({
      config: cluster.config,
      redisUrl: cluster.redis.url,
      prefix: uniquePrefix(),
    });
    try {
      const { id } = await client.submit({ goal: 'no host', workspace: './ws', tasks: [task('a')] }, { dir });
      const controller = new AbortController();
      const waiting = client.wait(id, { signal: controller.signal, pollMs: 60_000 });
      await until(async () => (await readers()).includes('xread'));
      controller.abort();
      expect((await waiting).status).toBe('running');
      await until(async () => (await readers()).length === 0);
    } finally {
      await client.close();
    }
  });
});
