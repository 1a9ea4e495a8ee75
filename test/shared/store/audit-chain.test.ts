import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkChain } from '../../../src/shared/audit-chain.js';
import type { MissionSpec } from '../../../src/shared/mission.js';
import { missionKeys } from '../../../src/shared/store/keys.js';
import { type AuditInput, MissionStore } from '../../../src/shared/store/mission-store.js';
import { SHA256_SCRIPT } from '../../../src/shared/store/scripts.js';
import { missionSpec } from '../../helpers/factories.js';
import { type RedisHandle, startRedis, uniquePrefix } from '../../helpers/redis-server.js';

/** The chain as the Lua append script writes it, on a real Redis. */

const spec: MissionSpec = missionSpec(
  { t: [] },
  { title: 't', critic: false, timeoutMs: 1000, backoffMs: 10 },
);

describe('hash-chained audit trail in Redis', () => {
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

  const inputs = [
    '',
    'a',
    'abc',
    'x'.repeat(55),
    'x'.repeat(56),
    'x'.repeat(63),
    'x'.repeat(64),
    'x'.repeat(65),
    'y'.repeat(119),
    'y'.repeat(120),
    'z'.repeat(1000),
    'héllo wörld ✓ 🚀',
  ];
  it.each(inputs.map((text) => [text.length, text]))(
    'Lua SHA-256 equals node:crypto for %i characters',
    async (_len, text) => {
      const lua = await client.eval(SHA256_SCRIPT, 0, text);
      expect(lua).toBe(createHash('sha256').update(text, 'utf8').digest('hex'));
    },
  );

  async function mission(id: string): Promise<void> {
    await store.createMission({
      id,
      spec,
      repo: '/r',
      baseCommit: 'b',
      roots: ['t'],
      now: new Date().toISOString(),
    });
  }
  const entry = (i: number, extra: Partial<AuditInput> = {}): AuditInput => ({
    at: new Date().toISOString(),
    taskId: `t${i % 3}`,
    attempt: 1,
    stage: 'answer',
    event: { kind: 'answer', text: `entry ${i}` },
    ...extra,
  });

  it('appends form a chain that checks, with the head kept in mission meta', async () => {
    await mission('m-chain');
    const numbers = [];
    for (let i = 0; i < 6; i++) {
      numbers.push(
        await store.audit('m-chain', entry(i, { files: { 'prompt.md': `p${i}`, 'empty.txt': '' } })),
      );
    }
    expect(numbers).toEqual([1, 2, 3, 4, 5, 6]);
    const trail = await store.getAudit('m-chain');
    const check = checkChain('m-chain', trail);
    expect(check).toMatchObject({ ok: true, count: 6 });
    expect(await store.getAuditHead('m-chain')).toEqual({ count: 6, head: check.ok ? check.head : '' });
    // The stored row keeps the entry as written (empty strings and lists stay what they were).
    expect(trail[0]).toMatchObject({ files: { 'prompt.md': 'p0', 'empty.txt': '' }, chain: { n: 1 } });
  });

  it('concurrent appends from many clients still make one unbroken chain', async () => {
    await mission('m-race');
    const clients = Array.from({ length: 4 }, () => new Redis(redis.url));
    try {
      const stores = clients.map((c) => new MissionStore(c, prefix));
      await Promise.all(
        Array.from({ length: 80 }, (_, i) => stores[i % stores.length]?.audit('m-race', entry(i))),
      );
    } finally {
      await Promise.all(clients.map((c) => c.quit()));
    }
    expect(checkChain('m-race', await store.getAudit('m-race'))).toMatchObject({ ok: true, count: 80 });
  });

  it('a row deleted or edited in Redis is named by the check', async () => {
    await mission('m-tamper');
    for (let i = 0; i < 5; i++) await store.audit('m-tamper', entry(i));
    const key = missionKeys(prefix, 'm-tamper').audit;
    const third = (await client.lindex(key, 2)) ?? '';
    await client.lset(key, 2, third.replace('entry 2', 'entry two'));
    expect(checkChain('m-tamper', await store.getAudit('m-tamper'))).toMatchObject({
      ok: false,
      position: 3,
      problem: 'content',
    });
    await client.lset(key, 2, third);
    await client.lrem(key, 1, (await client.lindex(key, 1)) ?? '');
    const check = checkChain('m-tamper', await store.getAudit('m-tamper'));
    expect(check).toMatchObject({ ok: false, position: 2, problem: 'gap' });
    if (!check.ok) expect(check.message).toMatch(/goes from entry 1 to entry 3 \(deleted\)/);
  });

  it("settle writes the gate's row in the same script as the transition, and a replay writes none", async () => {
    await mission('m-settle');
    await store.audit('m-settle', entry(0));
    const gate: AuditInput = {
      at: new Date().toISOString(),
      taskId: 't',
      attempt: 1,
      stage: 'gate',
      event: { kind: 'gate', action: 'approve', commit: 'c'.repeat(40) },
    };
    const first = await store.settle('m-settle', 't', 1, 'approve', {}, new Date().toISOString(), gate);
    const replay = await store.settle('m-settle', 't', 1, 'approve', {}, new Date().toISOString(), gate);
    expect([first.applied, replay.applied]).toEqual([true, false]);
    const trail = await store.getAudit('m-settle');
    expect(trail.map((e) => e.stage)).toEqual(['answer', 'gate']);
    expect(trail[1]).toMatchObject({
      message: 'approved',
      event: { commit: 'c'.repeat(40) },
      chain: { n: 2 },
    });
    expect(checkChain('m-settle', trail)).toMatchObject({ ok: true, count: 2 });
  });
});
