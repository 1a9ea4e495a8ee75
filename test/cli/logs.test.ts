import { execa } from 'execa';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { liveOutputKey, MAX_ENTRIES } from '../../src/shared/store/live-output.js';
import { mission, openStage, type Stage, task } from '../helpers/hosts-stage.js';
import {
  BIN,
  BIN_BUILDER,
  BIN_REVIEWER,
  flotillaEnv,
  runFlotilla,
  startReadyWorker,
  until,
} from '../helpers/worker-process.js';

/**
 * `flotilla logs --follow` from another process than the host's (another machine, as far as it
 * can tell: it reaches only Redis) while a stand-in agent prints: the lines arrive as they are
 * printed, the command ends with the run, a flood stays a bounded stream in Redis, and after the
 * run the command prints the end of the output from the audit trail.
 */
describe('flotilla logs', () => {
  let stage: Stage;
  let redis: Redis;

  beforeAll(async () => {
    stage = await openStage();
    redis = new Redis(stage.redis.url);
    await startReadyWorker(stage.cluster, {
      hostId: 'logs-host',
      home: stage.home('logs-host'),
      path: [BIN_BUILDER, BIN_REVIEWER],
    });
  });
  afterAll(async () => {
    redis?.disconnect();
    await stage?.close();
  });

  it('follows a running task from another process until its run ends', async () => {
    const steps = [
      '- print: {text: "tick\\n", times: 15, every: 300ms}',
      '- print: {text: "to stderr\\n", stream: stderr}',
      '- write: {path: slow.txt, content: "done"}',
    ].join('\n');
    const { file } = await stage.writeMission(
      mission([task({ id: 'slow', steps, extra: ['critic: false'] })]),
    );
    const id = await stage.submit(file);
    // Started before the task: it waits for the attempt, then reads it as it comes.
    const follower = execa(process.execPath, [BIN, 'logs', id, 'slow', '--follow'], {
      env: flotillaEnv(stage.cluster, { LOG_LEVEL: 'warn' }),
      extendEnv: false,
      reject: false,
      timeout: 120_000,
    });
    const seen: number[] = [];
    follower.stdout?.on('data', (chunk: Buffer) => {
      for (const _ of chunk.toString().matchAll(/tick/g)) seen.push(Date.now());
    });
    const status = await stage.wait(id);
    const result = await follower;
    expect(status.status, await stage.explain(id)).toBe('done');
    expect(result.exitCode, result.stderr).toBe(0);
    expect(result.stdout.split('\n').filter((l) => l === 'tick')).toHaveLength(15);
    expect(result.stderr).toContain('to stderr');
    expect(result.stderr).toContain('[slow attempt 1 exited 0]');
    // Read while printed, not all at the end: the ticks came in over more than a second.
    expect((seen.at(-1) ?? 0) - (seen[0] ?? 0)).toBeGreaterThan(1_000);

    // Afterwards: the audit trail's end of the output.
    await until('the live stream to go', async () =>
      (await redis.exists(
        liveOutputKey(stage.cluster.prefix, { missionId: id, taskId: 'slow', attempt: 1 }),
      )) === 0 ||
      (await redis.ttl(liveOutputKey(stage.cluster.prefix, { missionId: id, taskId: 'slow', attempt: 1 }))) <=
        120
        ? true
        : undefined,
    );
    await redis.del(liveOutputKey(stage.cluster.prefix, { missionId: id, taskId: 'slow', attempt: 1 }));
    const after = await runFlotilla(stage.cluster, ['logs', id, 'slow']);
    expect(after.exitCode, after.stderr).toBe(0);
    expect(after.stderr).toContain('has ended; the end of its output as the audit trail keeps it');
    expect(after.stdout).toContain('tick');
  }, 240_000);

  it('keeps a flood a bounded stream in Redis and says what the live view left out', async () => {
    const steps = ['- print: {mb: 60}', '- sleep: 1s', '- write: {path: loud.txt, content: "done"}'].join(
      '\n',
    );
    const { file } = await stage.writeMission(
      mission([task({ id: 'loud', steps, extra: ['critic: false'] })]),
    );
    const id = await stage.submit(file);
    const key = liveOutputKey(stage.cluster.prefix, { missionId: id, taskId: 'loud', attempt: 1 });
    let largest = { entries: 0, bytes: 0 };
    const sampling = (async () => {
      while ((await stage.client.status(id)).status === 'running') {
        const [entries, bytes] = await Promise.all([redis.xlen(key), redis.memory('USAGE', key)]);
        if (entries > largest.entries) largest = { entries, bytes: Number(bytes ?? 0) };
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();
    const follower = await execa(process.execPath, [BIN, 'logs', id, 'loud', '--follow'], {
      env: flotillaEnv(stage.cluster, { LOG_LEVEL: 'warn' }),
      extendEnv: false,
      reject: false,
      timeout: 180_000,
    });
    const status = await stage.wait(id);
    await sampling;
    expect(status.status, await stage.explain(id)).toBe('done');
    expect(follower.exitCode, follower.stderr).toBe(0);
    expect(follower.stderr).toMatch(/\[… [\d.]+ MB not shown: printed faster than the live view sends …\]/);
    expect(follower.stderr).toContain('[loud attempt 1 exited 0]');
    expect(follower.stdout).toContain('a line of output from a loud agent');
    // 60 MB printed; the stream never held more than its cap of entries, each at most 16 KB.
    expect(largest.entries).toBeGreaterThan(0);
    expect(largest.entries).toBeLessThanOrEqual(MAX_ENTRIES + 100);
    expect(largest.bytes).toBeLessThan(8 * 1024 * 1024);
  }, 240_000);
});
