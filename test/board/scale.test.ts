// biome-ignore-all lint/performance/useDomNodeTextContent: Playwright's innerText is the rendered text a person reads, which is what these tests check.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { MISSING_CLI, seedHosts, seedMission, UNSERVED_CAPABILITY } from '../../bench/lib/seed-mission.js';
import { type BoardServer, createBoardServer } from '../../src/board/server.js';
import { TASK_STATUSES, type TaskState } from '../../src/shared/contracts.js';
import type { MissionSpec } from '../../src/shared/mission.js';
import { connectOrFail, type RedisClient } from '../../src/shared/redis.js';
import { MissionStore } from '../../src/shared/store/mission-store.js';
import { publishHost } from '../../src/shared/store/registry.js';
import { ROOT } from '../helpers/flotilla.js';
import { leakCheck, trackConnection } from '../helpers/leak-check.js';
import { type RedisHandle, startRedis } from '../helpers/redis-server.js';

/**
 * The mission page at 30, 300 and 10,000 tasks, in headless Chromium at 1400 × 900. Each mission
 * is written into mission state through the store (bench/lib/seed-mission.js) rather than run,
 * and what the page shows is checked against the stored task states, read independently here.
 * With UPDATE_SCREENSHOT=1 the first screen of each is saved as docs/board-<n>.png.
 */

const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-sync'];
const VIEWPORT = { width: 1400, height: 900 };
/** The page shows this many tasks by name per attention kind (overview-view.ts ATTENTION_SHOWN). */
const SHOWN = 8;

