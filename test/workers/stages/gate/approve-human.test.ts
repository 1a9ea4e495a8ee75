import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MissionStatusJson } from '../../../../src/shared/contracts.js';
import { byTask, mission, openStage, type Stage, task, writes } from '../../../helpers/hosts-stage.js';
import {
  BIN_BUILDER,
  BIN_REVIEWER,
  runFlotilla,
  startReadyWorker,
  until,
  type WorkerProcess,
} from '../../../helpers/worker-process.js';

/**
 * `approve: human` across real worker processes on a signed cluster: a task whose exit criteria
 * and critic passed waits for a person before it merges and releases its dependents; the verdict
 * comes from `flotilla approve` (a process of its own, as a person runs it), is signed like every
 * job, and is taken by whichever host is alive — the one that held the task may be dead.
 */
const SECRET = 'approve-human-test-secret';

async function held(stage: Stage, id: string, taskId: string): Promise<MissionStatusJson> {
  return until(`${taskId} awaiting approval`, async () => {
    const status = await stage.client.status(id);
    return byTask(status, taskId).status === 'awaiting_approval' ? status : undefined;
  });
}

async function onBranch(ws: string, id: string, path: string): Promise<boolean> {
  const shown = await execa('git', ['-C', ws, 'cat-file', '-e', `flotilla/${id}:${path}`], { reject: false });
  return shown.exitCode === 0;
}

