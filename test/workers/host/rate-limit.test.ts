import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HostInfo } from '../../../src/shared/store/registry.js';
import { byTask, mission, openStage, type Stage, task, writes } from '../../helpers/hosts-stage.js';
import {
  BIN_AUDITOR,
  BIN_BUILDER,
  BIN_REVIEWER,
  lastJson,
  runFlotilla,
  startReadyWorker,
  type WorkerProcess,
} from '../../helpers/worker-process.js';

/**
 * Replies that are not the agent's fault, on real host processes: a rate limit sends the job back
 * without spending an attempt; a CLI that is not logged in is withdrawn from the registry, and a
 * task no other host can serve fails at once with the CLI's own message.
 */
describe('rate limits and logins on worker hosts', () => {
  let stage: Stage;
  let builderHost: WorkerProcess;
  let auditorHost: WorkerProcess;

  beforeAll(async () => {
    stage = await openStage();
    [builderHost, auditorHost] = await Promise.all([
      startReadyWorker(stage.cluster, {
        hostId: 'host-r',
        home: stage.home('host-r'),
        path: [BIN_BUILDER, BIN_REVIEWER],
      }),
      startReadyWorker(stage.cluster, { hostId: 'host-x', home: stage.home('host-x'), path: [BIN_AUDITOR] }),
    ]);
  });
  afterAll(async () => {
    await stage?.close();
  });

  it('a rate-limited run goes back to the queue without using up an attempt', async () => {
    const { file } = await stage.writeMission(
      mission([task({ id: 'limited', steps: writes('limited', '- rate_limit: {times: 2}') })]),
    );
    const id = await stage.submit(file);
    const status = await stage.wait(id, 100_000);
    expect(status.status, await stage.explain(id)).toBe('done');
    expect(byTask(status, 'limited')).toMatchObject({
      status: 'completed',
      attempts: 1,
      host: 'host-r',
      cli: 'sim-builder',
    });

    const shown = lastJson<typeof status>(await runFlotilla(stage.cluster, ['status', id, '--json']));
    expect(byTask(shown, 'limited').attempts).toBe(1);
    const runs = (await stage.audit(id)).filter((e) => e.taskId === 'limited' && e.stage === 'run');
    expect(runs.map((e) => e.attempt)).toEqual([1, 1, 1]);
    expect(runs.slice(0, 2).map((e) => e.message)).toEqual([
      expect.stringMatching(/^rate limited \(attempt not counted, back to the queue\): .*429/),
      expect.stringMatching(/^rate limited \(attempt not counted, back to the queue\): .*429/),
    ]);
    expect(runs[2]?.message).toMatch(/exited 0/);
    expect((await stage.audit(id)).filter((e) => e.stage === 'route')).toHaveLength(1);
    // Handing the job back is routine: the host lives on (it once died here of an unhandled rejection).
    expect(builderHost.running).toBe(true);
  });

  it('a rate-limited reviewer hands the review back, waited for rather than replaced by a self-review', async () => {
    const { file } = await stage.writeMission(
      mission([
        task({
          id: 'reviewed',
          extra: ['critic: true'],
          steps: writes('reviewed', '- rate_limit: {times: 2}\n  role: reviewer\n- review: {score: 9}'),
        }),
      ]),
    );
    const id = await stage.submit(file);
    const status = await stage.wait(id, 100_000);
    expect(status.status, await stage.explain(id)).toBe('done');
    expect(byTask(status, 'reviewed')).toMatchObject({ status: 'completed', attempts: 1, score: 9 });
    const reviews = (await stage.audit(id)).filter((e) => e.taskId === 'reviewed' && e.stage === 'critic');
    expect(reviews.map((e) => e.attempt)).toEqual([1, 1, 1]);
    expect(reviews.slice(0, 2).map((e) => e.message)).toEqual([
      expect.stringMatching(/^rate limited \(attempt not counted, back to the queue\): .*429/),
      expect.stringMatching(/^rate limited \(attempt not counted, back to the queue\): .*429/),
    ]);
    expect(reviews[2]).toMatchObject({ cli: 'sim-reviewer' });
    expect(reviews[2]?.message).not.toMatch(/self-review/i);
    expect((await stage.audit(id)).filter((e) => e.taskId === 'reviewed' && e.stage === 'run')).toHaveLength(
      1,
    );
  });

  it('a CLI that is not logged in fails its task at once when no other host can serve it, and is withdrawn', async () => {
    const { file } = await stage.writeMission(
      mission(
        [task({ id: 'scan', capability: 'security_audit', steps: '- not_logged_in: true' })],
        '{ max_attempts: 3, backoff: 500ms, timeout: 5m }',
      ),
    );
    const id = await stage.submit(file);
    const status = await stage.wait(id);
    expect(status.status, await stage.explain(id)).toBe('failed');
    const scan = byTask(status, 'scan');
    expect(scan).toMatchObject({ status: 'failed', attempts: 1, host: 'host-x', cli: 'sim-auditor' });
    expect(scan.error).toContain('Invalid API key · Please run /login');

    const audit = await stage.audit(id);
    expect(audit.filter((e) => e.stage === 'route')).toHaveLength(1);
    expect(audit.find((e) => e.stage === 'run')?.message).toMatch(
      /Invalid API key · Please run \/login \(no live host can serve the task\)/,
    );
    expect(
      auditorHost.hasLog('Sim Auditor is not usable on this host: Invalid API key · Please run /login'),
    ).toBe(true);

    const hosts = lastJson<HostInfo[]>(await runFlotilla(stage.cluster, ['hosts', '--json']));
    const x = hosts.find((h) => h.hostId === 'host-x');
    expect(x?.clis).toEqual([]);
    expect(x?.disabled).toEqual([{ cli: 'sim-auditor', reason: 'Invalid API key · Please run /login' }]);
    const table = await runFlotilla(stage.cluster, ['hosts']);
    expect(table.stdout).toContain('sim-auditor: disabled — Invalid API key · Please run /login');
  });
});
