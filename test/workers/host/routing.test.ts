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
  BIN_AUDITOR,
  BIN_BUILDER,
  BIN_REVIEWER,
  errorLines,
  lastJson,
  runFlotilla,
  startReadyWorker,
  until,
  type WorkerProcess,
} from '../../helpers/worker-process.js';

/**
 * Capability-bound routing across processes. Every host loads the same adapter folder
 * (test/fixtures/adapters-hosts); its PATH decides which CLIs it detects: host A has only the
 * builder, host B only the reviewer, host C none (it serves verify, critic hand-backs and gates),
 * and host D, started later, only the auditor.
 */
describe('hosts with different CLIs', () => {
  let stage: Stage;
  let a: WorkerProcess;
  let b: WorkerProcess;
  let c: WorkerProcess;

  beforeAll(async () => {
    stage = await openStage();
    const start = (hostId: string, path: string[]) =>
      startReadyWorker(stage.cluster, { hostId, home: stage.home(hostId), path });
    [a, b, c] = await Promise.all([
      start('host-a', [BIN_BUILDER]),
      start('host-b', [BIN_REVIEWER]),
      start('host-c', []),
    ]);
  });
  afterAll(async () => {
    await stage?.close();
  });

  it('runs build work only on the builder host and reviews only on the reviewer host; `hosts --json` says who serves what', async () => {
    const listed = await runFlotilla(stage.cluster, ['hosts', '--json']);
    expect(listed.exitCode).toBe(0);
    const hosts = lastJson<HostInfo[]>(listed);
    const of = (id: string) => hosts.find((h) => h.hostId === id);
    expect(hosts.map((h) => h.hostId)).toEqual(['host-a', 'host-b', 'host-c']);
    expect(of('host-a')?.clis.map((c) => c.cli)).toEqual(['sim-builder']);
    expect(of('host-a')?.clis[0]?.capabilities).toContain('code_implementation');
    expect(of('host-a')?.clis[0]?.version).toBe('flotilla-sim 0.1.0');
    expect(of('host-b')?.clis.map((c) => c.cli)).toEqual(['sim-reviewer']);
    expect(of('host-b')?.clis[0]?.capabilities).toEqual(['code_review', 'documentation']);
    expect(of('host-c')?.clis).toEqual([]);
    expect(a.hasLog('CLI Sim Reviewer: not installed (skipped)')).toBe(true);
    expect(b.hasLog('CLI Sim Builder: not installed (skipped)')).toBe(true);

    const { file, ws } = await stage.writeMission(
      mission([
        task({ id: 'one', steps: writes('one') }),
        task({ id: 'two', deps: ['one'], steps: writes('two') }),
        task({ id: 'three', capability: 'testing', steps: writes('three') }),
      ]),
    );
    const id = await stage.submit(file);
    const status = await stage.wait(id);
    expect(status.status, await stage.explain(id)).toBe('done');

    const shown = lastJson<typeof status>(await runFlotilla(stage.cluster, ['status', id, '--json']));
    for (const t of shown.tasks) {
      expect(t).toMatchObject({ status: 'completed', attempts: 1, host: 'host-a', cli: 'sim-builder' });
    }
    const audit = await stage.audit(id);
    for (const taskId of ['one', 'two', 'three']) {
      const entries = audit.filter((e) => e.taskId === taskId);
      const stageOf = (name: string) => entries.filter((e) => e.stage === name);
      expect(stageOf('run').map((e) => [e.host, e.cli])).toEqual([['host-a', 'sim-builder']]);
      expect(stageOf('critic').map((e) => [e.host, e.cli])).toEqual([['host-b', 'sim-reviewer']]);
      expect(stageOf('critic')[0]?.message).not.toContain('self-review');
      expect(stageOf('gate')).toHaveLength(1);
    }
    expect(await integrationMerges(ws, id)).toHaveLength(3);
    for (const host of [a, b, c]) expect(errorLines(host)).toEqual([]);
    // Once the mission is over no host counts a job as running, handed-back critic jobs included.
    const idle = await until(
      'every host to report nothing running',
      async () => {
        const now = lastJson<HostInfo[]>(await runFlotilla(stage.cluster, ['hosts', '--json']));
        return now.every((h) => h.running === 0) ? now : undefined;
      },
      20_000,
    ).catch(async () => lastJson<HostInfo[]>(await runFlotilla(stage.cluster, ['hosts', '--json'])));
    expect(idle.map((h) => [h.hostId, h.running])).toEqual([
      ['host-a', 0],
      ['host-b', 0],
      ['host-c', 0],
    ]);
  });

  it('a task whose capability no live host serves waits with a reason, and runs once a host that serves it starts', async () => {
    const { file } = await stage.writeMission(
      mission([
        task({ id: 'audit', capability: 'security_audit', steps: writes('audit') }),
        task({ id: 'plain', steps: writes('plain') }),
      ]),
    );
    const id = await stage.submit(file);
    const waiting = await until('the audit task to show why it waits', async () => {
      const shown = lastJson<{
        status: string;
        tasks: { id: string; status: string; route: string | null }[];
      }>(await runFlotilla(stage.cluster, ['status', id, '--json']));
      const audit = shown.tasks.find((t) => t.id === 'audit');
      return audit?.route ? audit : undefined;
    });
    expect(waiting.status).toBe('queued');
    expect(waiting.route).toMatch(/no live host serves security_audit/);
    // The table view prints the same reason under the table for a task that waits.
    const table = await runFlotilla(stage.cluster, ['status', id]);
    expect(table.stdout).toMatch(/audit: no live host serves security_audit/);

    // The rest of the mission goes on meanwhile; the audit task is still untouched.
    await until('the plain task to complete', async () => {
      const s = await stage.client.status(id);
      return byTask(s, 'plain').status === 'completed' ? s : undefined;
    });
    expect(byTask(await stage.client.status(id), 'audit').status).toBe('queued');
    expect((await stage.audit(id)).filter((e) => e.taskId === 'audit' && e.stage === 'run')).toEqual([]);

    await startReadyWorker(stage.cluster, {
      hostId: 'host-d',
      home: stage.home('host-d'),
      path: [BIN_AUDITOR],
    });
    const status = await stage.wait(id);
    expect(status.status, await stage.explain(id)).toBe('done');
    expect(byTask(status, 'audit')).toMatchObject({
      status: 'completed',
      attempts: 1,
      host: 'host-d',
      cli: 'sim-auditor',
    });
    const critic = (await stage.audit(id)).filter((e) => e.taskId === 'audit' && e.stage === 'critic');
    expect(critic.map((e) => [e.host, e.cli])).toEqual([['host-b', 'sim-reviewer']]);
  });

  it('a task pinned to a CLI only host B has waits for such a host, though host A serves its queue', async () => {
    // Host B leaves; the pinned task's queue (documentation) is one host A consumes too.
    b.signal('SIGTERM');
    expect((await b.exited).code).toBe(0);
    const { file, ws } = await stage.writeMission(
      mission([
        task({
          id: 'pinned',
          capability: 'documentation',
          // The reviewer CLI runs it as a reviewer would, so its steps say `role: both`.
          steps: '- {write: {path: pinned.txt, content: "pinned"}, role: both}',
          extra: ['cli: sim-reviewer', 'critic: false'],
        }),
      ]),
    );
    const id = await stage.submit(file);
    const route = await until(
      'the pinned task to show why it waits',
      async () => byTask(await stage.client.status(id), 'pinned').route ?? undefined,
    );
    expect(route).toMatch(/pinned CLI 'sim-reviewer' is on no live host/);
    // Host A takes the job from the documentation queue and hands it back (every 2 s); it never runs it.
    await new Promise((resolve) => setTimeout(resolve, 6_000));
    expect(byTask(await stage.client.status(id), 'pinned').status).toBe('queued');

    await startReadyWorker(stage.cluster, {
      hostId: 'host-b2',
      home: stage.home('host-b2'),
      path: [BIN_REVIEWER],
    });
    const status = await stage.wait(id);
    expect(status.status, await stage.explain(id)).toBe('done');
    expect(byTask(status, 'pinned')).toMatchObject({
      status: 'completed',
      attempts: 1,
      host: 'host-b2',
      cli: 'sim-reviewer',
    });
    const runs = (await stage.audit(id)).filter((e) => e.stage === 'run');
    expect(runs.map((e) => [e.host, e.cli])).toEqual([['host-b2', 'sim-reviewer']]);
    expect(await integrationMerges(ws, id)).toHaveLength(1);
  });
});
