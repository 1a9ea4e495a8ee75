import { cp, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mission, openStage, type Stage, task } from '../../helpers/hosts-stage.js';
import { BIN_BUILDER, HOST_ADAPTERS, startReadyWorker, until } from '../../helpers/worker-process.js';

/**
 * A host takes only what it can start (host/fetch-plan.ts). Each task's agent waits for a release
 * file the test writes, so nothing here depends on how long a task takes: the question is only
 * whether all four can be running at once once the second host has joined. A host that took
 * jobs it could not start would hold them while the second host sat idle, and four never run.
 */
describe('a host fetches only what it can start', () => {
  let stage: Stage;
  let oneAtATime: string;

  beforeAll(async () => {
    stage = await openStage();
    // The same adapters, but the builder CLI runs one job at a time (max_concurrent: 1).
    oneAtATime = join(stage.dir, 'adapters-one-at-a-time');
    await cp(HOST_ADAPTERS, oneAtATime, { recursive: true });
    const builder = join(oneAtATime, 'builder.md');
    const text = await readFile(builder, 'utf8');
    expect(text).toContain('max_concurrent: 4');
    await writeFile(builder, text.replace('max_concurrent: 4', 'max_concurrent: 1'));
  });
  afterAll(async () => {
    await stage?.close();
  });

  /** A builder host with `slots` slots (and the one-at-a-time builder adapter with `adaptersDir`). */
  const startBuilder = (hostId: string, slots: number, adaptersDir?: string) =>
    startReadyWorker(stage.cluster, {
      hostId,
      home: stage.home(hostId),
      path: [BIN_BUILDER],
      slots,
      ...(adaptersDir ? { adaptersDir } : {}),
    });

  /** Four tasks whose agents wait for `release`; `capabilities` gives each its queue. */
  async function submitWaiting(release: string, capabilities: readonly string[]) {
    const wait = `while [ ! -f ${release} ]; do sleep 0.1; done`;
    const tasks = capabilities.map((capability, i) =>
      task({
        id: `t${i + 1}`,
        capability,
        extra: ['critic: false'],
        steps: [
          `- run: {argv: [sh, -c, ${JSON.stringify(wait)}], timeout: 5m}`,
          `- write: {path: t${i + 1}.txt, content: "t${i + 1} done"}`,
        ].join('\n'),
      }),
    );
    const { file } = await stage.writeMission(mission(tasks, '{ max_attempts: 1, timeout: 5m }'));
    return stage.submit(file);
  }

  /** The hosts of the tasks running now, once `count` are running. */
  async function running(id: string, count: number): Promise<string[]> {
    return until(
      `${count} tasks running at once`,
      async () => {
        const status = await stage.client.status(id);
        const hosts = status.tasks.filter((t) => t.status === 'running').map((t) => t.host ?? '?');
        return hosts.length >= count ? hosts.sort() : undefined;
      },
      90_000,
    );
  }

  it('a host whose CLI runs one job at a time leaves the other three to a host that joins later', async () => {
    const release = join(stage.dir, 'release-one');
    const single = await startBuilder('single', 3, oneAtATime);
    const id = await submitWaiting(release, [
      'code_implementation',
      'code_implementation',
      'code_implementation',
      'code_implementation',
    ]);
    expect(await running(id, 1)).toEqual(['single']);
    const roomy = await startBuilder('roomy', 3);
    expect(await running(id, 4)).toEqual(['roomy', 'roomy', 'roomy', 'single']);
    await writeFile(release, '');
    const status = await stage.wait(id);
    expect(status.status, await stage.explain(id)).toBe('done');
    await Promise.all([single.stop(), roomy.stop()]);
  });

  it('a loaded host leaves the work of its other queues to an idle host', async () => {
    const release = join(stage.dir, 'release-two');
    await startBuilder('loaded', 2);
    // Two queues (dispatch.code_implementation, dispatch.testing), two slots: two run, two wait.
    const id = await submitWaiting(release, [
      'code_implementation',
      'testing',
      'code_implementation',
      'testing',
    ]);
    expect(await running(id, 2)).toEqual(['loaded', 'loaded']);
    await startBuilder('idle', 2);
    expect(await running(id, 4)).toEqual(['idle', 'idle', 'loaded', 'loaded']);
    await writeFile(release, '');
    const status = await stage.wait(id);
    expect(status.status, await stage.explain(id)).toBe('done');
  });
});
