/**
 * Scale, in three parts:
 *
 * 1. Submit + state only, at each size (default 1,000 and 10,000 independent tasks, so every task is
 *    a root and its flow is enqueued at submit, the heaviest case): validation time, submit time per
 *    task, Redis memory per task queued (INFO used_memory delta), and the cost of the per-task
 *    state operations at that size (a run's mark, the gate's settle, reading every task's state,
 *    the status object), and a host's git fetch when the mission repo holds that many attempt
 *    branches. A step whose cost grows with the mission makes the mission quadratic.
 * 2. End to end with worker processes (`node bin/flotilla.js worker`, the stand-in agent): N tasks
 *    (default 300) on W hosts; throughput, Redis memory per task while running (peak) and after
 *    completion with the retention settings (finished jobs are kept for 7 days, so nothing is freed).
 * 3. Many missions at once: M small missions (default 200 × 1 task), submitted 8 at a time, on the
 *    same worker processes; submit time, time until all are done, memory per mission.
 *
 * Everything runs on one 2-core machine, so the end-to-end sizes are what it can afford; they are
 * flags, and docs/BENCHMARKS.md says which sizes were run.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FlotillaClient } from '../dist/mission/client.js';
import { loadMissionOrThrow } from '../dist/mission/load.js';
import { attemptRef } from '../dist/shared/contracts.js';
import { listHosts } from '../dist/store/registry.js';
import { openRepoCache } from '../dist/workspace/repo-cache.js';
import { benchConfig, missionYaml, taskId } from './lib/flotilla.js';
import { killTagged, newTag, TAG_VARIABLE } from './lib/procs.js';
import { startRedis, usedMemory } from './lib/redis.js';
import {
  FLOTILLA_BIN,
  fmt,
  now,
  printTable,
  putSimOnPath,
  SIM_ADAPTERS,
  sleep,
  withDeadline,
} from './lib/util.js';

export const defaults = {
  sizes: [1_000, 10_000],
  e2e: 60,
  workers: 2,
  slots: 2,
  missions: 50,
  missionTasks: 1,
};

const KB = 1024;

async function timeOp(times, fn) {
  const started = now();
  for (let i = 0; i < times; i++) await fn(i);
  return (now() - started) / times;
}

/** Part 1: submit a mission of `size` independent tasks with no host running, then time state operations. */
async function submitOnly(size, log) {
  const redis = await startRedis();
  const dir = await mkdtemp(join(tmpdir(), 'flotilla-bench-scale-'));
  const config = benchConfig(redis.url, dir);
  const client = await FlotillaClient.connect({ config, redisUrl: redis.url });
  try {
    await mkdir(join(dir, 'ws'));
    const file = join(dir, 'mission.yaml');
    const tasks = Array.from({ length: size }, (_, i) => ({ id: taskId(i + 1) }));
    await writeFile(file, missionYaml(tasks, `scale ${size}`));
    const memBefore = await usedMemory(redis.admin);
    const t0 = now();
    const spec = await loadMissionOrThrow(file);
    const t1 = now();
    const { id } = await client.submit(spec);
    const t2 = now();
    const memAfter = await usedMemory(redis.admin);
    const store = client.store;
    const sample = Math.min(20, size);
    const ops = {
      mark: await timeOp(sample, (i) => store.mark(id, taskId(i + 1), 1, 'running', { host: 'bench' })),
      settle: await timeOp(sample, (i) =>
        store.settle(id, taskId(i + 1), 1, 'approve', {}, new Date().toISOString()),
      ),
      getTask: await timeOp(sample, (i) => store.getTask(id, taskId(i + 1))),
      getTasks: await timeOp(5, () => store.getTasks(id)),
      status: await timeOp(3, () => store.status(id)),
    };
    const fetch = await fetchCost(size);
    const result = {
      size,
      ...fetch,
      validateMs: t1 - t0,
      submitMs: t2 - t1,
      submitMsPerTask: (t2 - t1) / size,
      bytesPerTask: (memAfter - memBefore) / size,
      ops,
    };
    log(
      `  ${String(size).padStart(6)} tasks: validate ${fmt(result.validateMs / 1000, 2)} s, submit ${fmt(result.submitMs / 1000, 2)} s (${fmt(result.submitMsPerTask, 2)} ms/task), ${fmt(result.bytesPerTask / KB, 2)} KiB/task queued`,
    );
    return result;
  } finally {
    await client.close();
    await redis.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * A host's fetch from a mission repo holding `size` attempt refs (one per finished attempt, under
 * refs/flotilla/ where the run stage publishes them): a full `cache.fetch()` (branches only, so it
 * no longer sees them) against a fetch of the one attempt ref a stage needs, with the mission
 * repo's refs loose (as pushes leave them) and packed (after `git pack-refs`).
 */
async function fetchCost(size) {
  const dir = await mkdtemp(join(tmpdir(), 'flotilla-bench-fetch-'));
  try {
    const repo = join(dir, 'origin');
    const git = (args, input) =>
      execFileSync('git', args, { cwd: repo, input, stdio: ['pipe', 'pipe', 'ignore'] });
    await mkdir(repo);
    git(['init', '--quiet']);
    git([
      '-c',
      'user.name=bench',
      '-c',
      'user.email=bench@localhost',
      'commit',
      '--quiet',
      '--allow-empty',
      '-m',
      'init',
    ]);
    const head = git(['rev-parse', 'HEAD']).toString().trim();
    const refs = Array.from(
      { length: size },
      (_, i) => `create ${attemptRef('m', taskId(i + 1), 1)} ${head}\n`,
    );
    git(['update-ref', '--stdin'], refs.join(''));
    const cache = await openRepoCache({ repo, cacheDir: join(dir, 'cache') });
    let branch = 0;
    const time = async (fn) => {
      const samples = [];
      for (let i = 0; i < 3; i++) {
        // A run attempt pushes a new attempt ref; the next stage fetches.
        const name = attemptRef('m', `new${++branch}`, 1);
        git(['update-ref', name, head]);
        const t = now();
        await fn(name);
        samples.push(now() - t);
      }
      return samples.reduce((a, b) => a + b, 0) / samples.length;
    };
    const fullFetchMs = await time(() => cache.fetch());
    const branchFetchMs = await time((name) => cache.fetch([name]));
    git(['pack-refs', '--all']);
    const packedBranchFetchMs = await time((name) => cache.fetch([name]));
    return { fullFetchMs, branchFetchMs, packedBranchFetchMs };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** `flotilla worker` processes on the stand-in agent, sharing one FLOTILLA_HOME like hosts on one machine. */
async function startWorkers(config, redisUrl, count, slots, dir) {
  const children = [];
  const tag = newTag();
  for (let i = 0; i < count; i++) {
    const child = spawn(
      process.execPath,
      [FLOTILLA_BIN, 'worker', '--slots', String(slots), '--host-id', `scale-${i + 1}`, '--grace', '2'],
      {
        env: {
          ...process.env,
          REDIS_URL: redisUrl,
          FLOTILLA_PREFIX: config.prefix,
          FLOTILLA_HOME: join(dir, 'home'),
          FLOTILLA_ADAPTERS: SIM_ADAPTERS,
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
    children.push({ child, stderr: () => stderr });
  }
  const deadline = Date.now() + 60_000;
  const client = await FlotillaClient.connect({ config, redisUrl });
  try {
    while ((await listHosts(client.redis, config.prefix)).length < count) {
      if (Date.now() > deadline || children.some((c) => c.child.exitCode !== null)) {
        throw new Error(`worker processes did not register: ${children.map((c) => c.stderr()).join('\n')}`);
      }
      await sleep(200);
    }
  } finally {
    await client.close();
  }
  return {
    pids: children.map((c) => c.child.pid),
    async stop() {
      await Promise.all(
        children.map(
          ({ child }) =>
            new Promise((done) => {
              if (child.exitCode !== null) return done();
              child.once('exit', done);
              child.kill('SIGTERM');
              setTimeout(() => child.kill('SIGKILL'), 10_000).unref();
            }),
        ),
      );
      await killTagged(tag);
    },
  };
}

/** Samples used_memory every second until stopped; returns the peak. */
function sampleMemory(admin) {
  let peak = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      peak = Math.max(peak, await usedMemory(admin).catch(() => 0));
      await sleep(1_000);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return peak;
    },
  };
}

async function pool(items, width, fn) {
  const results = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) {
        const index = next++;
        results[index] = await fn(items[index], index);
      }
    }),
  );
  return results;
}

