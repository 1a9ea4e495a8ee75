/**
 * Recovery: the time from `kill -9` of a worker host to its task running again on another host.
 *
 * Host A (`node bin/flotilla.js worker`) takes a one-task mission whose agent sleeps for minutes.
 * Host B is started and registered before the kill, so its start-up is not counted. At t0 A is
 * killed with SIGKILL, and so is the agent's process group (a dead machine takes its processes
 * with it; a killed host process alone leaves its agent orphaned, see docs/BENCHMARKS.md). t1 is
 * when the task's state says it runs on B (B marks it running when its run job starts). BullMQ
 * moves the job back only after A's lock expires (lockDuration, renewed every half of it) and a
 * stalled-job check has seen the job twice (the first check marks active jobs, the next one moves
 * those whose lock is gone). Checks run every stalledInterval (flotilla: the lock duration unless
 * FLOTILLA_STALLED_INTERVAL_MS is set), at most one per interval across all hosts, so with the
 * defaults expect about two lock durations. `--locks 5000:1000` sets both.
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FlotillaClient } from '../dist/mission/client.js';
import { listHosts } from '../dist/store/registry.js';
import { benchConfig, missionYaml } from './lib/flotilla.js';
import { killTagged, newTag, TAG_VARIABLE, taggedProcesses } from './lib/procs.js';
import { startRedis } from './lib/redis.js';
import {
  FLOTILLA_BIN,
  fmt,
  fmtStats,
  now,
  printTable,
  putSimOnPath,
  SIM_ADAPTERS,
  sleep,
  summarize,
} from './lib/util.js';

export const defaults = { runs: 2, locks: [30_000, 5_000] };

function startWorker(config, redisUrl, dir, hostId, { lockMs, stalledMs }, tag) {
  const child = spawn(
    process.execPath,
    [FLOTILLA_BIN, 'worker', '--slots', '1', '--host-id', hostId, '--grace', '1'],
    {
      env: {
        ...process.env,
        REDIS_URL: redisUrl,
        FLOTILLA_PREFIX: config.prefix,
        FLOTILLA_HOME: join(dir, `home-${hostId}`),
        FLOTILLA_ADAPTERS: SIM_ADAPTERS,
        FLOTILLA_LOCK_MS: String(lockMs),
        FLOTILLA_STALLED_INTERVAL_MS: String(stalledMs),
        LOG_LEVEL: 'warn',
        [TAG_VARIABLE]: tag,
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr.on('data', (chunk) => {
    stderr = (stderr + chunk).slice(-4_000);
  });
  const exited = new Promise((done) => child.once('exit', done));
  return { child, hostId, exited, stderr: () => stderr };
}

async function waitFor(what, check, timeoutMs, pollMs = 50) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`recovery: timed out waiting for ${what}`);
    await sleep(pollMs);
  }
}

async function stopWorker(worker) {
  if (worker.child.exitCode !== null || worker.child.signalCode !== null) return;
  worker.child.kill('SIGTERM');
  const timer = setTimeout(() => worker.child.kill('SIGKILL'), 5_000);
  await worker.exited;
  clearTimeout(timer);
}

async function measureOnce(redisUrl, setting) {
  const { lockMs, stalledMs } = setting;
  const dir = await mkdtemp(join(tmpdir(), 'flotilla-bench-recovery-'));
  const config = benchConfig(redisUrl, dir, {
    FLOTILLA_LOCK_MS: String(lockMs),
    FLOTILLA_STALLED_INTERVAL_MS: String(stalledMs),
  });
  const client = await FlotillaClient.connect({ config, redisUrl });
  const workers = [];
  // Each host gets its own tag, so A's agent can be told from B's.
  const tagA = newTag();
  const tagB = newTag();
  try {
    const a = startWorker(config, redisUrl, dir, 'recover-a', setting, tagA);
    workers.push(a);
    const registered = (id) => async () =>
      (await listHosts(client.redis, config.prefix)).some((h) => h.hostId === id);
    await waitFor('host A to register', registered('recover-a'), 60_000, 100);
    await mkdir(join(dir, 'ws'));
    const file = join(dir, 'mission.yaml');
    await writeFile(
      file,
      missionYaml([{ id: 'victim', sleepMs: 10 * 60_000 }], 'recovery benchmark').replace(
        'timeout: 5m',
        'timeout: 20m',
      ),
    );
    const { id } = await client.submit(file);
    await waitFor(
      'the task to run on A',
      async () => (await client.store.getTask(id, 'victim'))?.host === 'recover-a',
      60_000,
    );
    // A's agent must be running (not just its checkout) before the crash, or nothing is lost.
    const isAgent = (p) => p.cmd.includes('flotilla-sim') && p.pid !== a.child.pid;
    await waitFor('A to start the agent', async () => (await taggedProcesses(tagA)).some(isAgent), 60_000);
    const b = startWorker(config, redisUrl, dir, 'recover-b', setting, tagB);
    workers.push(b);
    await waitFor('host B to register', registered('recover-b'), 60_000, 100);
    const t0 = now();
    a.child.kill('SIGKILL');
    // A dead machine takes its agent with it; a killed host process alone would leave it running.
    await killTagged(tagA);
    await a.exited;
    await waitFor(
      'the task to run on B',
      async () => {
        const state = await client.store.getTask(id, 'victim');
        return state?.host === 'recover-b' && state.status === 'running';
      },
      Math.max(180_000, lockMs * 4),
    );
    const seconds = (now() - t0) / 1000;
    await client.cancel(id).catch(() => undefined);
    return seconds;
  } finally {
    await Promise.all(workers.map(stopWorker));
    await killTagged(tagA);
    await killTagged(tagB);
    await client.close();
    await rm(dir, { recursive: true, force: true });
  }
}

export async function run(options, log = console.log) {
  putSimOnPath();
  const runs = options.runs ?? defaults.runs;
  const locks = options.locks ?? defaults.locks;
  log(
    `recovery: kill -9 of the host running a task → the task running on a second host; ${runs} run(s) per lock setting`,
  );
  const results = [];
  const redis = await startRedis();
  try {
    for (const entry of locks) {
      const [lock, stalled] = String(entry).split(':').map(Number);
      const setting = { lockMs: lock, stalledMs: stalled || lock };
      const label = `FLOTILLA_LOCK_MS=${setting.lockMs}${stalled ? ` FLOTILLA_STALLED_INTERVAL_MS=${stalled}` : ''}`;
      const seconds = [];
      for (let r = 0; r < runs; r++) {
        const s = await measureOnce(redis.url, setting);
        seconds.push(s);
        log(`  ${label} run ${r + 1}: ${fmt(s, 1)} s`);
      }
      // Lock gone: ½–1 lock after the kill; then up to two checks, at most one per interval.
      const expected = [setting.lockMs / 2000, (setting.lockMs + setting.stalledMs) / 1000];
      results.push({ ...setting, label, seconds: summarize(seconds), raw: seconds, expected });
    }
  } finally {
    await redis.stop();
  }
  log('');
  printTable(
    [
      ['setting', 'kill -9 → running elsewhere', 'bounds: ½ lock … lock + interval'],
      ...results.map((r) => [
        `${r.label}${r.lockMs === 30_000 && r.stalledMs === 30_000 ? ' (default)' : ''}`,
        fmtStats(r.seconds, 1, 's'),
        `${fmt(r.expected[0], 1)}–${fmt(r.expected[1], 1)} s`,
      ]),
    ],
    log,
  );
  return results;
}
