/**
 * Scheduling quality: a fixed random DAG (seeded) of 30 tasks that each sleep 1–3 s, on one host
 * with 4 slots. The figure is makespan / max(critical path, work / slots), the classic lower bound.
 *
 * Beside flotilla's measured makespan, two schedules are computed arithmetically from the same
 * DAG and durations (greedy list scheduling on `slots` machines, tasks in file order, no overhead):
 *   list    DAG release, as flotilla does: a task starts when its own dependencies are done
 *           (ready tasks in file order, in BullMQ's FIFO order, or longest chain first);
 *   waves   a wave barrier: wave k (tasks whose longest dependency chain has k links) starts only
 *           when every task of wave k-1 has finished.
 * A task's time is its CLI's whole run (`--startup inside`, the default: the stand-in sleeps until
 * that long after its own start) or a sleep on top of the stand-in's start-up (`--startup outside`).
 * Where flotilla's time goes is read from its status: per task, the overhead (approval time minus
 * start time minus the task's time) and the release delay (start minus the moment its last dependency
 * was approved, or the submit for a root): overhead is per-task cost, release delay is scheduling.
 */
import { Queue } from 'bullmq';
import { attemptJobId, dispatchQueue } from '../dist/shared/contracts.js';
import { longestPath } from '../dist/shared/dag.js';
import { runPriorities } from '../dist/shared/queue/priority.js';
import { missionYaml, startFlotilla } from './lib/flotilla.js';
import { startRedis } from './lib/redis.js';
import {
  createRandom,
  fmt,
  fmtStats,
  printTable,
  putSimOnPath,
  summarize,
  withDeadline,
} from './lib/util.js';

export const defaults = { tasks: 30, slots: 4, runs: 2, seed: 4, stretch: 1, startup: 'inside' };

/** Tasks `s01…` in file order; each depends on up to three earlier tasks. Durations 1.0–3.0 s in 100 ms steps. */
export function randomDag(count, seed) {
  const random = createRandom(seed);
  const tasks = [];
  for (let i = 0; i < count; i++) {
    const id = `s${String(i + 1).padStart(2, '0')}`;
    const deps = new Set();
    if (i >= 3 && !random.chance(0.15)) {
      const wanted = 1 + random.int(3);
      for (let k = 0; k < wanted; k++) {
        // Any earlier task: the graph then has both depth and width.
        const back = 1 + random.int(i);
        deps.add(tasks[i - back].id);
      }
    }
    tasks.push({ id, dependsOn: [...deps], ms: 1_000 + 100 * random.int(21) });
  }
  return tasks;
}

/**
 * Greedy list scheduling, event by event: whenever a slot is free, a ready task starts (ready: every
 * dependency has finished). Which ready task goes first is the `order`:
 *   'file'   file order;
 *   'fifo'   the order tasks became ready, then file order — how BullMQ serves flotilla's run
 *            jobs, which are added when their last dependency is approved;
 *   'chain'  the longest chain of dependents below the task first (exact chain lengths);
 *   'levels' flotilla's run-job priorities (queue/priority.ts: chain lengths on 8 levels relative
 *            to the mission's longest chain), FIFO within a level, as BullMQ serves them.
 * Returns the makespan.
 */
export function listSchedule(tasks, slots, duration = (t) => t.ms, order = 'file') {
  const index = new Map(tasks.map((t, i) => [t.id, i]));
  const below = new Map(tasks.map((t) => [t.id, []]));
  for (const t of tasks) for (const d of t.dependsOn) below.get(d)?.push(t.id);
  const chain = new Map();
  for (const t of [...tasks].reverse())
    chain.set(t.id, 1 + Math.max(0, ...below.get(t.id).map((id) => chain.get(id))));
  const level = runPriorities(tasks);
  const finished = new Map();
  const readyAt = new Map();
  let running = [];
  const pending = [...tasks];
  let clock = 0;
  let makespan = 0;
  const byFile = (a, b) => index.get(a.id) - index.get(b.id);
  const compare = {
    file: byFile,
    fifo: (a, b) => readyAt.get(a.id) - readyAt.get(b.id) || byFile(a, b),
    chain: (a, b) => chain.get(b.id) - chain.get(a.id) || byFile(a, b),
    levels: (a, b) =>
      level.get(a.id) - level.get(b.id) || readyAt.get(a.id) - readyAt.get(b.id) || byFile(a, b),
  }[order];
  while (pending.length > 0 || running.length > 0) {
    for (const done of running.filter((r) => r.end <= clock)) finished.set(done.id, done.end);
    running = running.filter((r) => r.end > clock);
    for (const task of pending) {
      if (!readyAt.has(task.id) && task.dependsOn.every((d) => finished.has(d))) {
        readyAt.set(task.id, Math.max(0, ...task.dependsOn.map((d) => finished.get(d))));
      }
    }
    for (const task of pending.filter((t) => readyAt.has(t.id)).sort(compare)) {
      if (running.length >= slots) break;
      const end = clock + duration(task);
      running.push({ id: task.id, end });
      makespan = Math.max(makespan, end);
      pending.splice(pending.indexOf(task), 1);
    }
    if (running.length === 0 && pending.length > 0) throw new Error('listSchedule: dependency cycle');
    if (running.length > 0) clock = Math.min(...running.map((r) => r.end));
  }
  return makespan;
}