/** Parts 2 and 3 share one Redis and one set of worker processes. */
async function endToEnd(options, log) {
  const redis = await startRedis();
  const dir = await mkdtemp(join(tmpdir(), 'flotilla-bench-e2e-'));
  const config = benchConfig(redis.url, dir);
  const client = await FlotillaClient.connect({ config, redisUrl: redis.url });
  let workers;
  const out = {};
  try {
    workers = await startWorkers(config, redis.url, options.workers, options.slots, dir);
    log(`  ${options.workers} worker processes × ${options.slots} slots registered`);
    if (options.e2e > 0) {
      const n = options.e2e;
      await mkdir(join(dir, 'big', 'ws'), { recursive: true });
      const file = join(dir, 'big', 'mission.yaml');
      await writeFile(
        file,
        missionYaml(
          Array.from({ length: n }, (_, i) => ({ id: taskId(i + 1) })),
          `e2e ${n}`,
        ),
      );
      const base = await usedMemory(redis.admin);
      const memory = sampleMemory(redis.admin);
      const t0 = now();
      const { id } = await client.submit(file);
      const t1 = now();
      const status = await withDeadline(client.wait(id, { pollMs: 500 }), 60 * 60_000, 'e2e mission');
      const t2 = now();
      const peak = await memory.stop();
      const after = await usedMemory(redis.admin);
      if (status.status !== 'done') throw new Error(`e2e mission ended ${status.status}`);
      // Group commit at the gates: merge commits on the integration branch against the times the
      // branch moved (its reflog, creation excluded), and the largest number of merges one publish
      // carried.
      const ws = join(dir, 'big', 'ws');
      const branch = `refs/heads/flotilla/${id}`;
      const gitOut = (args) => execFileSync('git', ['-C', ws, ...args], { encoding: 'utf8' }).trim();
      const merges = Number(gitOut(['rev-list', '--merges', '--count', branch]));
      const tips = gitOut(['reflog', 'show', '--format=%H', branch]).split('\n').filter(Boolean);
      const perPublish = tips
        .slice(0, -1)
        .map((tip, i) => Number(gitOut(['rev-list', '--count', '--first-parent', `${tips[i + 1]}..${tip}`])));
      out.e2e = {
        merges,
        publishes: perPublish.length,
        largestBatch: Math.max(0, ...perPublish),
        tasks: n,
        submitS: (t1 - t0) / 1000,
        totalS: (t2 - t0) / 1000,
        tasksPerS: n / ((t2 - t0) / 1000),
        peakBytesPerTask: (peak - base) / n,
        afterBytesPerTask: (after - base) / n,
      };
      log(
        `  e2e: ${n} tasks in ${fmt(out.e2e.totalS, 1)} s (${fmt(out.e2e.tasksPerS, 2)} tasks/s; submit ${fmt(out.e2e.submitS, 2)} s); Redis ${fmt(out.e2e.peakBytesPerTask / KB, 1)} KiB/task at peak, ${fmt(out.e2e.afterBytesPerTask / KB, 1)} KiB/task after completion`,
      );
      log(
        `  e2e: ${merges} merge commits in ${perPublish.length} publishes of the integration branch (${fmt(merges / Math.max(1, perPublish.length), 2)} merges a publish, at most ${out.e2e.largestBatch})`,
      );
    }
    if (options.missions > 0) {
      const m = options.missions;
      const files = [];
      for (let i = 0; i < m; i++) {
        const missionDir = join(dir, `m${i}`);
        await mkdir(join(missionDir, 'ws'), { recursive: true });
        const file = join(missionDir, 'mission.yaml');
        const tasks = Array.from({ length: options.missionTasks }, (_, k) => ({
          id: taskId(k + 1),
          deps: k > 0 ? [taskId(k)] : [],
        }));
        await writeFile(file, missionYaml(tasks, `small mission ${i}`));
        files.push(file);
      }
      const base = await usedMemory(redis.admin);
      const memory = sampleMemory(redis.admin);
      const t0 = now();
      const ids = await pool(files, 8, async (file) => (await client.submit(file)).id);
      const t1 = now();
      const statuses = await withDeadline(
        pool(ids, 16, (id) => client.wait(id, { pollMs: 1_000 })),
        60 * 60_000,
        'concurrent missions',
      );
      const t2 = now();
      const peak = await memory.stop();
      const after = await usedMemory(redis.admin);
      const notDone = statuses.filter((s) => s.status !== 'done');
      if (notDone.length > 0) throw new Error(`${notDone.length} of ${m} missions did not finish done`);
      out.missions = {
        missions: m,
        tasksEach: options.missionTasks,
        submitS: (t1 - t0) / 1000,
        submitMsPerMission: (t1 - t0) / m,
        totalS: (t2 - t0) / 1000,
        tasksPerS: (m * options.missionTasks) / ((t2 - t0) / 1000),
        peakBytesPerMission: (peak - base) / m,
        afterBytesPerMission: (after - base) / m,
      };
      log(
        `  ${m} missions × ${options.missionTasks} task(s): submitted in ${fmt(out.missions.submitS, 1)} s (${fmt(out.missions.submitMsPerMission, 0)} ms each), all done after ${fmt(out.missions.totalS, 1)} s (${fmt(out.missions.tasksPerS, 2)} tasks/s); Redis ${fmt(out.missions.afterBytesPerMission / KB, 1)} KiB/mission after completion`,
      );
    }
  } finally {
    await workers?.stop();
    await client.close();
    await redis.stop();
    await rm(dir, { recursive: true, force: true });
  }
  return out;
}

