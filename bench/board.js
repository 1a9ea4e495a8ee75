/**
 * The mission page's cost at 30, 300 and 10,000 tasks (docs/BENCHMARKS.md, "The mission page").
 * Each mission is written into mission state mid-run by bench/lib/seed-mission.js (no host runs
 * anything), four hosts are published, and a board serves it on loopback. Measured, per size:
 *
 * - the store reads behind the page: the status object (`store.status`, what the page read before),
 *   the whole audit trail (also read before), the board's reader cold (spec parsed) and warm
 *   (spec cached, task states and hosts read again), one task's audit by the index;
 * - over HTTP: the page (bytes, and time, first request and warm), the live poll (changed and
 *   unchanged) and a task's detail with its neighbourhood;
 * - in headless Chromium when /usr/bin/chromium exists: from navigation to the task grid drawn.
 *
 *   node bench/run.js board --sizes 30,300,10000 --runs 5
 */
import { existsSync } from 'node:fs';
import { Redis } from 'ioredis';
import { MissionViewReader } from '../dist/board/read-mission-view.js';
import { createBoardServer } from '../dist/board/server.js';
import { MissionStore } from '../dist/shared/store/mission-store.js';
import { publishHost } from '../dist/shared/store/registry.js';
import { startRedis } from './lib/redis.js';
import { seedHosts, seedMission } from './lib/seed-mission.js';
import { fmt, printTable, summarize, uniquePrefix } from './lib/util.js';

const CHROMIUM = '/usr/bin/chromium';

async function timed(fn) {
  const start = performance.now();
  const value = await fn();
  return { ms: performance.now() - start, value };
}

/** Wall time and this process's CPU time per run: on a shared machine the second is the steadier. */
async function repeat(runs, fn) {
  const times = [];
  const cpu = [];
  let last;
  for (let i = 0; i < runs; i++) {
    const before = process.cpuUsage();
    const { ms, value } = await timed(fn);
    const used = process.cpuUsage(before);
    times.push(ms);
    cpu.push((used.user + used.system) / 1000);
    last = value;
  }
  return { stats: summarize(times), cpu: summarize(cpu), value: last };
}

async function get(url) {
  const response = await fetch(url);
  const body = await response.text();
  if (!response.ok) throw new Error(`${url}: ${response.status} ${body.slice(0, 200)}`);
  return Buffer.byteLength(body);
}

async function browserReady(url, runs) {
  if (!existsSync(CHROMIUM)) return null;
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox'] });
  try {
    const times = [];
    for (let i = 0; i < runs; i++) {
      const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
      const start = performance.now();
      await page.goto(url);
      await page.locator('#mission[data-ready="1"]').waitFor();
      times.push(performance.now() - start);
      await page.close();
    }
    return summarize(times);
  } finally {
    await browser.close();
  }
}

export async function run(options = {}) {
  const sizes = options.sizes ?? [30, 300, 10_000];
  const runs = options.runs ?? 5;
  const redis = await startRedis();
  const client = new Redis(redis.url);
  const results = [];
  try {
    for (const n of sizes) {
      const prefix = uniquePrefix('board');
      const store = new MissionStore(client, prefix);
      const id = `board-${n}`;
      const seeded = await timed(() => seedMission(store, { id, tasks: n }));
      for (const host of seedHosts()) await publishHost(client, prefix, host, 3_600_000);
      const middle = seeded.value.tasks[Math.floor(n / 2)].id;

      const status = await repeat(runs, () => store.status(id));
      const audit = await repeat(runs, () => store.getAudit(id));
      const taskAudit = await repeat(runs, () => store.getTaskAudit(id, middle));
      const cold = await repeat(runs, () => new MissionViewReader(store).read(id));
      const reader = new MissionViewReader(store);
      await reader.read(id);
      // Warm: the spec is cached; the states are read again as they are once the stream moves.
      let tick = Date.now();
      const warmReader = new MissionViewReader(store, () => (tick += 10_000));
      await warmReader.read(id);
      const warm = await repeat(runs, () => warmReader.read(id));

      const board = await createBoardServer({ redis: client, prefix, host: '127.0.0.1', port: 0 });
      try {
        const url = `${board.url}/missions/${id}`;
        const first = await timed(() => get(url));
        const page = await repeat(runs, () => get(url));
        const liveChanged = await repeat(runs, () => get(`${url}/live.json?since=none`));
        const liveSame = await repeat(runs, async () => {
          const event = await store.lastEventId(id);
          return get(`${url}/live.json?since=${encodeURIComponent(event)}`);
        });
        const detail = await repeat(runs, () => get(`${url}/tasks/${middle}?levels=2`));
        const browser = await browserReady(url, Math.min(runs, 3));
        results.push({
          tasks: n,
          seedMs: seeded.ms,
          auditEntries: audit.value.length,
          statusMs: status.stats,
          auditMs: audit.stats,
          taskAuditMs: taskAudit.stats,
          readColdMs: cold.stats,
          readWarmMs: warm.stats,
          readWarmCpuMs: warm.cpu,
          pageCpuMs: page.cpu,
          pageBytes: page.value,
          pageFirstMs: first.ms,
          pageMs: page.stats,
          liveBytes: liveChanged.value,
          liveMs: liveChanged.stats,
          liveSameBytes: liveSame.value,
          liveSameMs: liveSame.stats,
          detailBytes: detail.value,
          detailMs: detail.stats,
          browserMs: browser,
        });
      } finally {
        await board.close();
      }
    }
  } finally {
    client.disconnect();
    await redis.stop();
  }
  const kb = (bytes) => `${fmt(bytes / 1024, 1)} KiB`;
  const ms = (stats) => `${fmt(stats.median, 1)} (${fmt(stats.min, 1)}–${fmt(stats.max, 1)})`;
  console.log(`\nmedian (min–max) ms over ${runs} runs`);
  printTable([
    [
      'tasks',
      'page',
      'page first',
      'page warm',
      'page warm CPU',
      'live (changed)',
      'live (same)',
      'task detail',
      'in Chromium',
    ],
    ...results.map((r) => [
      r.tasks,
      kb(r.pageBytes),
      fmt(r.pageFirstMs, 1),
      ms(r.pageMs),
      ms(r.pageCpuMs),
      `${kb(r.liveBytes)}, ${ms(r.liveMs)}`,
      `${kb(r.liveSameBytes)}, ${ms(r.liveSameMs)}`,
      `${kb(r.detailBytes)}, ${ms(r.detailMs)}`,
      r.browserMs ? ms(r.browserMs) : '—',
    ]),
  ]);
  console.log('\nstore reads, median (min–max) ms');
  printTable([
    [
      'tasks',
      'status()',
      'getAudit() (entries)',
      'reader cold',
      'reader warm',
      'reader warm CPU',
      'getTaskAudit()',
    ],
    ...results.map((r) => [
      r.tasks,
      ms(r.statusMs),
      `${ms(r.auditMs)} (${r.auditEntries})`,
      ms(r.readColdMs),
      ms(r.readWarmMs),
      ms(r.readWarmCpuMs),
      ms(r.taskAuditMs),
    ]),
  ]);
  return results;
}
