import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_BODY_BYTES } from '../../src/board/api/read-body.js';
import { type BoardServer, createBoardServer } from '../../src/board/server.js';
import { status as statusCommand } from '../../src/cli/commands/missions.js';
import type { Io } from '../../src/cli/io.js';
import { FlotillaClient } from '../../src/client.js';
import type { MissionStatusJson } from '../../src/shared/contracts.js';
import { connectOrFail, type RedisClient } from '../../src/shared/redis.js';
import { verifyPayload } from '../../src/shared/signing.js';
import { missionKeys } from '../../src/shared/store/keys.js';
import { indent, sim, startCluster, type TestCluster } from '../helpers/flotilla.js';
import { ROOT } from '../helpers/paths.js';
import { type RedisHandle, startRedis, uniquePrefix } from '../helpers/redis-server.js';

/**
 * The board's HTTP API over real HTTP (node's fetch) against a private Redis and an in-process
 * worker host running the stand-in agent: submit as YAML or JSON, follow Server-Sent Events to the
 * end, status exactly as the CLI prints it, cancel, answer, and every refusal in its JSON shape.
 */

const TOKEN = 'api-test-token-5f1c2a';
const SUBMIT_SH = join(ROOT, 'examples', 'scripts', 'submit.sh');
const SECRET = 'api-test-job-secret';

interface Message {
  id?: string;
  event?: string;
  data?: string;
}

/** The messages of a text/event-stream body (comments dropped). */
function parseSse(text: string): Message[] {
  return text
    .split('\n\n')
    .map((block) => {
      const message: Message = {};
      for (const line of block.split('\n')) {
        const match = /^(id|event|data): ?(.*)$/.exec(line);
        if (match?.[1] === 'id' || match?.[1] === 'event' || match?.[1] === 'data')
          message[match[1]] = match[2];
      }
      return message;
    })
    .filter((message) => message.data !== undefined);
}

function simTask(id: string, steps: string, extra: string[] = []): string[] {
  return [
    `  - id: ${id}`,
    `    title: Task ${id}`,
    '    critic: false',
    `    exit_criteria: ["test -f ${id}.txt"]`,
    ...extra,
    '    description: |',
    `      Do ${id}.`,
    '',
    indent(sim(steps)),
  ];
}

