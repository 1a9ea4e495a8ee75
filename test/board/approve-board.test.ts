// biome-ignore-all lint/performance/useDomNodeTextContent: Playwright's innerText is the rendered text a person reads.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BoardServer, createBoardServer } from '../../src/board/server.js';
import type { MissionStatusJson } from '../../src/shared/contracts.js';
import { launchChromium } from '../helpers/chromium.js';
import { indent, sim, startCluster, type TestCluster } from '../helpers/flotilla.js';
import { ROOT } from '../helpers/paths.js';
import { until } from '../helpers/worker-process.js';

/**
 * `approve: human` from the board, in Chromium: a held task's view has Approve and Reject; a
 * rejection's words reach the retry's prompt, an approval merges the work and the mission ends.
 * Who decided is the board's user. The route takes no verdict from another origin or without a
 * reason to reject.
 */
const USER = 'alice';
const PASSWORD = 'board-password-for-the-test';

function held(status: MissionStatusJson, attempt: number): boolean {
  const t = status.tasks.find((x) => x.id === 'schema');
  return t?.status === 'awaiting_approval' && t.attempts === attempt;
}

describe('approve: human on the board', () => {
  let cluster: TestCluster;
  let board: BoardServer;
  let browser: Browser;
  let dir: string;

  beforeAll(async () => {
    cluster = await startCluster({ hosts: 1, env: { FLOTILLA_SECRET: 'board-approve-secret' } });
    board = await createBoardServer({
      redis: cluster.client.redis,
      prefix: cluster.config.prefix,
      host: '127.0.0.1',
      port: 0,
      user: USER,
      password: PASSWORD,
      verdicts: { secret: cluster.config.secret },
    });
    browser = await launchChromium();
    dir = await mkdtemp(join(tmpdir(), 'flotilla-approve-board-'));
  });
  afterAll(async () => {
    await browser?.close();
    await board?.close();
    await cluster?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('rejects with words the retry reads, then approves, from the task view', async () => {
    const id = await cluster.submit(
      [
        'goal: Approve from the board',
        'workspace: ./ws',
        'defaults: { max_attempts: 2, backoff: 200ms, timeout: 60s }',
        'tasks:',
        '  - id: schema',
        '    title: Write the schema',
        '    critic: false',
        '    approve: human',
        '    exit_criteria: ["test -f schema.sql"]',
        '    description: |',
        '      Write the schema.',
        '',
        indent(sim('- write: {path: schema.sql, content: "create table t (id int);"}')),
      ].join('\n'),
    );
    await until('schema held', async () => (held(await cluster.client.status(id), 1) ? true : undefined));

    const auth = `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}`;
    const verdictUrl = `${board.url}/missions/${id}/tasks/schema/verdict`;
    const post = (body: unknown, headers: Record<string, string> = {}) =>
      fetch(verdictUrl, {
        method: 'POST',
        headers: { authorization: auth, 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
      });
    expect((await post({ verdict: 'approve' }, { origin: 'http://evil.example' })).status).toBe(403);
    expect((await post({ verdict: 'reject', reason: '  ' })).status).toBe(400);
    expect((await post({ verdict: 'maybe' })).status).toBe(400);
    expect(
      (await fetch(verdictUrl, { method: 'POST', body: '{"verdict":"approve"}' })).status,
      'no credentials',
    ).toBe(401);
    expect(held(await cluster.client.status(id), 1)).toBe(true);

    const context = await browser.newContext({
      viewport: { width: 1280, height: 900 },
      httpCredentials: { username: USER, password: PASSWORD },
    });
    const page = await context.newPage();
    await page.goto(`${board.url}/missions/${id}`);
    const box = page.locator('section.task[data-task="schema"] .approval');
    await box.waitFor();
    expect(await box.innerText()).toContain("waiting for a person's approval");
    await box.locator('button[data-verdict="reject"]').click();
    expect(await box.locator('.verdict-result').innerText()).toContain('Say why first');
    await box.locator('input.reason').fill('name the table users');
    await box.locator('button[data-verdict="reject"]').click();
    await expect
      .poll(() => box.locator('.verdict-result').innerText())
      .toContain('rejected by alice (board)');

    await until('attempt 2 held', async () => (held(await cluster.client.status(id), 2) ? true : undefined));
    const prompts = (await cluster.client.store.getAudit(id)).filter(
      (e) => e.taskId === 'schema' && e.stage === 'run' && e.files?.['prompt.md'],
    );
    expect(prompts[1]?.files?.['prompt.md']).toContain('name the table users');

    await page.reload();
    await box.waitFor();
    const shot =
      process.env.UPDATE_SCREENSHOT === '1'
        ? join(ROOT, 'docs', 'board-approval.png')
        : join(dir, 'approval.png');
    await page.locator('section.task[data-task="schema"]').screenshot({ path: shot });
    await box.locator('button[data-verdict="approve"]').click();
    await expect
      .poll(() => box.locator('.verdict-result').innerText())
      .toContain('approved by alice (board)');
    const final = await cluster.client.wait(id, { pollMs: 200, timeoutMs: 120_000 });
    expect(final.status).toBe('done');
    expect(final.tasks[0]).toMatchObject({
      attempts: 2,
      approval: { verdict: 'approved', by: 'alice (board)' },
    });

    // Nothing waits now: the route says so instead of sending a verdict.
    const late = await post({ verdict: 'approve' });
    expect(late.status).toBe(409);
    expect(((await late.json()) as { message: string }).message).toContain('not waiting for approval');
    await context.close();
  }, 240_000);
});
