import { createHmac } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NotifyBody } from '../../../../src/shared/notify.js';
import { indent, sim, startCluster, type TestCluster } from '../../../helpers/flotilla.js';
import { until } from '../../../helpers/worker-process.js';

/**
 * `notify:` webhooks on a real host and a real HTTP receiver that refuses each delivery twice
 * before it takes it: every event a hook asked for arrives, each exactly once as a 2xx (with the
 * same delivery id and body on every try), signed with FLOTILLA_WEBHOOK_SECRET as GitHub signs
 * its webhooks; events a hook did not ask for never reach it.
 */
const WEBHOOK_SECRET = 'webhook-secret-for-the-test';

interface Received {
  readonly path: string;
  readonly delivery: string;
  readonly event: string;
  readonly signature: string;
  readonly raw: string;
  readonly answered: number;
}

describe('notify: webhooks', () => {
  let cluster: TestCluster;
  let receiver: Server;
  let base: string;
  const log: Received[] = [];
  const tries = new Map<string, number>();

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      let raw = '';
      req.on('data', (chunk: Buffer) => {
        raw += chunk.toString('utf8');
      });
      req.on('end', () => {
        const delivery = String(req.headers['x-flotilla-delivery'] ?? '');
        const n = (tries.get(delivery) ?? 0) + 1;
        tries.set(delivery, n);
        const answered = n <= 2 ? 503 : 200;
        log.push({
          path: req.url ?? '',
          delivery,
          event: String(req.headers['x-flotilla-event'] ?? ''),
          signature: String(req.headers['x-flotilla-signature-256'] ?? ''),
          raw,
          answered,
        });
        res.writeHead(answered).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    cluster = await startCluster({
      hosts: 1,
      env: { FLOTILLA_SECRET: 'job-secret', FLOTILLA_WEBHOOK_SECRET: WEBHOOK_SECRET },
    });
  });
  afterAll(async () => {
    await cluster?.stop();
    await new Promise<void>((resolve) => receiver?.close(() => resolve()));
  });

  it('delivers every event each hook asked for once, after refused tries, signed', async () => {
    const task = (id: string, steps: string, extra: string[] = [], criteria = `test -f ${id}.txt`) => [
      `  - id: ${id}`,
      `    title: Task ${id}`,
      '    critic: false',
      ...extra.map((line) => `    ${line}`),
      `    exit_criteria: [${JSON.stringify(criteria)}]`,
      '    description: |',
      `      Do ${id}.`,
      '',
      indent(sim(steps)),
    ];
    const id = await cluster.submit(
      [
        'goal: Tell the receivers',
        'workspace: ./ws',
        'defaults: { max_attempts: 1, timeout: 60s }',
        'notify:',
        `  - url: ${base}/people`,
        `  - url: ${base}/done`,
        '    events: [task.completed]',
        'tasks:',
        ...task('broken', '- write: {path: other.txt, content: "x"}'),
        ...task('held', '- write: {path: held.txt, content: "x"}', ['approve: human']),
        ...task('plain', '- write: {path: plain.txt, content: "x"}'),
      ].join('\n'),
    );
    await until('held to wait', async () =>
      (await cluster.client.status(id)).tasks.find((t) => t.id === 'held')?.status === 'awaiting_approval'
        ? true
        : undefined,
    );
    await cluster.client.approve(id, 'held', { by: 'erin' });
    const final = await cluster.client.wait(id, { pollMs: 200, timeoutMs: 120_000 });
    expect(final.status).toBe('partial');

    const expected = [
      ['/people', 'task.failed', 'broken'],
      ['/people', 'task.awaiting_approval', 'held'],
      ['/people', 'mission.finished', null],
      ['/done', 'task.completed', 'held'],
      ['/done', 'task.completed', 'plain'],
    ].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
    const taken = () => log.filter((r) => r.answered === 200);
    await until(
      'every delivery taken',
      () => (taken().length >= expected.length ? true : undefined),
      120_000,
    );

    const delivered = taken().map((r) => {
      const body = JSON.parse(r.raw) as NotifyBody;
      return [r.path, body.event, body.task?.id ?? null];
    });
    expect(delivered.sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)))).toEqual(expected);
    for (const r of taken()) {
      const body = JSON.parse(r.raw) as NotifyBody;
      // Each delivery: refused twice, then taken; the same id and bytes every time.
      const all = log.filter((x) => x.delivery === r.delivery);
      expect(all.map((x) => x.answered)).toEqual([503, 503, 200]);
      expect(new Set(all.map((x) => x.raw)).size).toBe(1);
      expect(body).toMatchObject({
        version: 1,
        id: r.delivery,
        event: r.event,
        mission: { id, goal: 'Tell the receivers' },
      });
      const signature = `sha256=${createHmac('sha256', WEBHOOK_SECRET).update(r.raw).digest('hex')}`;
      expect(r.signature).toBe(signature);
    }
    const failed = JSON.parse(taken().find((r) => r.event === 'task.failed')?.raw ?? '{}') as NotifyBody;
    expect(failed.task).toMatchObject({ id: 'broken', status: 'failed', attempts: 1 });
    expect(failed.task?.error).toContain('exit criteria failed');
    const finished = JSON.parse(
      taken().find((r) => r.event === 'mission.finished')?.raw ?? '{}',
    ) as NotifyBody;
    expect(finished.mission.status).toBe('partial');
    expect(finished.summary).toContain('Mission partial');
    const waiting = JSON.parse(
      taken().find((r) => r.event === 'task.awaiting_approval')?.raw ?? '{}',
    ) as NotifyBody;
    expect(waiting.task?.heldAt).toEqual(expect.any(String));
  }, 240_000);

  it('tells a mission with deliver: finished once its delivery settled, the summary saying where it went', async () => {
    const bare = `${cluster.dir}/finished-origin.git`;
    await execa('git', ['init', '--bare', '--quiet', bare]);
    const id = await cluster.submit(
      [
        'goal: Deliver then tell',
        'workspace: ./ws',
        'defaults: { critic: false, timeout: 60s }',
        `deliver: { push: ${JSON.stringify(bare)} }`,
        'notify:',
        `  - url: ${base}/delivered`,
        '    events: [mission.finished]',
        'tasks:',
        '  - id: a',
        '    title: A',
        '    exit_criteria: ["test -f a.txt"]',
        '    description: |',
        indent(sim('- write: {path: a.txt, content: "a"}')),
      ].join('\n'),
    );
    const final = await cluster.client.wait(id, { pollMs: 200, timeoutMs: 120_000 });
    expect(final.delivery?.state).toBe('delivered');
    const taken = await until('mission.finished taken', () =>
      log.find((r) => r.path === '/delivered' && r.answered === 200),
    );
    const body = JSON.parse(taken.raw) as NotifyBody;
    expect(body).toMatchObject({ event: 'mission.finished', mission: { id, status: 'done' } });
    expect(body.summary).toContain(`Delivered: flotilla/${id} pushed to ${bare}`);
    expect(log.filter((r) => r.path === '/delivered' && r.answered === 200)).toHaveLength(1);
  }, 240_000);
});