let server: RedisHandle;
let browser: Browser;
let redis: RedisClient;
const cleanups: (() => Promise<void>)[] = [];

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium`);
  server = await startRedis();
  redis = trackConnection(await connectOrFail(server.url));
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
});

afterAll(async () => {
  await browser?.close();
  await redis?.quit();
  await leakCheck({ redis: server });
  await server?.stop();
});

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Seeded {
  id: string;
  spec: MissionSpec;
  store: MissionStore;
  states: Record<string, TaskState>;
  board: BoardServer;
}

async function seed(n: number): Promise<Seeded> {
  const prefix = server.prefix();
  const store = new MissionStore(redis, prefix);
  const id = `scale-${n}`;
  const now = Date.now();
  const spec = await seedMission(store, { id, tasks: n, now });
  for (const host of seedHosts(now)) await publishHost(redis, prefix, host, 120_000);
  const board = await createBoardServer({ redis, prefix, host: '127.0.0.1', port: 0 });
  cleanups.push(() => board.close());
  return { id, spec, store, states: await store.getTasks(id), board };
}

async function open(seeded: Seeded, hash = ''): Promise<Page> {
  const context = await browser.newContext({ viewport: VIEWPORT });
  cleanups.push(() => context.close());
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  cleanups.push(async () => expect(errors).toEqual([]));
  const response = await page.goto(`${seeded.board.url}/missions/${seeded.id}${hash}`);
  expect(response?.status()).toBe(200);
  await page.locator('#mission[data-ready="1"]').waitFor();
  return page;
}

function idsWith(seeded: Seeded, status: string): string[] {
  return seeded.spec.tasks.filter((t) => seeded.states[t.id]?.status === status).map((t) => t.id);
}

/** The page is no wider than the window: nothing scrolls sideways. */
async function expectNoSidewaysScroll(page: Page): Promise<void> {
  const [scrollWidth, innerWidth] = (await page.evaluate(
    '[document.documentElement.scrollWidth, window.innerWidth]',
  )) as [number, number];
  expect(scrollWidth).toBeLessThanOrEqual(innerWidth);
}

async function checkOverview(page: Page, seeded: Seeded): Promise<void> {
  const n = seeded.spec.tasks.length;
  for (const status of TASK_STATUSES) {
    const expected = idsWith(seeded, status).length;
    expect(await page.locator(`li.count[data-status="${status}"] .n`).innerText(), status).toBe(
      String(expected),
    );
  }
  const finished = ['completed', 'failed', 'skipped', 'cancelled'].reduce(
    (sum, s) => sum + idsWith(seeded, s).length,
    0,
  );
  expect(await page.locator('.progress-count strong').innerText()).toBe(`${finished}/${n}`);
  expect(await page.locator('.facts .hosts').innerText()).toMatch(/3 busy, 1 idle · 9\/16 slots/);

  // The attention list: every failed, waiting and retrying task counted, the first ones named.
  for (const [kind, ids] of [
    ['failed', idsWith(seeded, 'failed')],
    ['needs_input', idsWith(seeded, 'needs_input')],
    ['retrying', idsWith(seeded, 'retrying')],
  ] as const) {
    const group = page.locator(`.att-group[data-kind="${kind}"]`);
    if (ids.length === 0) {
      expect(await group.count(), kind).toBe(0);
      continue;
    }
    expect(await group.getAttribute('data-count'), kind).toBe(String(ids.length));
    expect(
      await group.locator('li.att').evaluateAll((els) => els.map((e) => e.getAttribute('data-task'))),
    ).toEqual(ids.slice(0, SHOWN));
  }
  for (const id of idsWith(seeded, 'failed').slice(0, SHOWN)) {
    expect(await page.locator(`li.att[data-task="${id}"]`).innerText()).toContain(
      seeded.states[id]?.error ?? '?',
    );
  }
  // Unservable: the tasks that need a capability or a CLI no seeded host has, with the reason.
  const unservable = seeded.spec.tasks
    .filter((t) => t.capability === UNSERVED_CAPABILITY || t.cli === MISSING_CLI)
    .map((t) => t.id);
  const listed = await page
    .locator('.att-group[data-kind="unservable"] li.att')
    .evaluateAll((els) => els.flatMap((e) => (e.getAttribute('data-tasks') ?? '').split(' ')));
  expect(listed.sort()).toEqual(unservable.sort());
  const reasons = await page.locator('.att-group[data-kind="unservable"]').innerText();
  expect(reasons).toContain(`no live host serves ${UNSERVED_CAPABILITY}`);
  expect(reasons).toContain(`pinned CLI '${MISSING_CLI}' is on no live host`);

  // The attention list starts on the first screen, and nothing scrolls sideways at 1400 px.
  // Read in one step in the page: the live poll replaces the overview every 2 s.
  const top = (await page.evaluate(
    "document.querySelector('section.attention').getBoundingClientRect().top",
  )) as number;
  expect(top).toBeLessThan(VIEWPORT.height / 2);
  await expectNoSidewaysScroll(page);
}

/** A task in the middle with dependencies and dependents, to draw around. */
function middleTask(seeded: Seeded): { id: string; deps: string[]; dependents: string[] } {
  const tasks = seeded.spec.tasks;
  for (let i = Math.floor(tasks.length / 2); i < tasks.length; i++) {
    const task = tasks[i];
    if (!task) break;
    const dependents = tasks.filter((t) => t.dependsOn.includes(task.id)).map((t) => t.id);
    if (task.dependsOn.length > 0 && dependents.length > 0)
      return { id: task.id, deps: [...task.dependsOn], dependents };
  }
  throw new Error('no task with dependencies and dependents');
}

async function checkNeighbourhood(page: Page, seeded: Seeded): Promise<void> {
  const chosen = middleTask(seeded);
  await page.evaluate(`location.hash = ${JSON.stringify(`task=${encodeURIComponent(chosen.id)}`)}`);
  const drawing = page.locator(`#detail .nbhd[data-task="${chosen.id}"] svg.graph`);
  await drawing.waitFor();
  const nodes = await drawing
    .locator('a.node')
    .evaluateAll((els) => els.map((e) => e.getAttribute('data-task')));
  for (const id of [chosen.id, ...chosen.deps, ...chosen.dependents]) expect(nodes).toContain(id);
  expect(await drawing.locator(`a.node.selected`).getAttribute('data-task')).toBe(chosen.id);
  const edges = await drawing
    .locator('path.edge')
    .evaluateAll((els) => els.map((e) => `${e.getAttribute('data-from')}->${e.getAttribute('data-to')}`));
  for (const dep of chosen.deps) expect(edges).toContain(`${dep}->${chosen.id}`);
  for (const next of chosen.dependents) expect(edges).toContain(`${chosen.id}->${next}`);
  // Zoomed to fit: the drawing is no wider than its box.
  const fit = (await page.evaluate(`(() => {
    const box = document.querySelector('#detail .nbhd-box');
    return [box.querySelector('svg').getBoundingClientRect().width, box.getBoundingClientRect().width];
  })()`)) as [number, number];
  expect(fit[0]).toBeLessThanOrEqual(fit[1]);
  expect(await page.locator('#detail section.task h3.task-title').innerText()).toContain(chosen.id);
  // One level each way: the task, its dependencies and its dependents, nothing more.
  await page.locator('#detail button.levels[data-levels="1"]').click();
  await page.locator('#detail .nbhd[data-levels="1"]').waitFor();
  const near = await page
    .locator('#detail .nbhd svg.graph a.node')
    .evaluateAll((els) => els.map((e) => e.getAttribute('data-task')));
  expect(near.sort()).toEqual([...new Set([chosen.id, ...chosen.deps, ...chosen.dependents])].sort());
  // A dependency, from the detail's facts, opens that task's detail in its place.
  const dep = chosen.deps[0] ?? '';
  await page.locator(`#detail section.task .facts a`, { hasText: dep }).first().click();
  await page.locator(`#detail .nbhd[data-task="${dep}"] svg.graph a.node.selected`).waitFor();
  expect(page.url()).toContain(`#task=${dep}`);
  await expectNoSidewaysScroll(page);
}