describe('the board API on a cluster', () => {
  let cluster: TestCluster;
  let boardRedis: RedisClient;
  let board: BoardServer;
  let api: string;
  let workspaces = 0;
  const auth = { Authorization: `Bearer ${TOKEN}` };

  async function workspace(): Promise<string> {
    const dir = join(cluster.dir, `api-ws-${++workspaces}`);
    await mkdir(dir, { recursive: true });
    return dir;
  }

  function post(path: string, body: string, type: string, headers: Record<string, string> = auth) {
    return fetch(`${api}${path}`, { method: 'POST', body, headers: { ...headers, 'Content-Type': type } });
  }

  async function errorOf(response: Response) {
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    const body = (await response.json()) as {
      error: { code: string; message: string; problems?: Record<string, unknown>[] };
    };
    expect(Object.keys(body)).toEqual(['error']);
    return body.error;
  }

  async function storedKeys(): Promise<number> {
    return (await boardRedis.keys(`${cluster.config.prefix}:m:*`)).length;
  }

  beforeAll(async () => {
    cluster = await startCluster({ hosts: 1, slots: 3, env: { FLOTILLA_SECRET: SECRET } });
    boardRedis = await connectOrFail(cluster.redis.url);
    board = await createBoardServer({
      redis: boardRedis,
      prefix: cluster.config.prefix,
      host: '127.0.0.1',
      port: 0,
      api: { client: cluster.client, token: TOKEN, pollMs: 200 },
    });
    api = `${board.url}/api/v1`;
  });
  afterAll(async () => {
    await board?.close();
    await boardRedis?.quit();
    await cluster?.stop();
  });

  it('submits a YAML mission, signed with the secret, and follows its events to the end', async () => {
    const ws = await workspace();
    const yaml = [
      'goal: Two tasks over HTTP',
      `workspace: ${ws}`,
      'defaults: { backoff: 200ms }',
      'tasks:',
      ...simTask('one', '- write: {path: one.txt, content: "1"}'),
      ...simTask('two', '- write: {path: two.txt, content: "2"}', ['    depends_on: [one]']),
    ].join('\n');
    const submitted = await post('/missions', yaml, 'application/yaml');
    expect(submitted.status).toBe(201);
    const { id, branch, warnings } = (await submitted.json()) as { id: string; branch: string; warnings: [] };
    expect(submitted.headers.get('location')).toBe(`/api/v1/missions/${id}`);
    expect(branch).toBe(`flotilla/${id}`);
    expect(warnings).toEqual([]);
    // Signed as the CLI signs: the stored spec verifies with FLOTILLA_SECRET (and hosts ran it).
    const raw = await boardRedis.hgetall(missionKeys(cluster.config.prefix, id).meta);
    expect(raw.sig).toBeTruthy();
    expect(verifyPayload({ id: raw.id, spec: raw.spec, repo: raw.repo, sig: raw.sig }, SECRET)).toBe(true);

    const stream = await fetch(`${api}/missions/${id}/events`, {
      headers: auth,
      signal: AbortSignal.timeout(120_000),
    });
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    // The body ends by itself once the mission has finished.
    const messages = parseSse(await stream.text());
    expect(messages[0]?.event).toBe('submitted');
    const last = messages.at(-1);
    expect(last?.event).toBe('mission');
    expect(JSON.parse(last?.data ?? '{}')).toMatchObject({ type: 'mission', status: 'done', missionId: id });
    for (const message of messages) {
      expect(message.id).toMatch(/^\d+-\d+$/);
      expect(JSON.parse(message.data ?? '{}').type).toBe(message.event);
    }

    // Resuming after the second message gives exactly the rest; after the last one, 204.
    const resumed = await fetch(`${api}/missions/${id}/events`, {
      headers: { ...auth, 'Last-Event-ID': messages[1]?.id ?? '' },
    });
    expect(parseSse(await resumed.text()).map((m) => m.id)).toEqual(messages.slice(2).map((m) => m.id));
    const over = await fetch(`${api}/missions/${id}/events?after=${last?.id}`, { headers: auth });
    expect(over.status).toBe(204);

    // The status, exactly as `flotilla status <id> --json` prints it.
    const status = await fetch(`${api}/missions/${id}`, { headers: auth });
    expect(status.status).toBe(200);
    const printed: string[] = [];
    const io: Io = { out: (line) => printed.push(line), err: () => {}, isTTY: false };
    expect(await statusCommand({ id, json: true, watch: false }, cluster.config, io)).toBe(0);
    expect(await status.text()).toBe(printed.at(-1));
    const parsed = JSON.parse(printed.at(-1) ?? '{}') as MissionStatusJson;
    expect(parsed.status).toBe('done');

    const list = await fetch(`${api}/missions`, { headers: auth });
    const { missions } = (await list.json()) as { missions: { id: string; tasks: number }[] };
    expect(missions.find((m) => m.id === id)?.tasks).toBe(2);
  });

  it('examples/scripts/submit.sh submits a file with curl, prints its events and the final status, exits 0', async () => {
    const ws = await workspace();
    const file = join(ws, '..', 'script-mission.yaml');
    await writeFile(
      file,
      [
        'goal: Submitted by the shell example',
        `workspace: ${ws}`,
        'tasks:',
        ...simTask('hello', '- write: {path: hello.txt, content: "hi"}'),
      ].join('\n'),
    );
    const env = { ...process.env, FLOTILLA_API_TOKEN: TOKEN };
    const run = await execa('sh', [SUBMIT_SH, file, api], { env, reject: false, timeout: 120_000 });
    expect(run.exitCode, run.stderr).toBe(0);
    const lines = run.stdout.trim().split('\n');
    const events = lines.slice(0, -1).map((line) => JSON.parse(line) as { type: string; status?: string });
    expect(events[0]?.type).toBe('submitted');
    expect(events.at(-1)).toMatchObject({ type: 'mission', status: 'done' });
    const final = JSON.parse(lines.at(-1) ?? '{}') as MissionStatusJson;
    expect(final.status).toBe('done');
    expect(run.stderr).toMatch(new RegExp(`^submit\\.sh: mission ${final.id} submitted$`, 'm'));

    // Refused: exit 2 with the board's problems; a wrong token too.
    const invalid = join(ws, '..', 'script-invalid.yaml');
    await writeFile(invalid, 'goal: g\ntasks: []\n');
    const refused = await execa('sh', [SUBMIT_SH, invalid, api], { env, reject: false });
    expect(refused.exitCode).toBe(2);
    expect(refused.stderr).toMatch(/^submit\.sh: the board answered 422: .*"code":"mission\/invalid"/);
    const wrong = await execa('sh', [SUBMIT_SH, file, api], {
      env: { ...env, FLOTILLA_API_TOKEN: 'wrong' },
      reject: false,
    });
    expect(wrong.exitCode).toBe(2);
    expect(wrong.stderr).toContain('the board answered 401');
  });

  it('refuses a missing or wrong token with 401 and a Bearer challenge, storing nothing', async () => {
    const before = await storedKeys();
    const body = JSON.stringify({ goal: 'g', workspace: '/tmp', tasks: [] });
    const missing = await post('/missions', body, 'application/json', {});
    expect(missing.status).toBe(401);
    expect(missing.headers.get('www-authenticate')).toBe('Bearer realm="flotilla"');
    expect((await errorOf(missing)).code).toBe('api/unauthorized');
    const wrong = await post('/missions', body, 'application/json', { Authorization: `Bearer ${TOKEN}x` });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('www-authenticate')).toBe('Bearer realm="flotilla", error="invalid_token"');
    expect(await errorOf(wrong)).toEqual({ code: 'api/unauthorized', message: 'the bearer token is wrong' });
    for (const path of ['/missions', '/missions/nope', '/missions/nope/events', '/no-such-route']) {
      expect((await fetch(`${api}${path}`)).status, path).toBe(401);
    }
    expect(await storedKeys()).toBe(before);
    // The document says how to authenticate, so it needs no token.
    expect((await fetch(`${api}/openapi.json`)).status).toBe(200);
  });

  it('answers 413 beyond 1 MiB, 415 for other types, 400 for malformed JSON', async () => {
    const big = `goal: big\n# ${'x'.repeat(MAX_BODY_BYTES)}\n`;
    const tooLarge = await post('/missions', big, 'application/yaml');
    expect(tooLarge.status).toBe(413);
    expect((await errorOf(tooLarge)).code).toBe('api/body-too-large');

    const text = await post('/missions', 'goal: g', 'text/plain');
    expect(text.status).toBe(415);
    expect((await errorOf(text)).message).toMatch(
      /^expected Content-Type application\/json, application\/yaml/,
    );
    const latin = await post('/missions', '{}', 'application/json; charset=latin1');
    expect(latin.status).toBe(415);

    const broken = await post('/missions', '{"goal": "g",', 'application/json');
    expect(broken.status).toBe(400);
    const error = await errorOf(broken);
    expect(error.code).toBe('api/malformed-json');
    expect(error.message).toMatch(/^the body is not JSON: /);
  });

  it('answers 422 with the line and column of malformed YAML', async () => {
    const response = await post(
      '/missions',
      'goal: g\ntasks:\n  - id: a\n   title: [unclosed\n',
      'application/yaml',
    );
    expect(response.status).toBe(422);
    const error = await errorOf(response);
    expect(error.code).toBe('mission/invalid');
    expect(error.problems?.[0]).toMatchObject({
      path: '',
      line: 4,
      message: expect.stringMatching(/^invalid YAML: /),
    });
    expect(error.problems?.[0]?.column).toEqual(expect.any(Number));
    expect(error.problems?.[0]).not.toHaveProperty('file');
  });

  it('answers 422 with every problem of an invalid mission, by JSON path or by line', async () => {
    const before = await storedKeys();
    const mission = {
      goal: 'invalid over HTTP',
      workspace: 'relative/ws',
      tasks: [
        { id: 'a', title: 'A', exit_criteria: ['true'], timeout: 'soon' },
        { id: 'b', title: 'B', exit_criteria: ['true'], depends_on: ['nope'] },
      ],
    };
    const response = await post('/missions', JSON.stringify(mission), 'application/json');
    expect(response.status).toBe(422);
    const error = await errorOf(response);
    expect(error.message).toBe('invalid mission (3 problems)');
    expect(error.problems).toEqual(
      expect.arrayContaining([
        { path: 'tasks[0].timeout', message: "expected a duration like 90s, 10m or 1h30m, got 'soon'" },
        { path: 'tasks[1].depends_on[0]', message: "unknown task 'nope' (known: a)" },
        {
          path: 'workspace',
          message: expect.stringMatching(/^expected an absolute path or a URL .* got 'relative\/ws'$/),
        },
      ]),
    );
    // The same mission as YAML: the same problems, placed by line.
    const yaml = await post(
      '/missions',
      'goal: g\ntasks:\n  - {id: a, title: A, exit_criteria: [x]}\n',
      'text/yaml',
    );
    expect(yaml.status).toBe(422);
    expect((await errorOf(yaml)).problems).toEqual([
      {
        path: 'workspace',
        line: 1,
        column: 1,
        message: expect.stringMatching(/got nothing \(which means \.\)$/),
      },
    ]);
    expect(await storedKeys()).toBe(before);
  });

  it('answers 404 for an unknown mission on every mission route', async () => {
    for (const [method, path] of [
      ['GET', '/missions/no-such-mission'],
      ['GET', '/missions/no-such-mission/events'],
      ['POST', '/missions/no-such-mission/cancel'],
      ['GET', '/missions/..%2F..%2Fetc'],
    ] as const) {
      const response = await fetch(`${api}${path}`, { method, headers: auth });
      expect(response.status, `${method} ${path}`).toBe(404);
      expect((await errorOf(response)).code).toBe('mission/not-found');
    }
  });

  it('cancels a running mission, and says 409 once it has finished', async () => {
    const ws = await workspace();
    const mission = {
      goal: 'cancel me over HTTP',
      workspace: ws,
      tasks: [
        {
          id: 'slow',
          title: 'Slow',
          critic: false,
          exit_criteria: ['true'],
          description: `Wait.\n\n${sim('- sleep: 60s')}`,
        },
        { id: 'after', title: 'After', critic: false, exit_criteria: ['true'], depends_on: ['slow'] },
      ],
    };
    const submitted = await post('/missions', JSON.stringify(mission), 'application/json');
    expect(submitted.status).toBe(201);
    const { id } = (await submitted.json()) as { id: string };
    // Cancel once the slow task runs, so a running CLI is stopped.
    for (let i = 0; i < 300; i++) {
      if ((await cluster.client.status(id)).tasks[0]?.status === 'running') break;
      await sleep(100);
    }
    const cancelled = await post(`/missions/${id}/cancel`, '', 'application/json');
    expect(cancelled.status).toBe(200);
    expect(await cancelled.json()).toEqual({ cancelled: ['after'], running: ['slow'] });
    const final = await cluster.client.wait(id, { pollMs: 200, timeoutMs: 60_000 });
    expect(final.status).toBe('cancelled');
    const again = await post(`/missions/${id}/cancel`, '', 'application/json');
    expect(again.status).toBe(409);
    expect(await errorOf(again)).toEqual({
      code: 'mission/finished',
      message: `mission ${id} is already cancelled; nothing to cancel`,
    });
  });

  it('answers a task paused with needs_input, which resumes and completes', async () => {
    const ws = await workspace();
    const yaml = [
      'goal: A question over HTTP',
      `workspace: ${ws}`,
      'defaults: { backoff: 200ms }',
      'tasks:',
      ...simTask(
        'paint',
        [
          '- needs_input:',
          '    questions: ["Which colour?"]',
          '- write: {path: paint.txt, content: "red"}',
        ].join('\n'),
      ),
    ].join('\n');
    const { id } = (await (await post('/missions', yaml, 'application/yaml')).json()) as { id: string };
    for (let i = 0; i < 600; i++) {
      if ((await cluster.client.status(id)).tasks[0]?.status === 'needs_input') break;
      await sleep(100);
    }
    const answer = JSON.stringify({ task: 'paint', text: 'red' });
    const answered = await post(`/missions/${id}/answer`, answer, 'application/json');
    expect(answered.status).toBe(200);
    expect(await answered.json()).toEqual({ task: 'paint', attempt: 2 });
    const final = await cluster.client.wait(id, { pollMs: 200, timeoutMs: 120_000 });
    expect(final.status).toBe('done');

    const late = await post(`/missions/${id}/answer`, answer, 'application/json');
    expect(late.status).toBe(409);
    expect(await errorOf(late)).toEqual({
      code: 'task/not-waiting',
      message: 'task paint is completed, not waiting for an answer',
    });
    const unknown = await post(
      `/missions/${id}/answer`,
      JSON.stringify({ task: 'nope', text: 'x' }),
      'application/json',
    );
    expect(unknown.status).toBe(404);
    expect((await errorOf(unknown)).code).toBe('task/not-found');
    const bad = await post(`/missions/${id}/answer`, JSON.stringify({ task: 'paint' }), 'application/json');
    expect(bad.status).toBe(422);
    expect((await errorOf(bad)).problems?.map((p) => p.path)).toEqual(['text']);
    expect((await post(`/missions/${id}/answer`, 'task: paint', 'application/yaml')).status).toBe(415);
  });

  it('approves and rejects a task held by approve: human, as flotilla approve does', async () => {
    const ws = await workspace();
    const yaml = [
      'goal: An approval over HTTP',
      `workspace: ${ws}`,
      'defaults: { backoff: 200ms, max_attempts: 2 }',
      'tasks:',
      ...simTask('schema', '- write: {path: schema.txt, content: "v1"}', ['    approve: human']),
    ].join('\n');
    const { id } = (await (await post('/missions', yaml, 'application/yaml')).json()) as { id: string };
    const heldAt = async (attempt: number) => {
      for (let i = 0; i < 600; i++) {
        const t = (await cluster.client.status(id)).tasks[0];
        if (t?.status === 'awaiting_approval' && t.attempts === attempt) return;
        await sleep(100);
      }
      throw new Error(`attempt ${attempt} never held`);
    };
    await heldAt(1);
    const rejected = await post(
      `/missions/${id}/approve`,
      JSON.stringify({ task: 'schema', reject: 'name it schema.sql', by: 'ci-bot' }),
      'application/json',
    );
    expect(rejected.status).toBe(200);
    expect(await rejected.json()).toEqual({ task: 'schema', attempt: 1, verdict: 'reject', by: 'ci-bot' });
    await heldAt(2);
    const approved = await post(
      `/missions/${id}/approve`,
      JSON.stringify({ task: 'schema' }),
      'application/json',
    );
    expect(await approved.json()).toEqual({
      task: 'schema',
      attempt: 2,
      verdict: 'approve',
      by: 'the HTTP API',
    });
    const final = await cluster.client.wait(id, { pollMs: 200, timeoutMs: 120_000 });
    expect(final.status).toBe('done');
    expect(final.tasks[0]).toMatchObject({
      attempts: 2,
      approval: { verdict: 'approved', by: 'the HTTP API' },
    });
    const audit = await cluster.client.store.getAudit(id);
    expect(audit.some((e) => e.message.includes('rejected by ci-bot: name it schema.sql'))).toBe(true);

    const late = await post(
      `/missions/${id}/approve`,
      JSON.stringify({ task: 'schema' }),
      'application/json',
    );
    expect(late.status).toBe(409);
    expect((await errorOf(late)).message).toBe('task schema is completed, not waiting for approval');
    const bad = await post(
      `/missions/${id}/approve`,
      JSON.stringify({ task: 'schema', reject: ' ' }),
      'application/json',
    );
    expect(bad.status).toBe(422);
    expect((await errorOf(bad)).problems?.map((p) => p.path)).toEqual(['reject']);
  });

  it('closes the Redis reader of an event stream when its client goes away', async () => {
    const ws = await workspace();
    const mission = {
      goal: 'follow and leave',
      workspace: ws,
      tasks: [
        {
          id: 'wait',
          title: 'Wait',
          critic: false,
          exit_criteria: ['true'],
          description: sim('- sleep: 30s'),
        },
      ],
    };
    const { id } = (await (await post('/missions', JSON.stringify(mission), 'application/json')).json()) as {
      id: string;
    };
    const leaving = new AbortController();
    const stream = await fetch(`${api}/missions/${id}/events`, { headers: auth, signal: leaving.signal });
    const reader = stream.body?.getReader();
    await reader?.read();
    const readers = async () =>
      (String(await boardRedis.client('LIST')).match(/name=flotilla-events/g) ?? []).length;
    // The handler opens its reader a moment after the stream's first line.
    for (let i = 0; i < 100 && (await readers()) === 0; i++) await sleep(50);
    expect(await readers()).toBe(1);
    leaving.abort();
    for (let i = 0; i < 100 && (await readers()) > 0; i++) await sleep(50);
    expect(await readers()).toBe(0);
    await post(`/missions/${id}/cancel`, '', 'application/json');
  });

  it('accepts a mission of 1,000 tasks, stored and its roots enqueued (no host on that prefix)', async () => {
    const prefix = uniquePrefix();
    const client = await FlotillaClient.connect({
      config: cluster.config,
      redisUrl: cluster.redis.url,
      prefix,
    });
    const lone = await createBoardServer({
      redis: boardRedis,
      prefix,
      host: '127.0.0.1',
      port: 0,
      api: { client, token: TOKEN },
    });
    try {
      // Ten chains of a hundred: ten roots, each task after the one before it.
      const tasks = Array.from({ length: 1000 }, (_, i) => ({
        id: `t${i}`,
        title: `Task ${i}`,
        exit_criteria: ['true'],
        depends_on: i % 100 === 0 ? [] : [`t${i - 1}`],
      }));
      const body = JSON.stringify({ goal: 'a thousand tasks', workspace: await workspace(), tasks });
      const submitted = await fetch(`${lone.url}/api/v1/missions`, {
        method: 'POST',
        body,
        headers: { ...auth, 'Content-Type': 'application/json' },
      });
      expect(submitted.status).toBe(201);
      const { id } = (await submitted.json()) as { id: string };
      const status = (await (
        await fetch(`${lone.url}/api/v1/missions/${id}`, { headers: auth })
      ).json()) as MissionStatusJson;
      expect(status.tasks).toHaveLength(1000);
      const counts = new Map<string, number>();
      for (const task of status.tasks) counts.set(task.status, (counts.get(task.status) ?? 0) + 1);
      expect(Object.fromEntries(counts)).toEqual({ queued: 10, pending: 990 });
    } finally {
      await lone.close();
      await client.close();
    }
  });
});

