import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HostInfo } from '../../../src/shared/store/registry.js';
import {
  byTask,
  integrationMerges,
  mission,
  openStage,
  type Stage,
  task,
  writes,
} from '../../helpers/hosts-stage.js';
import {
  BIN_BUILDER,
  BIN_REVIEWER,
  cliProcesses,
  lastJson,
  runFlotilla,
  startReadyWorker,
  until,
} from '../../helpers/worker-process.js';

/**
 * Redis crashes (SIGKILL) while two host processes run tasks, and comes back on the same port a
 * few seconds later with its append-only file. Hosts reconnect by themselves (worker connections
 * never give up a command) and the mission completes; while Redis is down, the producer commands
 * fail fast with exit 3 and one line, no stack trace.
 */
describe('Redis restarted mid-mission', () => {
  let stage: Stage;

  beforeAll(async () => {
    stage = await openStage({ appendonly: true });
  });
  afterAll(async () => {
    await stage?.close();
  });

  it('hosts reconnect and the mission completes; submit and status exit 3 while Redis is down', async (context) => {
    if (!stage.redis.canRestart) context.skip();
    const start = (hostId: string) =>
      startReadyWorker(stage.cluster, {
        hostId,
        home: stage.home(hostId),
        path: [BIN_BUILDER, BIN_REVIEWER],
      });
    const hosts = await Promise.all([start('host-1'), start('host-2')]);
    const { file, ws } = await stage.writeMission(
      mission([
        task({ id: 'a', steps: writes('a', '- sleep: 6s') }),
        task({ id: 'b', steps: writes('b', '- sleep: 6s') }),
        task({
          id: 'c',
          deps: ['a', 'b'],
          steps: writes('c'),
          criteria: ['test -f a.txt', 'test -f b.txt', 'test -f c.txt'],
        }),
      ]),
    );
    const id = await stage.submit(file);
    await until(
      'both first tasks to run their CLIs',
      () => {
        const running = hosts.reduce((sum, h) => sum + cliProcesses(h.home).length, 0);
        return running >= 2 ? running : undefined;
      },
      90_000,
    );

    const downAt = Date.now();
    await stage.redis.kill('SIGKILL');
    const [submitted, shown] = await Promise.all([
      runFlotilla(stage.cluster, ['submit', file]),
      runFlotilla(stage.cluster, ['status', id]),
    ]);
    for (const run of [submitted, shown]) {
      expect(run.exitCode, run.stderr).toBe(3);
      const lines = run.stderr.trim().split('\n');
      expect(lines, run.stderr).toHaveLength(1);
      expect(lines[0]).toMatch(
        /^flotilla: Redis is not reachable at redis:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)$/,
      );
      expect(run.stderr).not.toMatch(/\n\s+at /);
    }
    await stage.redis.restart();
    const downMs = Date.now() - downAt;

    const status = await stage.wait(id, 240_000);
    expect(status.status, await stage.explain(id)).toBe('done');
    for (const t of status.tasks) expect(t.status).toBe('completed');
    const audit = await stage.audit(id);
    for (const taskId of ['a', 'b', 'c']) {
      expect(
        audit.filter((e) => e.taskId === taskId && e.stage === 'gate').map((e) => e.message),
        await stage.explain(id),
      ).toEqual([expect.stringMatching(/^approved/)]);
    }
    expect(await integrationMerges(ws, id)).toHaveLength(3);
    console.log(
      `[redis restart] down for ${downMs} ms; attempts ${status.tasks.map((t) => `${t.id}=${t.attempts}`).join(' ')}; hosts ${byTask(status, 'a').host}, ${byTask(status, 'b').host}`,
    );

    // Both hosts lived through it and advertise themselves again.
    for (const host of hosts) expect(host.running).toBe(true);
    const listed = await until('both hosts to be listed again', async () => {
      const hostsNow = lastJson<HostInfo[]>(await runFlotilla(stage.cluster, ['hosts', '--json']));
      return hostsNow.length === 2 ? hostsNow : undefined;
    });
    expect(listed.map((h) => h.hostId)).toEqual(['host-1', 'host-2']);
  }, 300_000);
});