async function checkGrid(page: Page, seeded: Seeded): Promise<void> {
  const n = seeded.spec.tasks.length;
  expect(await page.locator('#grid i.c').count()).toBe(n);
  // The critical path is marked, and it is a chain: each task depends on the one before it.
  const path = await page
    .locator('#grid i.c.cp')
    .evaluateAll((els) => els.map((e) => Number(e.getAttribute('data-i'))));
  expect(path.length).toBeGreaterThan(1);
  const ids = path.sort((a, b) => a - b).map((i) => seeded.spec.tasks[i]?.id ?? '');
  for (let k = 1; k < ids.length; k++) {
    expect(seeded.spec.tasks.find((t) => t.id === ids[k])?.dependsOn).toContain(ids[k - 1]);
  }
  // Filtering by a status count shows exactly the tasks in it; searching finds one task by id.
  const failed = idsWith(seeded, 'failed').length;
  await page.locator('li.count[data-status="failed"] button').click();
  expect(await page.locator('#grid i.c:not(.hide)').count()).toBe(failed);
  await page.locator('#clear-filter').click();
  const one = seeded.spec.tasks[Math.floor(n / 3)]?.id ?? '';
  await page.locator('#search').fill(one);
  expect(await page.locator('#grid i.c:not(.hide)').count()).toBe(1);
  await page.locator('#search').fill('');
  // Grouped by capability: one row per capability, and the list view shows matching tasks as rows.
  await page.locator('#group').selectOption('capability');
  const labels = await page
    .locator('#grid .group .glabel')
    .evaluateAll((els) => els.map((e) => (e.firstChild?.textContent ?? '').trim()));
  expect(labels.sort()).toEqual([...new Set(seeded.spec.tasks.map((t) => t.capability))].sort());
  await page.locator('#view').selectOption('list');
  await page.locator('#search').fill('parser');
  const rows = await page
    .locator('#task-list tbody tr')
    .evaluateAll((els) => els.map((e) => e.textContent ?? ''));
  const parsers = seeded.spec.tasks.filter((t) => t.title.includes('parser')).length;
  expect(rows).toHaveLength(Math.min(500, parsers));
  expect(rows.every((r) => r.includes('parser'))).toBe(true);
  await page.locator('#view').selectOption('grid');
  await page.locator('#group').selectOption('depth');
  await page.locator('#search').fill('');
  // A square opens its task's detail.
  await page.locator(`#grid i.c[data-i="${Math.floor(n / 3)}"]`).click();
  await page.locator(`#detail .nbhd[data-task="${one}"]`).waitFor();
  expect(await page.locator('#grid i.c.sel').getAttribute('data-i')).toBe(String(Math.floor(n / 3)));
  await page.locator('#detail button.close').click();
  expect(await page.locator('#detail').isHidden()).toBe(true);
}

async function screenshot(page: Page, n: number): Promise<void> {
  if (process.env.UPDATE_SCREENSHOT !== '1') return;
  await page.evaluate('window.scrollTo(0, 0)');
  await page.screenshot({ path: join(ROOT, 'docs', `board-${n}.png`) });
}

describe('board: the mission page at any size', () => {
  it.each([30, 300, 10_000])(
    '%i tasks: counts, attention list, grid, neighbourhood, no sideways scroll',
    async (n) => {
      const seeded = await seed(n);
      const html = await (await fetch(`${seeded.board.url}/missions/${seeded.id}`)).text();
      expect(Buffer.byteLength(html)).toBeLessThan(1_000_000);
      const page = await open(seeded);
      await checkOverview(page, seeded);
      expect(await page.locator('svg.graph a.node').count()).toBe(n <= 50 ? n : 0);
      await checkGrid(page, seeded);
      await screenshot(page, n);
      await checkNeighbourhood(page, seeded);
      if (n === 300 && process.env.UPDATE_SCREENSHOT === '1') {
        await page.screenshot({ path: join(ROOT, 'docs', 'board-300-task.png') });
      }
    },
  );

  it('updates without reloading when a task moves on', async () => {
    const seeded = await seed(300);
    const page = await open(seeded);
    await page.evaluate('window.__same = true');
    const queued = idsWith(seeded, 'queued').find((id) => {
      const task = seeded.spec.tasks.find((t) => t.id === id);
      return task && task.capability !== UNSERVED_CAPABILITY && task.cli !== MISSING_CLI;
    });
    if (!queued) throw new Error('the seeded mission has no servable queued task');
    const running = idsWith(seeded, 'running').length;
    const attempt = seeded.states[queued]?.attempts ?? 1;
    expect(
      await seeded.store.mark(seeded.id, queued, attempt, 'running', { host: 'host-a', cli: 'codex' }),
    ).toBe(true);
    await seeded.store.emit({
      missionId: seeded.id,
      taskId: queued,
      attempt,
      type: 'task',
      status: 'running',
      message: 'running',
    });
    await expect
      .poll(() => page.locator('li.count[data-status="running"] .n').innerText(), { timeout: 20_000 })
      .toBe(String(running + 1));
    const index = seeded.spec.tasks.findIndex((t) => t.id === queued);
    await expect
      .poll(() => page.locator(`#grid i.c[data-i="${index}"]`).getAttribute('class'))
      .toContain('s-running');
    // The same document: a reload would have dropped the marker.
    expect(await page.evaluate('window.__same')).toBe(true);
  });
});
