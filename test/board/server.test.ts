// biome-ignore-all lint/performance/useDomNodeTextContent: Playwright's innerText is the rendered text a person reads, which is what these tests check.
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Queue } from 'bullmq';
import type { Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type BoardServer, createBoardServer } from '../../src/board/server.js';
import { board } from '../../src/cli/commands/board.js';
import type { Io } from '../../src/cli/io.js';
import type { AuditEvent } from '../../src/shared/audit.js';
import { loadConfig } from '../../src/shared/config.js';
import { attemptJobId, type TaskState } from '../../src/shared/contracts.js';
import { exitCodeFor, FlotillaError } from '../../src/shared/errors.js';
import type { MissionSpec, TaskSpec } from '../../src/shared/mission.js';
import { connectOrFail, type RedisClient } from '../../src/shared/redis.js';
import { type AuditInput, MissionStore } from '../../src/shared/store/mission-store.js';
import { type HostInfo, publishHost } from '../../src/shared/store/registry.js';
import { formatSummary } from '../../src/workers/stages/finalize/summary.js';
import { launchChromium } from '../helpers/chromium.js';
import { taskSpec } from '../helpers/factories.js';
import { getFreePort } from '../helpers/free-port.js';
import { leakCheck, trackConnection } from '../helpers/leak-check.js';
import { ROOT } from '../helpers/paths.js';
import { type RedisHandle, startRedis } from '../helpers/redis-server.js';

const EVIL_TITLE = 'Set up the <script>window.__xss = 1; alert(1)</script> project';

let server: RedisHandle;
const cleanups: (() => Promise<void>)[] = [];

beforeAll(async () => {
  server = await startRedis();
});

afterAll(async () => {
  await server?.stop();
});

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await leakCheck({ redis: server });
});

async function connect(): Promise<RedisClient> {
  const redis = trackConnection(await connectOrFail(server.url));
  cleanups.push(async () => {
    await redis.quit();
  });
  return redis;
}

async function startBoard(
  options: Omit<Parameters<typeof createBoardServer>[0], 'host' | 'port'>,
): Promise<BoardServer> {
  const boardServer = await createBoardServer({ host: '127.0.0.1', port: 0, ...options });
  cleanups.push(() => boardServer.close());
  return boardServer;
}

function task(id: string, title: string, dependsOn: string[], exitCriteria: string[]): TaskSpec {
  return taskSpec({
    id,
    title,
    description: `Do ${title}.`,
    languages: ['typescript'],
    dependsOn,
    exitCriteria,
    maxAttempts: 2,
  });
}

const SPEC: MissionSpec = {
  goal: 'Add a stats module to the calculator',
  workspace: '/srv/repos/calc',
  agents: {},
  tasks: [
    task('setup', EVIL_TITLE, [], ['npm run build']),
    task('mean', 'Add mean()', ['setup'], ['npm test -- mean', 'npx tsc --noEmit']),
    task('median', 'Add median()', ['setup'], ['npm test -- median']),
    task('stats-cli', 'Wire stats into the CLI', ['mean'], ['npm test -- cli']),
    task('docs', 'Document the stats module', ['mean', 'median'], ['test -s docs/stats.md']),
  ],
};
const EDGES = SPEC.tasks.flatMap((t) => t.dependsOn.map((d) => `${d}->${t.id}`)).sort();

interface AttemptScript {
  task: string;
  attempt: number;
  host: string;
  cli: string;
  seconds: number;
  criteria: [command: string, exit: number][];
  critic?: { score: number; verdict: 'approve' | 'reject'; issues: string[] };
  action: 'approve' | 'retry' | 'fail';
  patch: Partial<TaskState>;
}