/** Wave barrier: each depth level list-scheduled on the slots, the next level after the last finish. */
export function waveSchedule(tasks, slots, duration = (t) => t.ms) {
  const level = new Map();
  for (const task of tasks) level.set(task.id, 1 + Math.max(0, ...task.dependsOn.map((d) => level.get(d))));
  let start = 0;
  const depth = Math.max(...level.values());
  for (let k = 1; k <= depth; k++) {
    const wave = tasks.filter((t) => level.get(t.id) === k).map((t) => ({ ...t, dependsOn: [] }));
    start += listSchedule(wave, slots, duration);
  }
  return start;
}

export function lowerBound(tasks, slots, duration = (t) => t.ms) {
  const critical = longestPath(tasks, duration);
  const work = tasks.reduce((sum, t) => sum + duration(t), 0);
  return { critical, work, bound: Math.max(critical, work / slots) };
}

async function runOnce(redisUrl, dag, slots, wholeRun) {
  const cluster = await startFlotilla(redisUrl, { slots });
  try {
    const file = await cluster.writeMission(
      missionYaml(
        dag.map((t) => ({ id: t.id, deps: t.dependsOn, sleepMs: t.ms, wholeRun })),
        'scheduling benchmark',
      ),
    );
    const { id } = await cluster.client.submit(file);
    const status = await withDeadline(
      cluster.client.wait(id, { pollMs: 200 }),
      15 * 60_000,
      'schedule mission',
    );
    if (status.status !== 'done') {
      const bad = status.tasks
        .filter((t) => t.status !== 'completed')
        .map((t) => `${t.id}: ${t.status} ${t.error ?? ''}`);
      throw new Error(`schedule mission ended ${status.status}: ${bad.slice(0, 3).join('; ')}`);
    }
    const created = Date.parse(status.createdAt);
    const makespan = Date.parse(status.finishedAt) - created;
    const byId = new Map(status.tasks.map((t) => [t.id, t]));
    const time = (id, field) => Date.parse(byId.get(id)[field]);
    // When each run job was added (BullMQ's `timestamp`): approval → flow added is the gate's own
    // release latency, before any wait for a free slot.
    const runQueue = new Queue(dispatchQueue('code_implementation'), {
      connection: cluster.client.redis,
      prefix: cluster.config.prefix,
    });
    const added = new Map();
    // Runs started more than once: a lock lost under load (a false stall) or an infrastructure retry.
    let redelivered = 0;
    for (const task of dag) {
      const job = await runQueue.getJob(attemptJobId(id, task.id, 1, 'run'));
      if (job) added.set(task.id, job.timestamp);
      if (job && ((job.attemptsStarted ?? 1) > 1 || (job.stalledCounter ?? 0) > 0)) redelivered += 1;
    }
    await runQueue.close();
    // Where a task's overhead goes, from its audit rows (attempt 1): the run stage outside the CLI
    // (lease, prompt, status, commit), the CLI beyond the task's time, verify, and the gate.
    const audit = await cluster.client.store.getAudit(id);
    const parts = { runStage: [], cli: [], verify: [], gate: [] };
    for (const task of dag) {
      const rows = audit.filter((row) => row.taskId === task.id && row.attempt === 1);
      const at = (kind) => {
        const row = rows.find((r) => r.event?.kind === kind);
        return row ? { at: Date.parse(row.at), event: row.event } : undefined;
      };
      const run = at('run');
      const verify = at('verify');
      const gate = at('gate');
      if (!run || !verify || !gate) continue;
      const started = time(task.id, 'startedAt');
      parts.runStage.push(run.at - started - run.event.durationMs);
      parts.cli.push(run.event.durationMs - task.ms);
      parts.verify.push(verify.at - run.at);
      parts.gate.push(gate.at - verify.at);
    }
    const overhead = [];
    const release = [];
    const dependentRelease = [];
    const addDelay = [];
    for (const task of dag) {
      // From the slot being taken (startedAt) to the gate's approval (finishedAt), minus the sleep.
      overhead.push(time(task.id, 'finishedAt') - time(task.id, 'startedAt') - task.ms);
      const ready = Math.max(created, ...task.dependsOn.map((d) => time(d, 'finishedAt')));
      release.push(time(task.id, 'startedAt') - ready);
      // The release delay proper: approval of the last dependency → the dependent's start.
      if (task.dependsOn.length > 0) {
        dependentRelease.push(time(task.id, 'startedAt') - ready);
        if (added.has(task.id)) addDelay.push(added.get(task.id) - ready);
      }
    }
    const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const sorted = [...dependentRelease].sort((a, b) => a - b);
    const addSorted = [...addDelay].sort((a, b) => a - b);
    return {
      makespan,
      overhead: mean(overhead),
      release: mean(release),
      releaseMax: Math.max(...release),
      releaseMedian: sorted[Math.floor(sorted.length / 2)] ?? 0,
      releaseDependentMax: sorted.at(-1) ?? 0,
      redelivered,
      addMedian: addSorted[Math.floor(addSorted.length / 2)] ?? 0,
      addMax: addSorted.at(-1) ?? 0,
      parts: Object.fromEntries(Object.entries(parts).map(([k, xs]) => [k, xs.length ? mean(xs) : 0])),
    };
  } finally {
    await cluster.stop();
  }
}

