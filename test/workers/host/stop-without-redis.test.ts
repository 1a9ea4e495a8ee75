import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mission, openStage, type Stage, task, writes } from '../../helpers/hosts-stage.js';
import {
  BIN_BUILDER,
  BIN_REVIEWER,
  cliProcesses,
  startReadyWorker,
  stopAllWorkers,
  until,
} from '../../helpers/worker-process.js';

/**
 * A worker whose Redis is gone must still obey SIGTERM: within the grace period its CLI is killed
 * and the process exits, non-zero, with one line saying what it abandoned. A liveness test: the
 * bounds are generous, the point is that the process goes at all (it used to reconnect for ever).
 */
describe('SIGTERM while Redis is unreachable', () => {
  let stage: Stage;

  beforeAll(async () => {
    stage = await openStage();
  });
  afterAll(async () => {
    await stopAllWorkers();
    await stage?.close();
  });

  it('kills the running CLI at the end of the grace period and exits 3 naming the abandoned job', async () => {
    const home = stage.home('cut-off');
    const worker = await startReadyWorker(stage.cluster, {
      hostId: 'cut-off',
      home,
      path: [BIN_BUILDER, BIN_REVIEWER],
      graceSeconds: 3,
    });
    const { file } = await stage.writeMission(
      mission([task({ id: 'long', steps: writes('long', '- sleep: 300s') })]),
    );
    await stage.submit(file);
    await until(
      'the CLI to run',
      () => cliProcesses(home).find((cli) => cli.args.includes('long-a1-PROMPT')),
      90_000,
    );

    await stage.redis.kill('SIGKILL');
    const signalledAt = Date.now();
    worker.signal('SIGTERM');
    const exit = await Promise.race([
      worker.exited,
      new Promise<'still running'>((resolve) => setTimeout(() => resolve('still running'), 60_000)),
    ]);
    const seconds = (Date.now() - signalledAt) / 1000;
    console.log(`[stop without redis] grace 3 s, exited after ${seconds.toFixed(1)} s`);
    expect(exit).toEqual({ code: 3, signal: null });
    // Grace (3 s) + BullMQ's close given up (3 s) + slack for a loaded machine.
    expect(seconds).toBeLessThan(30);
    expect(cliProcesses(home)).toEqual([]);
    const said = worker.lines.filter((line) => line.raw.startsWith('flotilla worker:')).map((l) => l.raw);
    expect(said).toEqual([
      expect.stringMatching(
        /^flotilla worker: stopped with Redis unreachable; abandoned 1 running job\(s\) to BullMQ's stalled-job recovery \(.+\.long\.a1\.run\); this host was not unregistered$/,
      ),
    ]);
    await stage.redis.restart();
  }, 240_000);
});
