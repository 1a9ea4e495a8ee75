// biome-ignore-all lint/performance/useDomNodeTextContent: Playwright's innerText is the rendered text a person reads.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BoardServer, createBoardServer } from '../../src/board/server.js';
import { launchChromium } from '../helpers/chromium.js';
import { indent, sim, startCluster, type TestCluster } from '../helpers/flotilla.js';
import { ROOT } from '../helpers/paths.js';
import { until } from '../helpers/worker-process.js';

/**
 * The board's task detail shows a running task's output as its CLI prints it, in Chromium: the
 * tail grows while the run goes on, and gives way to the attempt once the run is over.
 */

describe('board: a running task live', () => {
  let cluster: TestCluster;
  let board: BoardServer;
  let browser: Browser;
  let dir: string;

  beforeAll(async () => {
    cluster = await startCluster({ hosts: 1 });
    board = await createBoardServer({
      redis: cluster.client.redis,
      prefix: cluster.config.prefix,
      host: '127.0.0.1',
      port: 0,
    });
    browser = await launchChromium();
    dir = await mkdtemp(join(tmpdir(), 'flotilla-live-tail-'));
  });
  afterAll(async () => {
    await browser?.close();
    await board?.close();
    await cluster?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('grows the tail of the running CLI in the task detail, until the run is over', async () => {
    const id = await cluster.submit(
      [
        'goal: Watch a task run',
        'workspace: ./ws',
        'defaults: { max_attempts: 1, timeout: 120s }',
        'tasks:',
        '  - id: build',
        '    title: Build the thing',
        '    critic: false',
        '    exit_criteria: ["test -f build.txt"]',
        '    description: |',
        '      Build it.',
        '',
        indent(
          sim(
            [
              '- print: {text: "compiling module\\n", times: 40, every: 250ms}',
              '- write: {path: build.txt, content: "built"}',
            ].join('\n'),
          ),
        ),
      ].join('\n'),
    );
    await until('build to run', async () =>
      (await cluster.client.status(id)).tasks[0]?.status === 'running' ? true : undefined,
    );
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(`${board.url}/missions/${id}#task=build`);
    const tail = page.locator('#detail pre.live-tail');
    await tail.waitFor();
    const count = async () => ((await tail.innerText()).match(/compiling module/g) ?? []).length;
    await expect.poll(count, { timeout: 30_000 }).toBeGreaterThan(2);
    const early = await count();
    await expect.poll(count, { timeout: 30_000 }).toBeGreaterThan(early + 3);
    const shot =
      process.env.UPDATE_SCREENSHOT === '1'
        ? join(ROOT, 'docs', 'board-live-tail.png')
        : join(dir, 'live.png');
    await page.locator('#detail').screenshot({ path: shot });
    // Once the run is over the task moves on and its detail shows the attempt instead.
    await expect.poll(() => tail.count(), { timeout: 60_000 }).toBe(0);
    await page.close();
    expect((await cluster.client.wait(id, { pollMs: 200, timeoutMs: 60_000 })).status).toBe('done');
  }, 240_000);
});
