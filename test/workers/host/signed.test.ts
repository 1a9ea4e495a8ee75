import { Job, Queue } from 'bullmq';
import { execa } from 'execa';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attemptJobId, dispatchQueue, JOBS } from '../../../src/shared/contracts.js';
import { byTask, mission, openStage, type Stage, task, writes } from '../../helpers/hosts-stage.js';
import { uniquePrefix } from '../../helpers/redis-server.js';
import {
  BIN_BUILDER,
  BIN_REVIEWER,
  startReadyWorker,
  until,
  type WorkerProcess,
} from '../../helpers/worker-process.js';

const SECRET = 's3cret';
const REFUSED = 'refusing job: payload signature missing or wrong';

/**
 * Signed jobs across processes: with FLOTILLA_SECRET on the host and the producer a mission runs;
 * a job whose payload is unsigned (a producer without the secret) or altered (data changed after
 * signing) is refused with a log line before anything runs; a host without a secret says so.
 */
describe('signed jobs', () => {
  let stage: Stage;
  let host: WorkerProcess;
  let connection: Redis;
  const queues: Queue[] = [];
  const queue = (name: string) => {
    const q = new Queue(name, { connection, prefix: stage.cluster.prefix });
    queues.push(q);
    return q;
  };

  beforeAll(async () => {
    stage = await openStage({ secret: SECRET });
    connection = new Redis(stage.redis.url, { maxRetriesPerRequest: null });
    host = await startReadyWorker(stage.cluster, {
      hostId: 'host-s',
      home: stage.home('host-s'),
      path: [BIN_BUILDER, BIN_REVIEWER],
    });
  });
  afterAll(async () => {
    await Promise.all(queues.map((q) => q.close()));
    await connection?.quit();
    await stage?.close();
  });

  it('runs a mission whose producer and hosts share the secret', async () => {
    expect(host.hasLog('FLOTILLA_SECRET is not set')).toBe(false);
    const { file } = await stage.writeMission(mission([task({ id: 'one', steps: writes('one') })]));
    const id = await stage.submit(file);
    const status = await stage.wait(id);
    expect(status.status, await stage.explain(id)).toBe('done');
  });

  it('signs the flows its gates add: a retry and a released dependent run too', async () => {
    const { file } = await stage.writeMission(
      mission([
        task({ id: 'first', steps: writes('first', '- fail_until_attempt: 2') }),
        task({ id: 'second', deps: ['first'], steps: writes('second') }),
      ]),
    );
    const id = await stage.submit(file);
    const status = await stage.wait(id);
    expect(status.status, await stage.explain(id)).toBe('done');
    expect(byTask(status, 'first').attempts).toBe(2);
    expect(host.hasLog(REFUSED)).toBe(false);
  });

  it('refuses an unsigned run job and an altered one before anything runs', async () => {
    const { file, ws } = await stage.writeMission(mission([task({ id: 'one', steps: writes('one') })]));
    const id = await stage.submit(file);
    expect((await stage.wait(id)).status).toBe('done');
    const dispatch = queue(dispatchQueue('code_implementation'));
    const signed = await Job.fromId(dispatch, attemptJobId(id, 'one', 1, 'run'));
    expect(signed?.data.sig).toMatch(/^[0-9a-f]{64}$/);

    // Unsigned: what a producer without the secret would add. Altered: a signed payload whose
    // attempt was changed afterwards (a second run of a task that is already approved).
    const unsigned = await dispatch.add(
      JOBS.run,
      { missionId: id, taskId: 'one', attempt: 2, capability: 'code_implementation' },
      { jobId: `${id}.forged-unsigned` },
    );
    const altered = await dispatch.add(
      JOBS.run,
      { ...signed?.data, attempt: 2 },
      { jobId: `${id}.forged-altered` },
    );
    for (const job of [unsigned, altered]) {
      await host.waitForLog((line) => line.msg === REFUSED && line.jobId === job.id, 60_000);
      const failed = await until(`job ${job.id} to fail`, async () =>
        (await job.getState()) === 'failed' ? job : undefined,
      );
      const reloaded = await Job.fromId(dispatch, failed.id ?? '');
      expect(reloaded?.failedReason).toContain('payload signature missing or wrong; refused');
    }
    // A replay: the original signed payload re-added under another id. The id is a function of the
    // signed data, so the host refuses it before anything runs.
    const replayed = await dispatch.add(JOBS.run, signed?.data, { jobId: `${id}.replayed` });
    const refused = await until('the replayed job to be refused', async () =>
      (await replayed.getState()) === 'failed' ? Job.fromId(dispatch, replayed.id ?? '') : undefined,
    );
    expect(refused?.failedReason).toContain('id does not match its signed payload');
    expect(host.lines.filter((line) => line.msg === 'starting CLI' && line.missionId === id)).toHaveLength(1);

    // Nothing ran: no second attempt in the audit or the task state, no attempt branch a2.
    const audit = await stage.audit(id);
    expect(audit.filter((e) => e.attempt === 2)).toEqual([]);
    expect(byTask(await stage.client.status(id), 'one')).toMatchObject({ status: 'completed', attempts: 1 });
    const branches = await execa('git', ['-C', ws, 'branch', '--list', '--format=%(refname:short)']);
    expect(branches.stdout).not.toContain('.one.a2');
  });

  it('refuses a whole mission submitted without the secret: its task never starts', async () => {
    const { file, ws } = await stage.writeMission(mission([task({ id: 'sneaky', steps: writes('sneaky') })]));
    const id = await stage.submit(file, { FLOTILLA_SECRET: undefined });
    const runJob = attemptJobId(id, 'sneaky', 1, 'run');
    await host.waitForLog((line) => line.msg === REFUSED && line.jobId === runJob, 60_000);
    // BullMQ's infrastructure retries come back to the same refusal; the CLI never starts.
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    // The task's state, read around the spec check (a client with the secret refuses the unsigned spec).
    await expect(stage.client.status(id)).rejects.toThrow(/spec signature missing or wrong/);
    const state = await stage.client.store.getTask(id, 'sneaky');
    expect(state).toMatchObject({ status: 'queued', attempts: 1, host: null });
    expect(host.hasLog((line) => line.msg === 'starting CLI' && line.taskId === 'sneaky')).toBe(false);
    const branches = await execa('git', ['-C', ws, 'branch', '--list', '--format=%(refname:short)']);
    expect(branches.stdout).not.toContain('sneaky');
  });

  it('a host without a secret warns at startup', async () => {
    // Its own prefix, so it never sees the jobs above.
    const unsigned = { redisUrl: stage.redis.url, prefix: uniquePrefix() };
    const open = await startReadyWorker(unsigned, {
      hostId: 'host-open',
      home: stage.home('host-open'),
      path: [BIN_BUILDER],
    });
    const warning = await open.waitForLog('FLOTILLA_SECRET is not set');
    expect(warning.msg).toMatch(/^FLOTILLA_SECRET is not set: jobs are not signed/);
    expect(warning.level).toBe(40);
    await open.stop();
  });
});
