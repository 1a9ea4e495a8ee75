import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_PREFIX, type MissionStatusJson } from '../../../src/shared/contracts.js';
import type { HostInfo } from '../../../src/shared/store/registry.js';
import { integrationMerges, mission, task, writes } from '../../helpers/hosts-stage.js';
import { type RedisClusterHandle, startRedisCluster } from '../../helpers/redis-server.js';
import {
  BIN_BUILDER,
  BIN_REVIEWER,
  type Cluster,
  errorLines,
  lastJson,
  runFlotilla,
  startReadyWorker,
  stopAllWorkers,
} from '../../helpers/worker-process.js';

/**
 * The same code on Redis Cluster: three masters, hosts and the CLI all given
 * `REDIS_URL=redis+cluster://h:p1,h:p2,h:p3` and the default hash-tagged prefix `{flotilla}`, so
 * every key of every queue, of the flows across queues and of mission state shares one slot.
 */
describe('a mission on Redis Cluster', () => {
  let redis: RedisClusterHandle;
  let dir: string;
  let cluster: Cluster;

  beforeAll(async () => {
    redis = await startRedisCluster({ masters: 3 });
    dir = await mkdtemp(join(tmpdir(), 'flotilla-hosts-cluster-'));
    const seeds = redis.nodes.map((node) => `${node.host}:${node.port}`).join(',');
    cluster = { redisUrl: `redis+cluster://${seeds}`, prefix: DEFAULT_PREFIX };
  });
  afterAll(async () => {
    await stopAllWorkers();
    await redis?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('runs three tasks with a dependency to done across two hosts', async () => {
    const workers = await Promise.all(
      ['host-1', 'host-2'].map((hostId) =>
        startReadyWorker(cluster, {
          hostId,
          home: join(dir, 'machines', hostId),
          path: [BIN_BUILDER, BIN_REVIEWER],
        }),
      ),
    );
    const hosts = lastJson<HostInfo[]>(await runFlotilla(cluster, ['hosts', '--json']));
    expect(hosts.map((h) => h.hostId)).toEqual(['host-1', 'host-2']);

    const ws = join(dir, 'mission', 'ws');
    await mkdir(ws, { recursive: true });
    const file = join(dir, 'mission', 'mission.yaml');
    await writeFile(
      file,
      mission([
        task({ id: 'a', steps: writes('a') }),
        task({ id: 'b', steps: writes('b') }),
        task({ id: 'c', deps: ['a'], steps: writes('c'), criteria: ['test -f a.txt', 'test -f c.txt'] }),
      ]),
    );
    const submitted = await runFlotilla(cluster, ['submit', file, '--wait', '--json'], {
      timeoutMs: 180_000,
    });
    expect(submitted.exitCode, submitted.stderr).toBe(0);
    const status = lastJson<MissionStatusJson>(submitted);
    expect(status.status).toBe('done');
    expect(status.tasks.map((t) => [t.id, t.status, t.attempts])).toEqual([
      ['a', 'completed', 1],
      ['b', 'completed', 1],
      ['c', 'completed', 1],
    ]);
    const shown = lastJson<MissionStatusJson>(await runFlotilla(cluster, ['status', status.id, '--json']));
    expect(shown.status).toBe('done');
    expect(await integrationMerges(ws, status.id)).toHaveLength(3);
    for (const worker of workers) expect(errorLines(worker)).toEqual([]);
  });
});