const SCRIPT: AttemptScript[] = [
  {
    task: 'setup',
    attempt: 1,
    host: 'host-a',
    cli: 'claude-code',
    seconds: 41,
    criteria: [['npm run build', 0]],
    critic: { score: 9, verdict: 'approve', issues: [] },
    action: 'approve',
    patch: { score: 9, cli: 'claude-code', host: 'host-a', costUsd: 0.42 },
  },
  {
    task: 'mean',
    attempt: 1,
    host: 'host-b',
    cli: 'codex',
    seconds: 63,
    criteria: [
      ['npm test -- mean', 1],
      ['npx tsc --noEmit', 0],
    ],
    action: 'retry',
    patch: { error: 'exit criteria failed', cli: 'codex', host: 'host-b' },
  },
  {
    task: 'mean',
    attempt: 2,
    host: 'host-b',
    cli: 'codex',
    seconds: 55,
    criteria: [
      ['npm test -- mean', 0],
      ['npx tsc --noEmit', 0],
    ],
    critic: { score: 8, verdict: 'approve', issues: ['mean([]) returns NaN; document it'] },
    action: 'approve',
    patch: { score: 8, error: null, cli: 'codex', host: 'host-b', costUsd: 0.31 },
  },
  {
    task: 'median',
    attempt: 1,
    host: 'host-a',
    cli: 'claude-code',
    seconds: 38,
    criteria: [['npm test -- median', 0]],
    critic: { score: 5, verdict: 'reject', issues: ['even-length input returns the upper middle'] },
    action: 'retry',
    patch: { score: 5, error: 'critic score 5 below 7', cli: 'claude-code', host: 'host-a' },
  },
  {
    task: 'median',
    attempt: 2,
    host: 'host-a',
    cli: 'claude-code',
    seconds: 47,
    criteria: [['npm test -- median', 1]],
    action: 'fail',
    patch: {
      error: 'out of attempts: exit criteria failed',
      cli: 'claude-code',
      host: 'host-a',
      costUsd: 0.2,
    },
  },
  {
    task: 'stats-cli',
    attempt: 1,
    host: 'host-b',
    cli: 'codex',
    seconds: 29,
    criteria: [['npm test -- cli', 0]],
    critic: { score: 7, verdict: 'approve', issues: [] },
    action: 'approve',
    patch: { score: 7, cli: 'codex', host: 'host-b', costUsd: 0.12 },
  },
];

function gateEvent(step: AttemptScript): AuditEvent {
  if (step.action === 'approve')
    return { kind: 'gate', action: 'approve', ...(step.critic ? { score: step.critic.score } : {}) };
  if (step.action === 'retry')
    return { kind: 'gate', action: 'retry', delayMs: 5_000, reason: step.patch.error ?? '' };
  return { kind: 'gate', action: 'fail', reason: step.patch.error ?? '' };
}

/** A finished mission's state, written the way the workers write it: transitions through settle(), plus the audit. */
async function seedFinishedMission(store: MissionStore, id: string): Promise<void> {
  let clock = Date.parse('2025-03-14T09:00:00.000Z');
  const now = () => {
    clock += 7_000;
    return new Date(clock).toISOString();
  };
  await store.createMission({
    id,
    spec: SPEC,
    repo: SPEC.workspace,
    baseCommit: 'abc123',
    roots: ['setup'],
    now: now(),
  });
  const audit = (entry: Omit<AuditInput, 'at'>) => store.audit(id, { at: now(), ...entry });
  await audit({
    taskId: '',
    attempt: 0,
    stage: 'mission',
    event: { kind: 'mission', action: 'submitted', tasks: SPEC.tasks.length, repo: SPEC.workspace },
  });
  for (const step of SCRIPT) {
    const ref = { taskId: step.task, attempt: step.attempt };
    await audit({
      ...ref,
      stage: 'route',
      event: {
        kind: 'route',
        attempt: step.attempt,
        queue: 'dispatch.code_implementation',
        how: 'exact',
        reason: 'exact capability match',
      },
    });
    await audit({
      ...ref,
      stage: 'run',
      host: step.host,
      cli: step.cli,
      event: {
        kind: 'run',
        cli: step.cli,
        cliName: step.cli,
        exitCode: 0,
        timedOut: false,
        durationMs: step.seconds * 1000,
        resultStatus: 'success',
        resultSource: 'file',
        warnings: [],
        rolledBack: [],
      },
    });
    const passed = step.criteria.every(([, exit]) => exit === 0);
    await audit({
      ...ref,
      stage: 'verify',
      host: step.host,
      event: {
        kind: 'verify',
        passed,
        criteria: step.criteria.map(([command, exitCode]) => ({
          command,
          exitCode,
          timedOut: false,
          tail: exitCode === 0 ? 'ok' : `FAIL ${command}\nexpected 2, received 2.5`,
        })),
      },
    });
    if (step.critic) {
      const { score, verdict, issues } = step.critic;
      await audit({
        ...ref,
        stage: 'critic',
        host: step.host,
        cli: 'gemini',
        event: {
          kind: 'critic',
          cli: 'gemini',
          cliName: 'Gemini CLI',
          score,
          verdict,
          issues,
          selfReview: false,
          exitCode: 0,
        },
        files: { 'review.md': `Looks fine overall.\n\n\`\`\`json\n${JSON.stringify(step.critic)}\n\`\`\`\n` },
      });
    }
    if (step.patch.costUsd) await store.addCost(id, step.patch.costUsd);
    const outcome = await store.settle(id, step.task, step.attempt, step.action, step.patch, now());
    expect(outcome.applied).toBe(true);
    await audit({ ...ref, stage: 'gate', host: step.host, cli: step.cli, event: gateEvent(step) });
  }
  const status = await store.status(id);
  expect(status.status).toBe('partial');
  await store.setMetaField(id, 'summary', formatSummary(status, { repo: SPEC.workspace, spawned: 2 }));
}