describe('approve: human', () => {
  let stage: Stage;
  let host: WorkerProcess;

  const start = (hostId: string) =>
    startReadyWorker(stage.cluster, { hostId, home: stage.home(hostId), path: [BIN_BUILDER, BIN_REVIEWER] });

  beforeAll(async () => {
    stage = await openStage({ secret: SECRET });
    host = await start('approver-1');
  });
  afterAll(async () => {
    await stage?.close();
  });

  it('holds the approved work unmerged, its dependent pending, until a person approves it', async () => {
    const { file, ws } = await stage.writeMission(
      mission([
        task({ id: 'schema', steps: writes('schema'), extra: ['critic: false', 'approve: human'] }),
        task({ id: 'api', steps: writes('api'), deps: ['schema'], extra: ['critic: false'] }),
        task({ id: 'docs', steps: writes('docs'), extra: ['critic: false'] }),
      ]),
    );
    const id = await stage.submit(file);
    const status = await held(stage, id, 'schema');
    await until('docs to complete', async () =>
      byTask(await stage.client.status(id), 'docs').status === 'completed' ? true : undefined,
    );
    expect(byTask(status, 'schema')).toMatchObject({ status: 'awaiting_approval', attempts: 1 });
    expect(byTask(status, 'schema').heldAt).toEqual(expect.any(String));
    expect(byTask(await stage.client.status(id), 'api').status).toBe('pending');
    expect(await onBranch(ws, id, 'schema.txt')).toBe(false);
    const shown = await runFlotilla(stage.cluster, ['status', id]);
    expect(shown.stdout).toContain('awaiting_approval');

    const approved = await runFlotilla(stage.cluster, ['approve', id, 'schema', '--by', 'alice']);
    expect(approved.stderr).toBe('');
    expect(approved.exitCode).toBe(0);
    expect(approved.stdout).toContain('schema attempt 1 approved by alice');

    const final = await stage.wait(id);
    expect(final.status, await stage.explain(id)).toBe('done');
    expect(byTask(final, 'schema')).toMatchObject({
      status: 'completed',
      attempts: 1,
      approval: { verdict: 'approved', by: 'alice', waitedMs: expect.any(Number) },
    });
    expect(byTask(final, 'schema').heldAt).toBeUndefined();
    expect(await onBranch(ws, id, 'schema.txt')).toBe(true);
    expect(await onBranch(ws, id, 'api.txt')).toBe(true);
    const gates = (await stage.audit(id)).filter((e) => e.taskId === 'schema' && e.stage === 'gate');
    expect(gates.map((e) => e.message)).toEqual([
      "passed its gates; waiting for a person's approval",
      'approved by alice',
    ]);
    const receipt = await runFlotilla(stage.cluster, ['receipt', id]);
    const body = JSON.parse(receipt.stdout) as {
      tasks: { id: string; attempts: { approval?: unknown; platform?: string }[] }[];
    };
    expect(body.tasks.find((t) => t.id === 'schema')?.attempts[0]?.approval).toMatchObject({
      verdict: 'approved',
      by: 'alice',
    });
    expect(body.tasks.find((t) => t.id === 'api')?.attempts[0]?.approval).toBeUndefined();
    // The machine each attempt ran on, as its host detected it.
    expect(body.tasks.find((t) => t.id === 'api')?.attempts[0]).toMatchObject({
      platform: `${process.platform === 'win32' ? 'windows' : process.platform}/${process.arch}`,
    });

    // Nothing waits any more: a second verdict is refused with the task's state.
    const again = await runFlotilla(stage.cluster, ['approve', id, 'schema']);
    expect(again.exitCode).toBe(2);
    expect(again.stderr).toContain('task schema is completed, not waiting for approval');
  }, 240_000);

  it('feeds a rejection to the retry, which waits for a person again', async () => {
    const { file } = await stage.writeMission(
      mission([task({ id: 'naming', steps: writes('naming'), extra: ['critic: false', 'approve: human'] })]),
    );
    const id = await stage.submit(file);
    await held(stage, id, 'naming');
    const rejected = await runFlotilla(stage.cluster, [
      'approve',
      id,
      'naming',
      '--by',
      'bob',
      '--reject',
      'use snake_case for every column',
    ]);
    expect(rejected.exitCode, rejected.stderr).toBe(0);
    expect(rejected.stdout).toContain('naming attempt 1 rejected by bob');
    const second = await until('attempt 2 held', async () => {
      const status = await stage.client.status(id);
      const t = byTask(status, 'naming');
      return t.status === 'awaiting_approval' && t.attempts === 2 ? t : undefined;
    });
    expect(second.approval).toMatchObject({ verdict: 'rejected', by: 'bob' });
    const audit = await stage.audit(id);
    const prompts = audit.filter((e) => e.taskId === 'naming' && e.stage === 'run' && e.files?.['prompt.md']);
    expect(prompts[0]?.files?.['prompt.md']).not.toContain('snake_case');
    expect(prompts[1]?.files?.['prompt.md']).toContain('use snake_case for every column');
    expect(audit.some((e) => e.message.includes('rejected by bob: use snake_case for every column'))).toBe(
      true,
    );
    expect((await stage.client.approve(id, 'naming', { by: 'bob' })).counted).toBe(true);
    const final = await stage.wait(id);
    expect(final.status, await stage.explain(id)).toBe('done');
    expect(byTask(final, 'naming')).toMatchObject({ attempts: 2, approval: { verdict: 'approved' } });
  }, 240_000);

  it('counts the first verdict of an attempt and says whose it was to the second', async () => {
    await host.kill9();
    const { file, ws } = await stage.writeMission(
      mission([task({ id: 'race', steps: writes('race'), extra: ['critic: false', 'approve: human'] })]),
    );
    host = await start('approver-2');
    const id = await stage.submit(file);
    await held(stage, id, 'race');
    // The host that held the task dies; the verdict waits in Redis for any live host.
    await host.kill9();
    const first = await runFlotilla(stage.cluster, ['approve', id, 'race', '--by', 'carol']);
    const second = await runFlotilla(stage.cluster, [
      'approve',
      id,
      'race',
      '--by',
      'dave',
      '--reject',
      'no',
    ]);
    expect(first.exitCode, first.stderr).toBe(0);
    expect(second.exitCode).toBe(1);
    expect(second.stderr).toContain('race attempt 1 was already approved by carol');
    expect(byTask(await stage.client.status(id), 'race').status).toBe('awaiting_approval');
    host = await start('approver-3');
    const final = await stage.wait(id);
    expect(final.status, await stage.explain(id)).toBe('done');
    expect(byTask(final, 'race').approval).toMatchObject({ verdict: 'approved', by: 'carol' });
    expect(await onBranch(ws, id, 'race.txt')).toBe(true);
  }, 240_000);

  it('fails or skips a task whose approval does not come in time, as its author chose', async () => {
    const { file } = await stage.writeMission(
      mission([
        task({
          id: 'late',
          steps: writes('late'),
          extra: ['critic: false', 'approve: human', 'approve_timeout: 1s', 'on_approve_timeout: skip'],
        }),
        task({ id: 'after', steps: writes('after'), deps: ['late'], extra: ['critic: false'] }),
        task({
          id: 'strict',
          steps: writes('strict'),
          extra: ['critic: false', 'approve: human', 'approve_timeout: 1s'],
        }),
      ]),
    );
    const id = await stage.submit(file);
    const final = await stage.wait(id);
    expect(final.status, await stage.explain(id)).toBe('failed');
    expect(byTask(final, 'late')).toMatchObject({ status: 'skipped', error: 'no approval within 1s' });
    expect(byTask(final, 'after')).toMatchObject({ status: 'skipped', error: 'dependency late skipped' });
    expect(byTask(final, 'strict')).toMatchObject({ status: 'failed', error: 'no approval within 1s' });
  }, 240_000);
});
