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
import { FlotillaClient } from '../dist/client.js';
import { loadMissionOrThrow } from '../dist/producer/load.js';
import { attemptRef } from '../dist/shared/contracts.js';
import { missionKeys } from '../dist/shared/store/keys.js';
import { listHosts } from '../dist/shared/store/registry.js';
import { openRepoCache } from '../dist/workers/workspace/repo-cache.js';
import { benchConfig, missionYaml, taskId } from './lib/flotilla.js';
import { killTagged, newTag, TAG_VARIABLE } from './lib/procs.js';
import { commandCalls, diffCalls, redisInfo, startRedis, usedMemory } from './lib/redis.js';
import { missionTasks, processUsage, shapeDepth, stageTimes, windowsOf } from './lib/scale-shape.js';
import {
  FLOTILLA_BIN,
  fmt,
  now,
  printTable,
  putSimOnPath,
  SIM_ADAPTERS,
  sleep,
  summarize,
  withDeadline,
} from './lib/util.js';

export const defaults = {
  sizes: [1_000, 10_000],
  e2e: 60,
  workers: 2,
  slots: 2,
  missions: 50,
  missionTasks: 1,
  shape: 'wide',
  width: 100,
  /** Seconds of Redis load measured with every host idle, before the missions. */
  idle: 20,
  /** One FLOTILLA_HOME for every worker process (`shared`, hosts on one machine) or one each (`own`). */
  home: 'shared',
};

/** The end-to-end mission's shapes (`--shape`). */
export const SHAPES = ['wide', 'deep-wide'];

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
    const { id } = await client.submitSpec(spec);
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

/**
 * `flotilla worker` processes on the stand-in agent: with `home` 'shared' they share one
 * FLOTILLA_HOME (repo cache, checkout slots) like hosts on one machine; with 'own' each has its
 * own, like hosts on separate machines.
 */
async function startWorkers(config, redisUrl, count, slots, dir, home = 'shared') {
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
          FLOTILLA_HOME: home === 'own' ? join(dir, `home-${i + 1}`) : join(dir, 'home'),
          FLOTILLA_ADAPTERS: SIM_ADAPTERS,
          LOG_LEVEL: 'warn',
          [TAG_VARIABLE]: tag,
        },
        // Not the repository: a host watches the repository it runs in for writes outside the
        // agent's checkout (the origin guard), and edits to this checkout would fail its tasks.
        cwd: dir,
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

const MiB = KB * KB;

/** Redis's counters the progress samples keep: memory, client commands so far, its CPU seconds. */
async function redisCounters(admin) {
  const info = await redisInfo(admin);
  return {
    memory: Number(info.used_memory),
    dataset: Number(info.used_memory_dataset),
    commands: Number(info.total_commands_processed),
    opsPerS: Number(info.instantaneous_ops_per_sec),
    redisCpu: Number(info.used_cpu_user) + Number(info.used_cpu_sys),
  };
}

/** The worker processes' RSS (sum and largest) and CPU seconds so far (their own, not their agents'). */
async function hostCounters(pids) {
  const usage = await Promise.all(pids.map(processUsage));
  return {
    rss: usage.reduce((sum, u) => sum + u.rss, 0),
    rssMax: Math.max(0, ...usage.map((u) => u.rss)),
    hostCpu: usage.reduce((sum, u) => sum + u.cpu, 0),
  };
}

/**
 * While missions run: every 2 s, how many of their tasks are finished (each mission's `open` count,
 * one pipelined read), Redis's memory, commands and CPU, and the hosts' RSS and CPU. Keeps every
 * sample (for windows and the peak) and prints a progress line to stderr every `every` finished
 * tasks, so a run of hours shows how it goes.
 */