const FACTS = {
  os: 'linux',
  arch: 'x64',
  tools: { git: '2.39.5', node: '20.20.2', docker: null },
  labels: { gpu: 'a100', region: 'eu' },
};

function host(hostId: string, capabilities: string[]): HostInfo {
  const now = new Date().toISOString();
  return {
    hostId,
    hostname: `${hostId}.internal`,
    pid: 4242,
    startedAt: now,
    heartbeatAt: now,
    slots: 4,
    running: 1,
    internal: false,
    clis: [{ cli: 'claude-code', displayName: 'Claude Code', version: '2.1.197', capabilities, order: 0 }],
    disabled: [],
    coolingDown: [],
  };
}

const basic = (user: string, password: string) =>
  `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

describe('board: mission view in a real browser', () => {
  it('shows each host with its machine, tools and labels on the hosts page', async () => {
    const redis = await connect();
    const prefix = server.prefix();
    await publishHost(
      redis,
      prefix,
      { ...host('build-linux-1', ['code_implementation', 'testing']), facts: FACTS },
      60_000,
    );
    await publishHost(
      redis,
      prefix,
      {
        ...host('mac-mini-2', ['code_implementation']),
        facts: {
          os: 'darwin',
          arch: 'arm64',
          tools: { git: '2.45.0', node: '22.4.0', xcodebuild: '16.1' },
          labels: { region: 'us' },
        },
      },
      60_000,
    );
    const boardServer = await startBoard({ redis, prefix });
    const context = await browser!.newContext({ viewport: { width: 1280, height: 400 } });
    cleanups.push(() => context.close());
    const page = await context.newPage();
    await page.goto(`${boardServer.url}/hosts`);
    expect(await page.locator('tr[data-host="mac-mini-2"] td.host-facts').innerText()).toContain(
      'darwin/arm64',
    );
    expect(await page.locator('tr[data-host="build-linux-1"] td.host-facts').innerText()).toContain(
      'docker absent',
    );
    const shot =
      process.env.UPDATE_SCREENSHOT === '1'
        ? join(ROOT, 'docs', 'board-hosts.png')
        : await tempFile('hosts.png');
    await page.screenshot({ path: shot, fullPage: true });
  });

  let browser: Browser | undefined;

  beforeAll(async () => {
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
  });

  it('shows the goal, every task with its status, scores, a failed criterion and the task graph', async () => {
    const redis = await connect();
    const prefix = server.prefix();
    const store = new MissionStore(redis, prefix);
    const id = 'stats-module-3f9a2c';
    await seedFinishedMission(store, id);
    // A real job behind one of the attempt links, to follow it into Bull Board.
    const verifyQueue = new Queue('verify', { connection: redis, prefix });
    cleanups.push(() => verifyQueue.close());
    const verifyJobId = attemptJobId(id, 'median', 2, 'verify');
    await verifyQueue.add('verify', { missionId: id, taskId: 'median', attempt: 2 }, { jobId: verifyJobId });

    const boardServer = await startBoard({ redis, prefix });
    const context = await browser!.newContext({ viewport: { width: 1280, height: 900 } });
    cleanups.push(() => context.close());
    const page = await context.newPage();
    const dialogs: string[] = [];
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });

    const response = await page.goto(`${boardServer.url}/missions/${id}`);
    expect(response?.status()).toBe(200);
    expect(await page.locator('h1.goal').innerText()).toBe(SPEC.goal);
    await expect.poll(() => page.locator('.facts .badge.status').first().innerText()).toBe('partial');

    const expected: Record<string, string> = {
      setup: 'completed',
      mean: 'completed',
      median: 'failed',
      'stats-cli': 'completed',
      docs: 'skipped',
    };
    for (const t of SPEC.tasks) {
      const section = page.locator(`section.task[data-task="${t.id}"]`);
      expect(await section.locator('h3.task-title').innerText()).toContain(t.title);
      expect(await section.locator('h3.task-title .badge.status').innerText()).toBe(expected[t.id]);
      const row = page.locator(`table.tasks tr[data-task="${t.id}"]`);
      expect(await row.innerText()).toContain(t.title);
      expect(await row.locator('.badge.status').innerText()).toBe(expected[t.id]);
    }

    // The title with a <script> in it reads as text and ran nothing.
    expect(await page.locator('section.task[data-task="setup"] h3.task-title').innerText()).toContain(
      '<script>window.__xss',
    );
    expect(await page.evaluate(() => (globalThis as { __xss?: number }).__xss)).toBeUndefined();
    expect(dialogs).toEqual([]);

    // Scores: in the table and from the critic; the rejected review with its issue.
    expect(await page.locator('table.tasks tr[data-task="mean"]').innerText()).toMatch(/\b8\b/);
    const median = page.locator('section.task[data-task="median"]');
    expect(await median.locator('.attempt[data-attempt="1"] .score').innerText()).toBe('score 5/10');
    expect(await median.locator('.attempt[data-attempt="1"]').innerText()).toContain(
      'even-length input returns the upper middle',
    );
    // An issue with "; " in it stays one issue.
    expect(
      await page
        .locator('section.task[data-task="mean"] .attempt[data-attempt="2"] ul.issues li')
        .allInnerTexts(),
    ).toEqual(['mean([]) returns NaN; document it']);
    // A failed criterion: ✗, the command, the exit code.
    const failed = median.locator('.attempt[data-attempt="2"] li.criterion[data-passed="false"]');
    expect(await failed.innerText()).toMatch(/✗\s+npm test -- median\s+exit 1/);
    expect(
      await page.locator('section.task[data-task="mean"] .attempt[data-attempt="2"] li.criterion').count(),
    ).toBe(2);
    expect(await median.locator('.error').first().innerText()).toContain('out of attempts');
    expect(await page.locator('pre.summary').innerText()).toContain('Mission partial');

    // The graph: one node per task, one arrow per dependency, coloured by status.
    const nodes = page.locator('svg.graph a.node');
    expect(await nodes.count()).toBe(SPEC.tasks.length);
    for (const t of SPEC.tasks) {
      expect(await page.locator(`svg.graph a.node[data-task="${t.id}"]`).getAttribute('data-status')).toBe(
        expected[t.id],
      );
    }
    const edges = await page
      .locator('svg.graph path.edge')
      .evaluateAll((paths) =>
        paths.map((p) => `${p.getAttribute('data-from')}->${p.getAttribute('data-to')}`),
      );
    expect(edges.sort()).toEqual(EDGES);
    const box = await page.locator('svg.graph').boundingBox();
    expect(box?.width).toBeGreaterThan(500);

    const shot =
      process.env.UPDATE_SCREENSHOT === '1' ? join(ROOT, 'docs', 'board.png') : await tempFile('board.png');
    await mkdir(dirname(shot), { recursive: true });
    await page.screenshot({ path: shot, fullPage: true });

    // The attempt's verify link opens the job in Bull Board.
    const link = median.locator('.attempt[data-attempt="2"] .jobs a', { hasText: 'verify' });
    expect(await link.getAttribute('href')).toBe(`/queues/queue/verify/${verifyJobId}`);
    await link.click();
    await expect.poll(() => page.url()).toContain(`/queues/queue/verify/${verifyJobId}`);
    await page.getByText(verifyJobId).first().waitFor({ timeout: 20_000 });

    // The list page and the JSON.
    await page.goto(`${boardServer.url}/`);
    const listRow = page.locator(`table.missions tr[data-mission="${id}"]`);
    expect(await listRow.innerText()).toContain(SPEC.goal);
    expect(await listRow.innerText()).toMatch(/3\/5/);
    const json = (await (await fetch(`${boardServer.url}/missions/${id}.json`)).json()) as {
      status: string;
      tasks: unknown[];
    };
    expect(json.status).toBe('partial');
    expect(json.tasks).toHaveLength(5);
    expect((await fetch(`${boardServer.url}/missions/no-such-mission`)).status).toBe(404);
  });
});

async function tempFile(name: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'flotilla-board-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return join(dir, name);
}

describe('board: HTTP', () => {
  it('requires Basic auth on every route when credentials are set', async () => {
    const redis = await connect();
    const boardServer = await startBoard({
      redis,
      prefix: server.prefix(),
      user: 'ops',
      password: 'correct horse',
    });
    expect(boardServer.authRequired).toBe(true);
    for (const path of ['/', '/missions/x', '/hosts', '/metrics', '/queues', '/queues/api/queues']) {
      const denied = await fetch(`${boardServer.url}${path}`);
      expect(denied.status, path).toBe(401);
      expect(denied.headers.get('www-authenticate')).toMatch(/^Basic realm=/);
      const wrong = await fetch(`${boardServer.url}${path}`, {
        headers: { authorization: basic('ops', 'nope') },
      });
      expect(wrong.status, path).toBe(401);
    }
    for (const path of ['/', '/hosts', '/metrics', '/queues', '/queues/api/queues']) {
      const ok = await fetch(`${boardServer.url}${path}`, {
        headers: { authorization: basic('ops', 'correct horse') },
      });
      expect(ok.status, path).toBe(200);
    }
  });

  it('refuses to listen beyond loopback without credentials (usage error, exit 2)', async () => {
    const redis = await connect();
    const attempt = createBoardServer({ redis, prefix: server.prefix(), host: '0.0.0.0', port: 0 });
    await expect(attempt).rejects.toBeInstanceOf(FlotillaError);
    await expect(attempt).rejects.toMatchObject({
      code: 'usage',
      message: expect.stringMatching(/FLOTILLA_BOARD_USER/),
    });
    expect(exitCodeFor('usage')).toBe(2);

    // The command decides before it connects: no Redis is needed to be told.
    const config = loadConfig({ REDIS_URL: 'redis://127.0.0.1:1' });
    await expect(board({ port: 0, host: '0.0.0.0' }, config, silentIo())).rejects.toMatchObject({
      code: 'usage',
    });
  });

  it('serves Bull Board at /queues with every flotilla queue, including capabilities live hosts add', async () => {
    const redis = await connect();
    const prefix = server.prefix();
    await publishHost(redis, prefix, host('host-x', ['code_implementation', 'data_migration']), 60_000);
    const boardServer = await startBoard({ redis, prefix });
    const ui = await fetch(`${boardServer.url}/queues`);
    expect(ui.status).toBe(200);
    expect(await ui.text()).toContain('<div id="root"');
    const api = await fetch(`${boardServer.url}/queues/api/queues`);
    expect(api.status).toBe(200);
    const body = (await api.json()) as { queues: { name: string; readOnlyMode: boolean }[] };
    const names = body.queues.map((q) => q.name);
    for (const name of [
      'mission',
      'verify',
      'critic',
      'dispatch.internal',
      'dispatch.code_implementation',
      'dispatch.documentation',
    ]) {
      expect(names).toContain(name);
    }
    expect(body.queues.every((q) => q.readOnlyMode)).toBe(true);
    // The host's own capability term appears once the board has looked at the registry.
    expect(names).toContain('dispatch.data_migration');
    // Writes from another site are refused, whatever the mode.
    const foreign = await fetch(`${boardServer.url}/queues/api/queues/verify/pause`, {
      method: 'PUT',
      headers: { origin: 'https://evil.example' },
    });
    expect(foreign.status).toBe(403);
  });

  it('lists live hosts and exposes Prometheus metrics', async () => {
    const redis = await connect();
    const prefix = server.prefix();
    const store = new MissionStore(redis, prefix);
    await seedFinishedMission(store, 'metrics-mission-1');
    await publishHost(redis, prefix, host('host-<b>', ['code_implementation']), 60_000);
    const queue = new Queue('dispatch.testing', { connection: redis, prefix });
    cleanups.push(() => queue.close());
    await queue.add('run', { n: 1 }, { jobId: 'm.t.a1.run' });
    const boardServer = await startBoard({ redis, prefix });

    const hostsPage = await (await fetch(`${boardServer.url}/hosts`)).text();
    expect(hostsPage).toContain('host-&lt;b&gt;');
    expect(hostsPage).toContain('Claude Code');
    // The machine, as tasks' requires match it; a host of an older version reports none.
    expect(hostsPage).toContain('not reported');
    await publishHost(redis, prefix, { ...host('host-<b>', ['code_implementation']), facts: FACTS }, 60_000);
    const withFacts = await (await fetch(`${boardServer.url}/hosts`)).text();
    expect(withFacts).toContain('<strong>linux/x64</strong>');
    expect(withFacts).toMatch(/node <span class="muted">20\.20\.2<\/span>/);
    expect(withFacts).toContain('docker absent');
    expect(withFacts).toContain('<code>gpu=a100</code>');

    const metrics = await fetch(`${boardServer.url}/metrics`);
    expect(metrics.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    const lines = (await metrics.text()).split('\n');
    for (const line of [
      'flotilla_queue_jobs{queue="dispatch.testing",state="waiting"} 1',
      'flotilla_queue_jobs{queue="mission",state="waiting"} 0',
      'flotilla_missions{status="partial"} 1',
      'flotilla_tasks{status="completed"} 3',
      'flotilla_tasks{status="failed"} 1',
      'flotilla_tasks{status="skipped"} 1',
      'flotilla_gate_decisions_total{action="approve"} 3',
      'flotilla_gate_decisions_total{action="retry"} 2',
      'flotilla_gate_decisions_total{action="fail"} 1',
      'flotilla_gate_pass_ratio 0.5',
      'flotilla_attempt_duration_seconds_count{cli="claude-code"} 3',
      'flotilla_attempt_duration_seconds_sum{cli="codex"} 147',
      'flotilla_cost_usd{cli="claude-code"} 0.62',
      'flotilla_hosts 1',
      'flotilla_host_slots{host="host-<b>",use="total"} 4',
    ]) {
      expect(lines).toContain(line);
    }
  });

  it('runs as `flotilla board` until signalled', async () => {
    const port = await getFreePort();
    const config = loadConfig({
      REDIS_URL: server.url,
      FLOTILLA_PREFIX: server.prefix(),
      LOG_LEVEL: 'silent',
    });
    const out: string[] = [];
    const before = new Set(process.listeners('SIGTERM'));
    const running = board({ port, host: '127.0.0.1' }, config, { ...silentIo(), out: (t) => out.push(t) });
    await expect.poll(() => out.join('\n'), { timeout: 15_000 }).toContain(`http://127.0.0.1:${port}/`);
    expect((await fetch(`http://127.0.0.1:${port}/`)).status).toBe(200);
    // Call the command's own listener rather than signal the test process, which others listen to.
    const ours = process.listeners('SIGTERM').filter((listener) => !before.has(listener));
    expect(ours).toHaveLength(1);
    ours[0]?.('SIGTERM');
    expect(await running).toBe(0);
    await expect(fetch(`http://127.0.0.1:${port}/`)).rejects.toThrow();
  });
});

function silentIo(): Io {
  return { out: () => {}, err: () => {}, isTTY: false };
}
