import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { byTask, mission, openStage, type Stage, task, writes } from '../../helpers/hosts-stage.js';
import {
  BIN_BUILDER,
  BIN_REVIEWER,
  cliProcesses,
  runFlotilla,
  startReadyWorker,
  until,
} from '../../helpers/worker-process.js';

/**
 * `flotilla cancel` reaches every host: two host processes, one slot each, each running a
 * 60-second task of the same mission. Both CLIs must be gone long before their sleep ends, no new
 * attempt may start, the mission ends `cancelled`, and the `submit --wait` that follows it exits 1.
 */
describe('cancel across hosts', () => {
  let stage: Stage;

  beforeAll(async () => {
    stage = await openStage();
  });
  afterAll(async () => {
    await stage?.close();
  });

  it('kills the running CLI on every host and ends the mission cancelled', async () => {
    const start = (hostId: string) =>
      startReadyWorker(stage.cluster, {
        hostId,
        home: stage.home(hostId),
        path: [BIN_BUILDER, BIN_REVIEWER],
        slots: 1,
      });
    const hosts = await Promise.all([start('host-1'), start('host-2')]);
    const { file } = await stage.writeMission(
      mission([
        task({ id: 'long1', steps: writes('long1', '- sleep: 60s') }),
        task({ id: 'long2', steps: writes('long2', '- sleep: 60s') }),
        task({ id: 'later', deps: ['long1'], steps: writes('later') }),
      ]),
    );
    const waiting = runFlotilla(stage.cluster, ['submit', file, '--wait'], { timeoutMs: 180_000 });
    const id = await until(
      'the mission to be submitted',
      async () => (await stage.client.store.listMissions(1))[0],
    );
    await until(
      'each host to run one long task',
      () => (hosts.every((h) => cliProcesses(h.home).length === 1) ? true : undefined),
      90_000,
    );

    const cancelled = await runFlotilla(stage.cluster, ['cancel', id]);
    const cancelledAt = Date.now();
    expect(cancelled.exitCode, cancelled.stderr).toBe(0);
    expect(cancelled.stdout).toMatch(/2 running task\(s\) being stopped/);
    // Generous, yet far short of the 60 s the CLIs would otherwise sleep.
    await until(
      'both CLIs to be killed',
      () => (hosts.every((h) => cliProcesses(h.home).length === 0) ? true : undefined),
      30_000,
      100,
    );
    const killMs = Date.now() - cancelledAt;

    const submitWait = await waiting;
    expect(submitWait.exitCode, submitWait.stderr).toBe(1);
    const status = await stage.client.status(id);
    expect(status.status, await stage.explain(id)).toBe('cancelled');
    expect(byTask(status, 'long1')).toMatchObject({ status: 'cancelled', attempts: 1 });
    expect(byTask(status, 'long2')).toMatchObject({ status: 'cancelled', attempts: 1 });
    expect(byTask(status, 'later').status).toBe('cancelled');
    expect(new Set([byTask(status, 'long1').host, byTask(status, 'long2').host])).toEqual(
      new Set(['host-1', 'host-2']),
    );

    // No new attempt: one route per long task, nothing for the dependent, no run finished: the
    // only run entries are the two CLIs the cancel stopped, which the summary counts.
    const audit = await stage.audit(id);
    expect(
      audit
        .filter((e) => e.stage === 'route')
        .map((e) => `${e.taskId} a${e.attempt}`)
        .sort(),
    ).toEqual(['long1 a1', 'long2 a1']);
    expect(
      audit
        .filter((e) => e.stage === 'run')
        .map((e) => `${e.taskId} ${e.event?.kind}`)
        .sort(),
    ).toEqual(['long1 run-cancelled', 'long2 run-cancelled']);
    expect(await stage.client.summary(id)).toContain('Agent CLI runs: 2 on 2 hosts');
    // Give a late attempt a chance to show up: none does, and no CLI starts again.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(hosts.every((h) => cliProcesses(h.home).length === 0)).toBe(true);
    expect((await stage.client.status(id)).tasks.map((t) => t.attempts)).toEqual([1, 1, 0]);
    console.log(`[cancel] CLIs on both hosts gone ${killMs} ms after \`flotilla cancel\` returned`);
  }, 240_000);
});