export async function run(options, log = console.log) {
  putSimOnPath();
  const sizes = options.sizes ?? defaults.sizes;
  const settings = {
    e2e: options.e2e ?? defaults.e2e,
    workers: options.workers ?? defaults.workers,
    slots: options.slots ?? defaults.slots,
    missions: options.missions ?? defaults.missions,
    missionTasks: options.missionTasks ?? defaults.missionTasks,
  };
  const runs = options.runs ?? 1;
  log(
    `scale: submit + state at ${sizes.join(', ')} tasks (${runs} run(s) each), then end to end on worker processes`,
  );
  const submits = [];
  for (let r = 0; r < runs; r++) for (const size of sizes) submits.push(await submitOnly(size, log));
  const bySize = sizes.map((size) => {
    const rows = submits.filter((s) => s.size === size);
    const median = (pick) => {
      const sorted = rows.map(pick).sort((a, b) => a - b);
      return sorted[Math.floor(sorted.length / 2)];
    };
    return {
      size,
      submitMsPerTask: median((s) => s.submitMsPerTask),
      validateMs: median((s) => s.validateMs),
      bytesPerTask: median((s) => s.bytesPerTask),
      ops: Object.fromEntries(Object.keys(rows[0].ops).map((op) => [op, median((s) => s.ops[op])])),
      fullFetchMs: median((s) => s.fullFetchMs),
      branchFetchMs: median((s) => s.branchFetchMs),
      packedBranchFetchMs: median((s) => s.packedBranchFetchMs),
    };
  });
  log('');
  printTable(
    [
      [
        'tasks',
        'validate s',
        'submit ms/task',
        'KiB/task queued',
        'mark ms',
        'settle ms',
        'getTask ms',
        'getTasks ms',
        'status ms',
        'full fetch ms',
        'branch fetch ms',
        'packed: branch fetch ms',
      ],
      ...bySize.map((s) => [
        s.size,
        fmt(s.validateMs / 1000, 2),
        fmt(s.submitMsPerTask, 2),
        fmt(s.bytesPerTask / KB, 2),
        fmt(s.ops.mark, 2),
        fmt(s.ops.settle, 2),
        fmt(s.ops.getTask, 2),
        fmt(s.ops.getTasks, 1),
        fmt(s.ops.status, 1),
        fmt(s.fullFetchMs, 0),
        fmt(s.branchFetchMs, 0),
        fmt(s.packedBranchFetchMs, 0),
      ]),
    ],
    log,
  );
  const first = bySize[0];
  const last = bySize.at(-1);
  if (bySize.length > 1) {
    log(
      `  ${last.size}/${first.size}: submit per task × ${fmt(last.submitMsPerTask / first.submitMsPerTask)}, validate per task × ${fmt(last.validateMs / last.size / (first.validateMs / first.size))}, settle × ${fmt(last.ops.settle / first.ops.settle)}, mark × ${fmt(last.ops.mark / first.ops.mark)}, branch fetch × ${fmt(last.branchFetchMs / first.branchFetchMs)} (packed refs × ${fmt(last.packedBranchFetchMs / first.packedBranchFetchMs)}), full fetch × ${fmt(last.fullFetchMs / first.fullFetchMs)} (1.0 = constant per task)`,
    );
  }
  log('');
  const e2e = await endToEnd(settings, log);
  return { submit: bySize, submitRuns: submits, ...e2e, settings };
}