describe('the board API without a token, and with Redis gone', () => {
  let redis: RedisHandle;

  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  async function boardOn(host: string, extra: { user?: string; password?: string; token?: string } = {}) {
    const conn = await connectOrFail(redis.url);
    const client = await FlotillaClient.connect({ redisUrl: redis.url, prefix: uniquePrefix() });
    const server = await createBoardServer({
      redis: conn,
      prefix: uniquePrefix(),
      host,
      port: 0,
      ...extra,
      api: { client, token: extra.token },
    });
    const port = new URL(server.url).port;
    return {
      server,
      api: `http://127.0.0.1:${port}/api/v1`,
      async close() {
        await server.close();
        await client.close();
        await conn.quit().catch(() => conn.disconnect());
      },
    };
  }

  it('refuses every request beyond loopback without FLOTILLA_API_TOKEN, as the board does without credentials', async () => {
    const open = await boardOn('0.0.0.0', { user: 'ops', password: 'board-pw' });
    try {
      expect(open.server.api?.kind).toBe('off');
      const response = await fetch(`${open.api}/missions`);
      expect(response.status).toBe(403);
      const body = (await response.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe('api/disabled');
      expect(body.error.message).toMatch(/0\.0\.0\.0, beyond loopback, and FLOTILLA_API_TOKEN is not set/);
      // The board's credentials do not open the API either.
      const basic = `Basic ${Buffer.from('ops:board-pw').toString('base64')}`;
      expect((await fetch(`${open.api}/missions`, { headers: { Authorization: basic } })).status).toBe(403);
    } finally {
      await open.close();
    }
  });

  it('on loopback without a token answers only requests addressed to a loopback name', async () => {
    const local = await boardOn('127.0.0.1');
    try {
      expect(local.server.api?.kind).toBe('open');
      expect((await fetch(`${local.api}/missions`)).status).toBe(200);
      // A foreign name (DNS rebinding) or a foreign page is refused.
      const { request } = await import('node:http');
      const status = await new Promise<number>((resolve, reject) => {
        const req = request(`${local.api}/missions`, { headers: { Host: 'attacker.example:80' } }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('error', reject);
        req.end();
      });
      expect(status).toBe(403);
      const crossSite = await fetch(`${local.api}/missions/x/cancel`, {
        method: 'POST',
        headers: { Origin: 'https://attacker.example' },
      });
      expect(crossSite.status).toBe(403);
    } finally {
      await local.close();
    }
  });

  it('answers 503 in one line when Redis is unreachable', async () => {
    const board = await boardOn('127.0.0.1', { token: TOKEN });
    const headers = { Authorization: `Bearer ${TOKEN}` };
    try {
      await redis.kill();
      const status = await fetch(`${board.api}/missions/some-mission`, { headers });
      expect(status.status).toBe(503);
      const error = ((await status.json()) as { error: { code: string; message: string } }).error;
      expect(error.code).toBe('redis/unreachable');
      expect(error.message).toMatch(/^lost the connection to Redis \(.+\)$/);
      expect(error.message).not.toContain('\n');
      const submitted = await fetch(`${board.api}/missions`, {
        method: 'POST',
        headers: { ...headers, 'Content-Type': 'application/json' },
        body: JSON.stringify({
          goal: 'g',
          workspace: '/tmp',
          tasks: [{ id: 'a', title: 'A', exit_criteria: ['true'] }],
        }),
      });
      expect(submitted.status).toBe(503);
    } finally {
      await redis.restart();
      await board.close();
    }
  });
});
