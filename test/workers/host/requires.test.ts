import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { byTask, mission, openStage, type Stage, task, writes } from '../../helpers/hosts-stage.js';
import {
  BIN_BUILDER,
  BIN_REVIEWER,
  lastJson,
  runFlotilla,
  startReadyWorker,
  until,
} from '../../helpers/worker-process.js';

/**
 * Tasks that require a platform, a toolchain or a label run on hosts that have it, their run,
 * verify and critic alike. Each host's facts are pinned with `--facts` (so a Linux machine can
 * stand for a Mac here), and labels come from `--label`.
 */
describe('requires', () => {
  let stage: Stage;

  beforeAll(async () => {
    stage = await openStage();
    const start = async (hostId: string, facts: string, labels: string[] = []) => {
      const file = join(stage.dir, `${hostId}-facts.yaml`);
      await writeFile(file, facts);
      return startReadyWorker(stage.cluster, {
        hostId,
        home: stage.home(hostId),
        path: [BIN_BUILDER, BIN_REVIEWER],
        args: ['--facts', file, ...labels.flatMap((label) => ['--label', label])],
      });
    };
    await start('tux', 'os: linux\ntools: { node: 20.11.1, docker: absent }\n', ['region=eu']);
    await start('mac', 'os: darwin\narch: arm64\ntools: { node: 22.1.0 }\n');
  });
  afterAll(async () => {
    await stage?.close();
  });

  it('runs each task only on hosts that satisfy it; one no host satisfies waits, saying why, until one joins', async () => {
    const listed = await runFlotilla(stage.cluster, ['hosts']);
    expect(listed.stdout).toMatch(/^ {2}darwin\/arm64 {2}tools .*node 22\.1\.0/m);
    expect(listed.stdout).toMatch(/^ {2}linux\/\S+ {2}tools .*docker absent.* {2}labels region=eu$/m);

    const { file } = await stage.writeMission(
      mission([
        task({ id: 'mac', steps: writes('mac'), extra: ['requires: { os: [darwin] }'] }),
        task({
          id: 'eu',
          steps: writes('eu'),
          extra: ['critic: false', 'requires: { labels: { region: eu } }'],
        }),
        task({
          id: 'new-node',
          steps: writes('new-node'),
          extra: ['critic: false', "requires: { tools: ['node>=22'] }"],
        }),
        task({
          id: 'docker',
          steps: writes('docker'),
          extra: ['critic: false', 'requires: { tools: [docker] }'],
        }),
      ]),
    );
    const id = await stage.submit(file);
    const waiting = await until('the docker task to show why it waits', async () => {
      const shown = lastJson<{ tasks: { id: string; status: string; route: string | null }[] }>(
        await runFlotilla(stage.cluster, ['status', id, '--json']),
      );
      const docker = shown.tasks.find((t) => t.id === 'docker');
      return docker?.route ? docker : undefined;
    });
    expect(waiting).toMatchObject({ status: 'queued', route: 'no live host has docker; 2 hosts lack it' });
    await until('the other three to complete', async () => {
      const s = await stage.client.status(id);
      return ['mac', 'eu', 'new-node'].every((t) => byTask(s, t).status === 'completed') ? s : undefined;
    });
    expect(byTask(await stage.client.status(id), 'docker').status).toBe('queued');

    await startReadyWorker(stage.cluster, {
      hostId: 'whale',
      home: stage.home('whale'),
      path: [BIN_BUILDER],
      args: ['--tool', 'docker=node --version'],
    });
    const status = await stage.wait(id);
    expect(status.status, await stage.explain(id)).toBe('done');
    expect(['mac', 'eu', 'new-node', 'docker'].map((t) => byTask(status, t).host)).toEqual([
      'mac',
      'tux',
      'mac',
      'whale',
    ]);

    // Verify and review ran on a host that satisfies the task too, not only the run.
    const audit = await stage.audit(id);
    const where = (taskId: string, stageName: string) => [
      ...new Set(audit.filter((e) => e.taskId === taskId && e.stage === stageName).map((e) => e.host)),
    ];
    expect(where('mac', 'verify')).toEqual(['mac']);
    expect(where('mac', 'critic')).toEqual(['mac']);
    expect(where('eu', 'verify')).toEqual(['tux']);
    expect(where('docker', 'verify')).toEqual(['whale']);
  });
});