export async function run(options, log = console.log) {
  putSimOnPath();
  const count = options.tasks ?? defaults.tasks;
  const slots = options.slots ?? defaults.slots;
  const runs = options.runs ?? defaults.runs;
  const seed = options.seed ?? defaults.seed;
  // --stretch 10 makes the same DAG's tasks 10–30 s: how long tasks must be for the fixed
  // per-task cost to fade. The stand-in's adapter stops a run after 60 s, so at most 19.
  const stretch = options.stretch ?? defaults.stretch;
  // inside: a task's time is its CLI's whole run, the stand-in's own start-up (~0.1–0.3 s of Node)
  // included, as a real CLI's is; outside: the sleep comes on top of it (sessions 1–3's figures).
  const startup = options.startup ?? defaults.startup;
  if (startup !== 'inside' && startup !== 'outside')
    throw new Error(`schedule: --startup must be inside or outside, got '${startup}'`);
  if (3_000 * stretch >= 57_000)
    throw new Error('schedule: --stretch must keep tasks under the sim adapter’s 60 s timeout (≤ 19)');
  const dag = randomDag(count, seed).map((t) => ({ ...t, ms: t.ms * stretch }));
  const lb = lowerBound(dag, slots);
  const list = listSchedule(dag, slots);
  const fifo = listSchedule(dag, slots, undefined, 'fifo');
  const chainFirst = listSchedule(dag, slots, undefined, 'chain');
  const levels = listSchedule(dag, slots, undefined, 'levels');
  const waves = waveSchedule(dag, slots);
  const depth = longestPath(dag, () => 1);
  log(
    `schedule: ${count} tasks of ${fmt(stretch, 0)}–${fmt(3 * stretch, 0)} s (seed ${seed}, depth ${depth}, ${dag.filter((t) => t.dependsOn.length === 0).length} roots), 1 host × ${slots} slots, ${runs} run(s), the stand-in's start-up ${startup} a task's time`,
  );
  log(
    `  nominal: work ${fmt(lb.work / 1000, 1)} s, work/slots ${fmt(lb.work / slots / 1000, 1)} s, critical path ${fmt(lb.critical / 1000, 1)} s → bound ${fmt(lb.bound / 1000, 1)} s`,
  );
  const measured = [];
  const overheads = [];
  const releases = [];
  const releaseMedians = [];
  const releaseMaxes = [];
  const addMedians = [];
  const addMaxes = [];
  const partRuns = [];
  const redis = await startRedis();
  try {
    for (let r = 0; r < runs; r++) {
      const result = await runOnce(redis.url, dag, slots, startup === 'inside');
      measured.push(result.makespan);
      overheads.push(result.overhead);
      releases.push(result.release);
      releaseMedians.push(result.releaseMedian);
      releaseMaxes.push(result.releaseDependentMax);
      addMedians.push(result.addMedian);
      addMaxes.push(result.addMax);
      partRuns.push(result.parts);
      log(
        `  run ${r + 1}: makespan ${fmt(result.makespan / 1000, 1)} s = ${fmt(result.makespan / lb.bound)} × bound; per task: overhead ${fmt(result.overhead / 1000, 2)} s, release delay ${fmt(result.release / 1000, 2)} s (max ${fmt(result.releaseMax / 1000, 2)} s); last dependency approved → dependent started: median ${fmt(result.releaseMedian / 1000, 2)} s, max ${fmt(result.releaseDependentMax / 1000, 2)} s (→ its run job added: median ${fmt(result.addMedian / 1000, 3)} s, max ${fmt(result.addMax / 1000, 3)} s); runs started twice: ${result.redelivered}`,
      );
    }
  } finally {
    await redis.stop();
  }
  const ratio = summarize(measured.map((m) => m / lb.bound));
  const result = {
    seed,
    stretch,
    startup,
    tasks: count,
    slots,
    depth,
    bound: lb,
    list: { makespan: list, ratio: list / lb.bound },
    fifo: { makespan: fifo, ratio: fifo / lb.bound },
    chainFirst: { makespan: chainFirst, ratio: chainFirst / lb.bound },
    levels: { makespan: levels, ratio: levels / lb.bound },
    waves: { makespan: waves, ratio: waves / lb.bound },
    measured: { makespan: summarize(measured), ratio },
    overheadMs: summarize(overheads),
    releaseDelayMs: summarize(releases),
    releaseDependentMedianMs: summarize(releaseMedians),
    releaseDependentMaxMs: summarize(releaseMaxes),
    releaseAddedMedianMs: summarize(addMedians),
    releaseAddedMaxMs: summarize(addMaxes),
    overheadPartsMs: Object.fromEntries(
      Object.keys(partRuns[0] ?? {}).map((k) => [k, summarize(partRuns.map((p) => p[k]))]),
    ),
  };
  log('');
  printTable(
    [
      ['schedule', 'makespan', 'makespan / bound'],
      ['lower bound', `${fmt(lb.bound / 1000, 1)} s`, '1.00'],
      ['DAG release, file order, zero overhead', `${fmt(list / 1000, 1)} s`, fmt(list / lb.bound)],
      ['DAG release, FIFO (BullMQ), zero overhead', `${fmt(fifo / 1000, 1)} s`, fmt(fifo / lb.bound)],
      [
        'DAG release, longest chain first, zero overhead',
        `${fmt(chainFirst / 1000, 1)} s`,
        fmt(chainFirst / lb.bound),
      ],
      [
        'DAG release, flotilla’s 8 priority levels, zero overhead',
        `${fmt(levels / 1000, 1)} s`,
        fmt(levels / lb.bound),
      ],
      ['wave barrier, zero overhead', `${fmt(waves / 1000, 1)} s`, fmt(waves / lb.bound)],
      ['flotilla, measured', fmtStats(summarize(measured.map((m) => m / 1000)), 1, 's'), fmtStats(ratio)],
    ],
    log,
  );
  log(`  flotilla / bound = ${fmtStats(ratio)} (target ≤ 1.15); waves / bound = ${fmt(waves / lb.bound)}`);
  log(
    `  mean per task: overhead ${fmtStats(summarize(overheads.map((o) => o / 1000)), 2, 's')}, release delay ${fmtStats(summarize(releases.map((o) => o / 1000)), 2, 's')}`,
  );
  log(
    `  last dependency approved → dependent started, per run: median ${fmtStats(summarize(releaseMedians.map((o) => o / 1000)), 2, 's')}, max ${fmtStats(summarize(releaseMaxes.map((o) => o / 1000)), 2, 's')}`,
  );
  log(
    `  overhead per task, mean: run stage outside the CLI ${fmtStats(result.overheadPartsMs.runStage, 0, 'ms')}, CLI beyond the task's time ${fmtStats(result.overheadPartsMs.cli, 0, 'ms')}, run → verified ${fmtStats(result.overheadPartsMs.verify, 0, 'ms')}, verified → approved ${fmtStats(result.overheadPartsMs.gate, 0, 'ms')}`,
  );
  log(
    `  last dependency approved → dependent's run job added, per run: median ${fmtStats(summarize(addMedians), 0, 'ms')}, max ${fmtStats(summarize(addMaxes), 0, 'ms')}`,
  );
  return result;
}