function startProgress({ admin, prefix, pids, total, every, label, started }) {
  const missions = [];
  const samples = [];
  let running = true;
  let nextLine = every;
  const sample = async () => {
    const reads = admin.pipeline();
    for (const { id } of missions) reads.hget(missionKeys(prefix, id).meta, 'open');
    const open = ((await reads.exec()) ?? []).map(([, value]) => Number(value ?? 0));
    const done = missions.reduce((sum, { tasks }, i) => sum + tasks - (open[i] ?? tasks), 0);
    const [redisNow, hosts] = await Promise.all([redisCounters(admin), hostCounters(pids)]);
    const s = { t: (now() - started) / 1000, done, ...redisNow, ...hosts };
    samples.push(s);
    if (every > 0 && done >= nextLine) {
      const previous = samples.findLast((p) => p.done <= nextLine - every) ?? samples[0];
      const windowRate = (done - previous.done) / Math.max(0.001, s.t - previous.t);
      process.stderr.write(
        `[scale ${label}] ${done}/${total} tasks in ${fmt(s.t, 0)} s: ${fmt(done / s.t, 2)} tasks/s (last ${done - previous.done}: ${fmt(windowRate, 2)}/s); Redis ${fmt(s.memory / MiB, 1)} MiB, ${s.opsPerS} ops/s; hosts ${fmt(s.rss / MiB, 0)} MiB RSS (largest ${fmt(s.rssMax / MiB, 0)})\n`,
      );
      while (nextLine <= done) nextLine += every;
    }
    return s;
  };
  const loop = (async () => {
    while (running) {
      await sample().catch(() => undefined);
      await sleep(2_000);
    }
  })();
  return {
    /** A mission to count, with its number of tasks. */
    add(id, tasks) {
      missions.push({ id, tasks });
    },
    samples,
    async stop() {
      running = false;
      await loop;
      await sample();
      return samples;
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

/** What Redis and the hosts do with nothing to run: commands/s and CPU over `seconds`. */
async function idleLoad(admin, pids, seconds) {
  await sleep(5_000); // past the hosts' start-up
  const [r0, h0, c0] = await Promise.all([redisCounters(admin), hostCounters(pids), commandCalls(admin)]);
  const t0 = now();
  await sleep(seconds * 1000);
  const [r1, h1, c1] = await Promise.all([redisCounters(admin), hostCounters(pids), commandCalls(admin)]);
  const s = (now() - t0) / 1000;
  // What the idle hosts send, the commands Lua scripts run included (INFO commandstats).
  const top = Object.entries(diffCalls(c0, c1))
    .filter(([name]) => name !== 'info')
    .sort(([, a], [, b]) => b - a)
    .slice(0, 8)
    .map(([name, calls]) => ({ name, perS: calls / s }));
  return {
    top,
    seconds: s,
    commandsPerS: (r1.commands - r0.commands) / s,
    instantaneousOpsPerS: r1.opsPerS,
    redisCpuPercent: ((r1.redisCpu - r0.redisCpu) / s) * 100,
    hostsCpuPercent: ((h1.hostCpu - h0.hostCpu) / s) * 100,
    hostRssMiB: h1.rss / MiB,
    hostRssMaxMiB: h1.rssMax / MiB,
  };
}

const median = (values) => summarize(values).median;

/**
 * Each stage's median wall time over up to `count` tasks among the first and among the last
 * `windowSize` to finish: a per-task step that grows with the mission shows as late > early.
 */
async function stagesEarlyLate(store, id, windowSize, count = 20) {
  const states = await store.getTasks(id);
  const finished = Object.entries(states)
    .filter(([, s]) => s.status === 'completed' && s.finishedAt)
    .sort(([, a], [, b]) => Date.parse(a.finishedAt) - Date.parse(b.finishedAt));
  const pick = (list) => {
    const step = Math.max(1, Math.floor(list.length / count));
    return list.filter((_, i) => i % step === 0).slice(0, count);
  };
  const span = Math.min(windowSize, Math.floor(finished.length / 2));
  const measure = async (list) => {
    const times = await Promise.all(
      pick(list).map(async ([taskId, state]) => stageTimes(state, await store.getTaskAudit(id, taskId))),
    );
    return Object.fromEntries(
      ['waitMs', 'runMs', 'agentMs', 'verifyMs', 'gateMs'].map((k) => [k, median(times.map((t) => t[k]))]),
    );
  };
  return {
    tasks: Math.min(count, span),
    early: await measure(finished.slice(0, span)),
    late: await measure(finished.slice(finished.length - span)),
    lastFinishedAt: finished.length > 0 ? Date.parse(finished.at(-1)[1].finishedAt) : Number.NaN,
  };
}

function printWindows(windows, idleCommandsPerS, log) {
  printTable(
    [
      [
        'tasks',
        'seconds',
        'tasks/s',
        'Redis cmds/task',
        '… less idle load',
        'Redis CPU ms/task',
        'hosts CPU ms/task',
        'Redis MiB',
        'hosts RSS MiB',
      ],
      ...windows.map((w) => [
        `${w.from}–${w.to}`,
        fmt(w.seconds, 0),
        fmt(w.tasksPerS, 2),
        fmt(w.commandsPerTask, 0),
        fmt(w.commandsPerTask - (idleCommandsPerS * w.seconds) / (w.to - w.from), 0),
        fmt(w.redisCpuMsPerTask, 1),
        fmt(w.hostCpuMsPerTask, 0),
        fmt(w.memory / MiB, 1),
        fmt(w.rss / MiB, 0),
      ]),
    ],
    log,
  );
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
    workers = await startWorkers(config, redis.url, options.workers, options.slots, dir, options.home);
    log(
      `  ${options.workers} worker processes × ${options.slots} slots registered (${options.home === 'own' ? 'a FLOTILLA_HOME each' : 'one FLOTILLA_HOME'})`,
    );
    if (options.idle > 0) {
      out.idle = await idleLoad(redis.admin, workers.pids, options.idle);
      log(
        `  idle, ${options.workers} hosts, ${fmt(out.idle.seconds, 0)} s: Redis ${fmt(out.idle.commandsPerS, 0)} commands/s (instantaneous_ops_per_sec ${out.idle.instantaneousOpsPerS}), Redis CPU ${fmt(out.idle.redisCpuPercent, 1)} %, hosts' CPU ${fmt(out.idle.hostsCpuPercent, 1)} % together; hosts ${fmt(out.idle.hostRssMiB, 0)} MiB RSS (largest ${fmt(out.idle.hostRssMaxMiB, 0)})`,
      );
      log(
        `  idle: ${out.idle.top.map(({ name, perS }) => `${name} ${fmt(perS, 1)}/s`).join(', ')} (scripts' commands included)`,
      );
    }
    if (options.e2e > 0) {
      const n = options.e2e;
      const windowSize = options.window ?? Math.max(10, Math.round(n / 10));
      await mkdir(join(dir, 'big', 'ws'), { recursive: true });
      const file = join(dir, 'big', 'mission.yaml');
      await writeFile(
        file,
        missionYaml(missionTasks(options.shape, n, options.width), `e2e ${options.shape} ${n}`),
      );
      const depth = shapeDepth(options.shape, n, options.width);
      const shapeText =
        options.shape === 'deep-wide'
          ? `${depth} layers × ${Math.min(options.width, n)}, cross-linked`
          : 'independent';
      log(`  e2e: ${n} tasks (${options.shape}: ${shapeText}), windows of ${windowSize} tasks`);
      const [before, hostsBefore] = await Promise.all([
        redisCounters(redis.admin),
        hostCounters(workers.pids),
      ]);
      const base = before.memory;
      const t0 = now();
      const progress = startProgress({
        admin: redis.admin,
        prefix: config.prefix,
        pids: workers.pids,
        total: n,
        every: options.progress ?? Math.max(10, Math.round(n / 50)),
        label: `${options.shape} ${n}`,
        started: t0,
      });
      const { id } = await client.submit(file);
      progress.add(id, n);
      const t1 = now();
      const status = await withDeadline(
        client.wait(id, { pollMs: 500 }),
        Math.max(60 * 60_000, n * 6_000),
        'e2e mission',
      );
      const t2 = now();
      const samples = await progress.stop();
      const afterInfo = await redisCounters(redis.admin);
      const after = afterInfo.memory;
      const peak = Math.max(...samples.map((s) => s.memory));
      const peakDataset = Math.max(...samples.map((s) => s.dataset));
      const counts = {};
      for (const task of status.tasks) counts[task.status] = (counts[task.status] ?? 0) + 1;
      if (status.status !== 'done') {
        log(
          `  e2e: the mission ended ${status.status} (${JSON.stringify(counts)}); figures below are still what ran`,
        );
        for (const task of status.tasks.filter((t) => t.status === 'failed').slice(0, 5)) {
          log(`  e2e: ${task.id} failed on ${task.host} after ${task.attempts} attempt(s): ${task.error}`);
          for (const entry of (await client.store.getTaskAudit(id, task.id)).slice(-4)) {
            log(`    ${entry.at} ${entry.stage}: ${entry.message.slice(0, 400)}`);
            if (process.env.SCALE_DUMP_FAILED) log(JSON.stringify(entry, null, 1));
          }
        }
      }
      const windows = windowsOf(samples, windowSize);
      const stages = await stagesEarlyLate(client.store, id, windowSize);
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
      const last = samples.at(-1);
      out.e2e = {
        shape: options.shape,
        width: options.shape === 'deep-wide' ? Math.min(options.width, n) : n,
        depth,
        status: status.status,
        counts,
        merges,
        publishes: perPublish.length,
        largestBatch: Math.max(0, ...perPublish),
        tasks: n,
        submitS: (t1 - t0) / 1000,
        totalS: (t2 - t0) / 1000,
        tasksPerS: n / ((t2 - t0) / 1000),
        lastTaskToDoneS: (performance.timeOrigin + t2 - stages.lastFinishedAt) / 1000,
        peakBytesPerTask: (peak - base) / n,
        afterBytesPerTask: (after - base) / n,
        peakDatasetBytesPerTask: (peakDataset - before.dataset) / n,
        afterDatasetBytesPerTask: (afterInfo.dataset - before.dataset) / n,
        redisCommandsPerTask: (last.commands - samples[0].commands) / n,
        hostRssBeforeMiB: hostsBefore.rss / MiB,
        hostRssPeakMiB: Math.max(...samples.map((s) => s.rss)) / MiB,
        hostRssAfterMiB: last.rss / MiB,
        hostRssMaxAfterMiB: last.rssMax / MiB,
        windowSize,
        windows,
        stages,
      };
      log(
        `  e2e: ${n} tasks in ${fmt(out.e2e.totalS, 1)} s (${fmt(out.e2e.tasksPerS, 2)} tasks/s; submit ${fmt(out.e2e.submitS, 2)} s; last task → mission done ${fmt(out.e2e.lastTaskToDoneS, 1)} s); Redis ${fmt(out.e2e.peakBytesPerTask / KB, 1)} KiB/task at peak, ${fmt(out.e2e.afterBytesPerTask / KB, 1)} KiB/task after completion (used_memory_dataset: ${fmt(out.e2e.peakDatasetBytesPerTask / KB, 1)} / ${fmt(out.e2e.afterDatasetBytesPerTask / KB, 1)}); ${fmt(out.e2e.redisCommandsPerTask, 0)} Redis commands/task (idle hosts' included)`,
      );
      log(
        `  e2e: hosts' RSS ${fmt(out.e2e.hostRssBeforeMiB, 0)} MiB before, ${fmt(out.e2e.hostRssPeakMiB, 0)} at peak, ${fmt(out.e2e.hostRssAfterMiB, 0)} after (largest host ${fmt(out.e2e.hostRssMaxAfterMiB, 0)} MiB)`,
      );
      log(
        `  e2e: ${merges} merge commits in ${perPublish.length} publishes of the integration branch (${fmt(merges / Math.max(1, perPublish.length), 2)} merges a publish, at most ${out.e2e.largestBatch})`,
      );
      printWindows(windows, out.idle?.commandsPerS ?? 0, log);
      const row = (s) =>
        `wait ${fmt(s.waitMs / 1000, 2)} s, run ${fmt(s.runMs / 1000, 2)} s (agent ${fmt(s.agentMs / 1000, 2)}), verify ${fmt(s.verifyMs / 1000, 2)} s, gate ${fmt(s.gateMs / 1000, 2)} s`;
      log(
        `  stages, median of ${stages.tasks} tasks among the first ${windowSize} done: ${row(stages.early)}`,
      );
      log(
        `  stages, median of ${stages.tasks} tasks among the last ${windowSize} done:  ${row(stages.late)}`,
      );
      if (windows.length > 1) {
        const [w1, wn] = [windows[0], windows.at(-1)];
        log(
          `  last window / first: tasks/s × ${fmt(wn.tasksPerS / w1.tasksPerS)}, Redis commands/task × ${fmt(wn.commandsPerTask / w1.commandsPerTask)}, Redis CPU/task × ${fmt(wn.redisCpuMsPerTask / w1.redisCpuMsPerTask)}, hosts' CPU/task × ${fmt(wn.hostCpuMsPerTask / w1.hostCpuMsPerTask)}; run stage × ${fmt(stages.late.runMs / stages.early.runMs)}, gate × ${fmt(stages.late.gateMs / stages.early.gateMs)} (1.0 = no per-task growth)`,
        );
      }
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
      const total = m * options.missionTasks;
      const [before, hostsBefore] = await Promise.all([
        redisCounters(redis.admin),
        hostCounters(workers.pids),
      ]);
      const base = before.memory;
      const t0 = now();
      const progress = startProgress({
        admin: redis.admin,
        prefix: config.prefix,
        pids: workers.pids,
        total,
        every: options.progress ?? Math.max(10, Math.round(total / 10)),
        label: `${m} missions`,
        started: t0,
      });
      const ids = await pool(files, 8, async (file) => {
        const { id } = await client.submit(file);
        progress.add(id, options.missionTasks);
        return id;
      });
      const t1 = now();
      const statuses = await withDeadline(
        pool(ids, 16, (id) => client.wait(id, { pollMs: 1_000 })),
        Math.max(60 * 60_000, total * 6_000),
        'concurrent missions',
      );
      const t2 = now();
      const samples = await progress.stop();
      const afterInfo = await redisCounters(redis.admin);
      const after = afterInfo.memory;
      const peak = Math.max(...samples.map((s) => s.memory));
      const peakDataset = Math.max(...samples.map((s) => s.dataset));
      const notDone = statuses.filter((s) => s.status !== 'done');
      if (notDone.length > 0) log(`  ${notDone.length} of ${m} missions did not finish done`);
      const last = samples.at(-1);
      out.missions = {
        missions: m,
        tasksEach: options.missionTasks,
        notDone: notDone.length,
        submitS: (t1 - t0) / 1000,
        submitMsPerMission: (t1 - t0) / m,
        totalS: (t2 - t0) / 1000,
        tasksPerS: total / ((t2 - t0) / 1000),
        peakBytesPerMission: (peak - base) / m,
        afterBytesPerMission: (after - base) / m,
        peakDatasetBytesPerMission: (peakDataset - before.dataset) / m,
        afterDatasetBytesPerMission: (afterInfo.dataset - before.dataset) / m,
        redisCommandsPerTask: (last.commands - samples[0].commands) / total,
        hostRssBeforeMiB: hostsBefore.rss / MiB,
        hostRssPeakMiB: Math.max(...samples.map((s) => s.rss)) / MiB,
        hostRssAfterMiB: last.rss / MiB,
      };
      log(
        `  ${m} missions × ${options.missionTasks} task(s): submitted in ${fmt(out.missions.submitS, 1)} s (${fmt(out.missions.submitMsPerMission, 0)} ms each), all done after ${fmt(out.missions.totalS, 1)} s (${fmt(out.missions.tasksPerS, 2)} tasks/s); Redis ${fmt(out.missions.peakBytesPerMission / KB, 1)} KiB/mission at peak, ${fmt(out.missions.afterBytesPerMission / KB, 1)} KiB/mission after completion (used_memory_dataset: ${fmt(out.missions.peakDatasetBytesPerMission / KB, 1)} / ${fmt(out.missions.afterDatasetBytesPerMission / KB, 1)}); ${fmt(out.missions.redisCommandsPerTask, 0)} Redis commands/task; hosts' RSS ${fmt(out.missions.hostRssBeforeMiB, 0)} → ${fmt(out.missions.hostRssAfterMiB, 0)} MiB (peak ${fmt(out.missions.hostRssPeakMiB, 0)})`,
      );
    }
  } finally {
    await workers?.stop();
    await client.close();
    await redis.stop();
    // SCALE_KEEP=1 keeps the hosts' homes and the missions' repositories for a look afterwards.
    if (process.env.SCALE_KEEP) log(`  kept ${dir}`);
    else await rm(dir, { recursive: true, force: true });
  }
  return out;
}

export async function run(options, log = console.log) {
  putSimOnPath();
  // `--sizes 0` skips part 1.
  const sizes = (options.sizes ?? defaults.sizes).filter((size) => size > 0);
  const settings = {
    e2e: options.e2e ?? defaults.e2e,
    workers: options.workers ?? defaults.workers,
    slots: options.slots ?? defaults.slots,
    missions: options.missions ?? defaults.missions,
    missionTasks: options.missionTasks ?? defaults.missionTasks,
    shape: options.shape ?? defaults.shape,
    width: options.width ?? defaults.width,
    window: options.window,
    progress: options.progress,
    idle: options.idle ?? defaults.idle,
    home: options.home ?? defaults.home,
  };
  if (!['shared', 'own'].includes(settings.home)) {
    throw new Error(`scale: unknown --home ${settings.home} (expected shared or own)`);
  }
  if (!SHAPES.includes(settings.shape)) {
    throw new Error(`scale: unknown --shape ${settings.shape} (expected ${SHAPES.join(' or ')})`);
  }
  const runs = options.runs ?? 1;
  log(
    sizes.length > 0
      ? `scale: submit + state at ${sizes.join(', ')} tasks (${runs} run(s) each), then end to end on worker processes`
      : 'scale: end to end on worker processes',
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
  if (sizes.length > 0) {
    log('');
    printSubmitTable(bySize, log);
  }
  log('');
  const e2e = await endToEnd(settings, log);
  return { submit: bySize, submitRuns: submits, ...e2e, settings };
}

function printSubmitTable(bySize, log) {
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
}
