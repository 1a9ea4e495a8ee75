import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mission, openStage, type Stage, task, writes } from '../helpers/hosts-stage.js';
import { type LocalForge, startLocalForge } from '../helpers/local-forge.js';
import {
  BIN_BUILDER,
  BIN_REVIEWER,
  startReadyWorker,
  type WorkerProcess,
} from '../helpers/worker-process.js';

/**
 * A host killed (SIGKILL) in the middle of delivering: after the forge opened the pull request,
 * before its reply reached the host, so nothing of it was recorded. The delivery job goes to the
 * next host (BullMQ's stalled-job check), whose try finds the open pull request for the branch and
 * updates it: one pull request, never two.
 */
const TOKEN = 'ghp_crashtesttoken0123456789';
const SECRET = 'deliver-crash-secret';

describe('delivery across a crash', () => {
  let stage: Stage;
  let forge: LocalForge;
  const hosts: WorkerProcess[] = [];

  const start = (hostId: string) =>
    startReadyWorker(stage.cluster, {
      hostId,
      home: stage.home(hostId),
      path: [BIN_BUILDER, BIN_REVIEWER],
      lockMs: 3_000,
      env: { FLOTILLA_FORGE_TOKEN: TOKEN, FLOTILLA_DELIVER_BACKOFF_MS: '200' },
    });

  beforeAll(async () => {
    stage = await openStage({ secret: SECRET });
    forge = await startLocalForge({ kind: 'github', token: TOKEN, root: stage.home('forge') });
  });
  afterAll(async () => {
    await Promise.all(hosts.map((h) => h.stop()));
    await forge?.stop();
    await stage?.close();
  });

  it('a host killed after the forge opened the pull request: the next host updates that one', async () => {
    const remote = await forge.createRepo('acme/crash');
    const yaml = [
      mission([task({ id: 'mean', steps: writes('mean'), extra: ['critic: false'] })]),
      `deliver: { forge: github, api_url: "${forge.apiUrl}", pull_request: { base: main, labels: [flotilla] } }`,
    ].join('\n');
    const { file, ws } = await stage.writeMission(yaml);
    const git = (...args: string[]) => execa('git', ['-C', ws, ...args]);
    await git('init', '--quiet', '--initial-branch=main');
    await writeFile(join(ws, 'README.md'), 'calc\n');
    await git('add', '-A');
    await git('-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '--quiet', '-m', 'start');
    await git('remote', 'add', 'origin', remote);
    await git('push', '--quiet', 'origin', 'main');

    const first = await start('deliver-a');
    hosts.push(first);
    let killed = false;
    forge.onCreate = async () => {
      if (killed) return;
      killed = true;
      await first.kill9();
    };
    const id = await stage.submit(file);
    const deadline = Date.now() + 120_000;
    while (!killed && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(killed, await stage.explain(id)).toBe(true);
    expect((await stage.client.status(id)).delivery?.state).toBe('pending');

    hosts.push(await start('deliver-b'));
    const final = await stage.wait(id);
    expect(final.status, await stage.explain(id)).toBe('done');
    expect(forge.log.map((r) => `${r.method} ${r.url.replace(/\?.*/, '')} ${r.status}`)).toEqual([
      'GET /repos/acme/crash/pulls 200',
      'POST /repos/acme/crash/pulls 201',
      'GET /repos/acme/crash/pulls 200',
      'PATCH /repos/acme/crash/pulls/1 200',
      'POST /repos/acme/crash/issues/1/labels 200',
    ]);
    expect(forge.pulls.get('acme/crash')).toHaveLength(1);
    expect(final.delivery).toMatchObject({
      state: 'delivered',
      tries: 1,
      pullRequest: { number: 1, action: 'updated' },
    });
    const delivered = (await stage.audit(id)).filter((e) => e.stage === 'delivery');
    expect(delivered.map((e) => `${e.host} ${e.message}`)).toEqual([
      `deliver-a delivery: flotilla/${id} at ${final.delivery?.pushedCommit?.slice(0, 12)} is on origin`,
      `deliver-b delivery: flotilla/${id} at ${final.delivery?.pushedCommit?.slice(0, 12)} is on origin`,
      `deliver-b delivery: updated github pull request #1 ${forge.url}/acme/crash/pull/1`,
    ]);
    console.log(`local forge request log (crash replay):\n${forge.formatLog()}`);
  }, 240_000);
});
