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
 * those whose lock is gone). Checks run every stalledInterval, at most one per interval across
 * all hosts. `--locks default` uses flotilla's defaults (src/shared/config.ts: lock 10 s, renewal
 * and stalled check every 2.5 s); `--locks 5000:1000:1250` sets the lock, the stalled interval
 * and the renewal (default: the lock, and a quarter of the lock); `30000:30000:15000` is the
 * setting flotilla had before (BullMQ's own rule: renew at half the lock).
 *
 * Before each kill, the Redis load of the two hosts (one of them running the job) is read from
 * INFO commandstats over a few seconds: scripts (EVALSHA: lock renewals, stalled checks, …) and
 * every command including those inside scripts, per second.
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FlotillaClient } from '../dist/client.js';
import { listHosts } from '../dist/shared/store/registry.js';
import { measureFalseStall } from './lib/false-stall.js';
import { benchConfig, missionYaml } from './lib/flotilla.js';
import { killTagged, newTag, TAG_VARIABLE, taggedProcesses } from './lib/procs.js';
import { commandCalls, diffCalls, startRedis } from './lib/redis.js';
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

export const defaults = { runs: 2, locks: ['default', '30000:30000:15000'] };

/** How long the Redis load is sampled before each kill. */
const LOAD_WINDOW_MS = 10_000;

/** FLOTILLA_* variables for a setting; none for the defaults, so the hosts use their own. */
function lockEnv(setting) {
  if (setting.lockMs === undefined) return {};
  return {
    FLOTILLA_LOCK_MS: String(setting.lockMs),
    FLOTILLA_STALLED_INTERVAL_MS: String(setting.stalledMs),
    FLOTILLA_LOCK_RENEW_MS: String(setting.renewMs),
  };
}

function startWorker(config, redisUrl, dir, hostId, setting, tag) {
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
        ...lockEnv(setting),
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

async function measureOnce(redis, setting) {
  const redisUrl = redis.url;
  const dir = await mkdtemp(join(tmpdir(), 'flotilla-bench-recovery-'));
  const config = benchConfig(redisUrl, dir, lockEnv(setting));
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
    const before = await commandCalls(redis.admin);
    await sleep(LOAD_WINDOW_MS);
    const calls = diffCalls(before, await commandCalls(redis.admin));
    const perSecond = (n) => n / (LOAD_WINDOW_MS / 1000);
    // The benchmark's own polling (client.store.getTask, listHosts) is not in the window: it sleeps.
    const load = {
      scripts: perSecond((calls.evalsha ?? 0) + (calls.eval ?? 0)),
      commands: perSecond(
        Object.entries(calls).reduce((sum, [name, n]) => sum + (name === 'info' ? 0 : n), 0),
      ),
    };
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
      Math.max(180_000, (setting.lockMs ?? 30_000) * 4),
    );
    const seconds = (now() - t0) / 1000;
    await client.cancel(id).catch(() => undefined);
    return { seconds, load };
  } finally {
    await Promise.all(workers.map(stopWorker));
    await killTagged(tagA);
    await killTagged(tagB);
    await client.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/** `--blocks 5000,9000`: event-loop blocks of those lengths against the default lock settings. */
async function falseStalls(blocks, log) {
  const settings = { lockMs: 10_000, renewMs: 2_500, stalledMs: 2_500 };
  log(
    `false stalls: the event loop of the host running a job blocked for a while, defaults (lock 10 s, renew 2.5 s, check 2.5 s); a stall is expected past lock − renew = 7.5 s`,
  );
  const redis = await startRedis();
  const results = [];
  try {
    for (const blockMs of blocks) {
      const result = await measureFalseStall(redis.url, settings, blockMs);
      results.push(result);
      log(
        `  blocked ${fmt(blockMs / 1000, 1)} s: ${result.redelivered ? 'handed to the other host (false stall)' : 'kept'}${result.lockLost ? ', lock renewal failed' : ''}`,
      );
    }
  } finally {
    await redis.stop();
  }
  return results;
}

export async function run(options, log = console.log) {
  putSimOnPath();
  if (options.blocks) return { falseStalls: await falseStalls(options.blocks, log) };
  const runs = options.runs ?? defaults.runs;
  const locks = options.locks ?? defaults.locks;
  log(
    `recovery: kill -9 of the host running a task → the task running on a second host; ${runs} run(s) per lock setting`,
  );
  const results = [];
  const redis = await startRedis();
  try {
    for (const entry of locks) {
      const isDefault = String(entry) === 'default';
      const [lock, stalled, renew] = isDefault ? [] : String(entry).split(':').map(Number);
      const setting = isDefault
        ? {}
        : { lockMs: lock, stalledMs: stalled || lock, renewMs: renew || Math.round(lock / 4) };
      const label = isDefault
        ? 'defaults (lock 10 s, renew 2.5 s, check 2.5 s)'
        : `lock ${lock / 1000} s, renew ${setting.renewMs / 1000} s, check ${setting.stalledMs / 1000} s`;
      const seconds = [];
      const scripts = [];
      const commands = [];
      for (let r = 0; r < runs; r++) {
        const measured = await measureOnce(redis, setting);
        seconds.push(measured.seconds);
        scripts.push(measured.load.scripts);
        commands.push(measured.load.commands);
        log(
          `  ${label} run ${r + 1}: ${fmt(measured.seconds, 1)} s; Redis before the kill: ${fmt(measured.load.scripts, 1)} scripts/s, ${fmt(measured.load.commands, 1)} commands/s`,
        );
      }
      // Lock gone: lock − renewal … lock after the kill; then up to one more check interval.
      const lockMs = setting.lockMs ?? 10_000;
      const renewMs = setting.renewMs ?? lockMs / 4;
      const stalledMs = setting.stalledMs ?? 2_500;
      const expected = [(lockMs - renewMs) / 1000, (lockMs + stalledMs) / 1000];
      results.push({
        ...setting,
        label,
        seconds: summarize(seconds),
        raw: seconds,
        expected,
        scriptsPerSecond: summarize(scripts),
        commandsPerSecond: summarize(commands),
      });
    }
  } finally {
    await redis.stop();
  }
  log('');
  printTable(
    [
      [
        'setting',
        'kill -9 → running elsewhere',
        'bounds: lock − renew … lock + interval',
        'Redis, 2 hosts, 1 job running: scripts/s',
        'commands/s',
      ],
      ...results.map((r) => [
        r.label,
        fmtStats(r.seconds, 1, 's'),
        `${fmt(r.expected[0], 1)}–${fmt(r.expected[1], 1)} s`,
        fmtStats(r.scriptsPerSecond, 1),
        fmtStats(r.commandsPerSecond, 1),
      ]),
    ],
    log,
  );
  return results;
}
