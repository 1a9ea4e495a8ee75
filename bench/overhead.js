/**
 * Orchestration overhead: N independent tasks (the stand-in agent writes one file, one exit
 * criterion checks it) on one host with 4 slots, against bare BullMQ scripts that drive the same
 * agent and criterion processes with the same concurrency:
 *
 *   bare      a BullMQ queue + worker (concurrency = slots); each job spawns flotilla-sim and
 *             `bash -c <criterion>` in a scratch folder. The floor: the processes the user asked for.
 *   bare+git  the same, plus the git work flotilla does per task, done with flotilla's own workspace
 *             functions (worktree from the integration branch, status, commit, push, verify
 *             worktree; then, in a second queue like flotilla's gates, merge + push into the
 *             integration branch).
 *   flotilla  the mission through flotilla: 4 BullMQ jobs per task (run → verify → critic → gate),
 *             mission state in Redis, audit trail, prompt assembly, the same git work.
 *
 * flotilla/bare is the headline; bare+git splits it into "git" and "orchestration". Variants are
 * interleaved run by run, so load from other processes on the machine hits all of them alike.
 * A separate profile run counts git invocations (a logging git shim on PATH), Redis round trips
 * (MONITOR) and CPU time (this process, its reaped children, redis-server).
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { attemptJobId, attemptRef, QUEUES } from '../dist/shared/contracts.js';
import { MARK_SCRIPT, SETTLE_SCRIPT } from '../dist/shared/store/scripts.js';
import { spawnProcess } from '../dist/workers/agent/spawn.js';
import { diffAgainstIntegration } from '../dist/workers/workspace/attempt-checkout.js';
import { commitAttempt } from '../dist/workers/workspace/commit.js';
import { integrateAttempt } from '../dist/workers/workspace/integrate.js';
import { prepareWorkspace } from '../dist/workers/workspace/prepare-workspace.js';
import { openRepoCache } from '../dist/workers/workspace/repo-cache.js';
import { agentChanges, readWorktree } from '../dist/workers/workspace/snapshot-changes.js';
import { attemptKey, leaseAtCommit, leaseForRun } from '../dist/workers/workspace/stage-checkout.js';
import { noteLeftIgnored } from '../dist/workers/workspace/warm-checkout.js';
import { enforceWriteScope } from '../dist/workers/workspace/write-scope.js';
import { missionYaml, startFlotilla, taskId } from './lib/flotilla.js';
import { countBy, cpuMs, installGitShim, startMonitor } from './lib/profile.js';
import { commandCalls, diffCalls, redisCpuSeconds, startRedis } from './lib/redis.js';
import {
  fmt,
  fmtStats,
  now,
  printTable,
  putSimOnPath,
  summarize,
  uniquePrefix,
  withDeadline,
} from './lib/util.js';

export const defaults = { n: 50, runs: 1, slots: 4, critic: 'off', profileN: 20 };

const SIM_FLAGS = ['--model', 'sim-medium', '--output-format', 'json', '--prompt-file'];
const REVIEW_FLAGS = [
  '--role',
  'reviewer',
  '--model',
  'sim-small',
  '--output-format',
  'json',
  '--prompt-file',
];

function prompt(id, critic) {
  const steps = [
    `- write: {path: ${id}.txt, content: "${id} done"}`,
    ...(critic ? ['- review: {score: 9}'] : []),
  ];
  return [
    '# Dispatch Task',
    '',
    `## Task: ${id}`,
    '',
    `Benchmark task ${id}.`,
    '',
    '```sim',
    ...steps,
    '```',
    '',
    '## Result Instructions',
    '',
    `When you complete this task, write your result to: .planning/dispatch/${id}-a1-RESULT.md`,
    '',
  ].join('\n');
}

async function runAgent(dir, id, role, critic) {
  const name = role === 'reviewer' ? `${id}-a1-review` : `${id}-a1`;
  const promptPath = join('.planning', 'dispatch', `${name}-PROMPT.md`);
  await mkdir(join(dir, '.planning', 'dispatch'), { recursive: true });
  let text = prompt(id, critic);
  if (role === 'reviewer')
    text = text.replace(`${id}-a1-RESULT`, `${name}-RESULT`).replace('## Task:', '## Task Under Review:');
  await writeFile(join(dir, promptPath), text);
  const outcome = await spawnProcess({
    command: 'flotilla-sim',
    args: [...(role === 'reviewer' ? REVIEW_FLAGS : SIM_FLAGS), promptPath],
    cwd: dir,
    timeoutMs: 60_000,
  });
  if (outcome.exitCode !== 0) throw new Error(`flotilla-sim exited ${outcome.exitCode}: ${outcome.stderr}`);
  await readFile(join(dir, '.planning', 'dispatch', `${name}-RESULT.md`), 'utf8');
}

async function runCriterion(dir, id) {
  const outcome = await spawnProcess({
    command: 'bash',
    args: ['-c', `test -f ${id}.txt`],
    cwd: dir,
    timeoutMs: 60_000,
  });
  if (outcome.exitCode !== 0) throw new Error(`criterion failed for ${id}`);
}

/** The bare baselines: one BullMQ job per task, same processes, same concurrency. */
async function runBare(redis, { n, slots, critic, git }) {
  const root = await mkdtemp(join(tmpdir(), 'flotilla-bench-bare-'));
  const connection = new Redis(redis.url, { maxRetriesPerRequest: null });
  const prefix = uniquePrefix('bare');
  const queue = new Queue('bare', { connection, prefix });
  const gateQueue = new Queue('bare-gate', { connection, prefix });
  const started = now();
  let workspace;
  const missionId = `bare-${Date.now().toString(36)}`;
  if (git) {
    const ws = join(root, 'ws');
    await mkdir(ws);
    workspace = await prepareWorkspace({ workspace: ws, missionId });
  }
  const cacheDir = join(root, 'cache');
  const processor = async (job) => {
    const id = job.data.id;
    if (!git) {
      const dir = join(root, id);
      await mkdir(dir);
      await runAgent(dir, id, 'builder', critic);
      await runCriterion(dir, id);
      if (critic) await runAgent(dir, id, 'reviewer', critic);
      await rm(dir, { recursive: true, force: true });
      return { ok: true };
    }
    // The git work of flotilla's run, verify, critic and gate stages, in the same order.
    const cache = await openRepoCache({ repo: workspace.repo, cacheDir });
    // Warm checkouts as flotilla's stages use them: the run's is parked for its verify and critic.
    const place = { root: join(root, 'checkouts'), keep: slots };
    const key = attemptKey(missionId, id, 1);
    const checkout = await leaseForRun({ cache, place, missionId });
    const branch = attemptRef(missionId, id, 1);
    let parkAt;
    let workCommit;
    try {
      await runAgent(checkout.dir, id, 'builder', critic);
      // One walk for the result, the write scope and the commit, as flotilla's run stage does.
      const worktree = await readWorktree(checkout.dir);
      await enforceWriteScope({ dir: checkout.dir, readOnly: false, changes: agentChanges(worktree) });
      const committed = await commitAttempt({
        dir: checkout.dir,
        ref: branch,
        baseCommit: checkout.baseCommit,
        message: `bench: ${id}`,
        worktree,
        localRepo: workspace.repo,
      });
      await noteLeftIgnored(checkout.dir, committed.commit, worktree.ignored);
      workCommit = committed.workCommit;
      parkAt = committed.commit;
    } finally {
      if (parkAt) checkout.lease.park(key, parkAt);
      else await checkout.lease.release();
    }
    const verify = await leaseAtCommit({ cache, place, key, branch, commit: parkAt });
    let passed = false;
    try {
      await runCriterion(verify.dir, id);
      passed = true;
    } finally {
      if (passed && critic) verify.lease.park(key, verify.commit);
      else await verify.lease.release();
    }
    if (critic) {
      const review = await leaseAtCommit({ cache, place, key, branch, commit: parkAt });
      try {
        await diffAgainstIntegration({ cache, missionId, branch });
        await runAgent(review.dir, id, 'reviewer', critic);
      } finally {
        await review.lease.release();
      }
    }
    // The merge is a job of its own, as flotilla's gate is: run slots are not held while merging.
    await gateQueue.add('merge', { id, branch, workCommit }, { jobId: `g${id}` });
    return { ok: true };
  };
  const merge = async (job) => {
    const cache = await openRepoCache({ repo: workspace.repo, cacheDir });
    const merged = await integrateAttempt({
      cache,
      missionId,
      attemptId: `${job.data.id}/a1`,
      ref: job.data.branch,
      workCommit: job.data.workCommit,
      message: `bench: merge ${job.data.id}`,
    });
    if (!merged.ok) throw new Error(`merge conflict for ${job.data.id}`);
    return { ok: true };
  };
  let completed = 0;
  let failed;
  let finish;
  const allDone = new Promise((done) => {
    finish = done;
  });
  const count = () => {
    completed += 1;
    if (completed === n) finish();
  };
  const fail = (_job, error) => {
    failed = error;
    finish();
  };
  const worker = new Worker('bare', processor, { connection, prefix, concurrency: slots });
  worker.on(git ? 'failed' : 'completed', git ? fail : count);
  if (!git) worker.on('failed', fail);
  const gateWorker = git
    ? new Worker('bare-gate', merge, { connection, prefix, concurrency: Math.max(2, slots) })
    : null;
  gateWorker?.on('completed', count);
  gateWorker?.on('failed', fail);
  await queue.addBulk(
    Array.from({ length: n }, (_, i) => ({
      name: 'task',
      data: { id: taskId(i + 1) },
      opts: { jobId: `t${i + 1}` },
    })),
  );
  await withDeadline(allDone, 30 * 60_000, 'bare baseline');
  const seconds = (now() - started) / 1000;
  await worker.close();
  await gateWorker?.close();
  await queue.close();
  await gateQueue.close();
  connection.disconnect();
  await rm(root, { recursive: true, force: true });
  if (failed) throw failed;
  return { seconds };
}

async function runFlotilla(redis, { n, slots, critic }) {
  const cluster = await startFlotilla(redis.url, { slots });
  try {
    const tasks = Array.from({ length: n }, (_, i) => ({ id: taskId(i + 1), critic }));
    const file = await cluster.writeMission(missionYaml(tasks));
    const started = now();
    const { id } = await cluster.client.submit(file);
    const status = await withDeadline(
      cluster.client.wait(id, { pollMs: 200 }),
      30 * 60_000,
      'flotilla mission',
    );
    const seconds = (now() - started) / 1000;
    if (status.status !== 'done') {
      const bad = status.tasks.filter((t) => t.status !== 'completed').slice(0, 3);
      throw new Error(`mission ${status.status}: ${JSON.stringify(bad)}`);
    }
    const stages = await stageTimes(redis.url, cluster, id, n);
    return { seconds, stages };
  } finally {
    await cluster.stop();
  }
}

/** Mean time per task in each stage and between stages, from the BullMQ jobs (kept by retention). */
export async function stageTimes(redisUrl, cluster, missionId, n) {
  // The store keeps its client to itself: a connection of the benchmark's own to the same Redis.
  const queues = new Redis(redisUrl, { maxRetriesPerRequest: null });
  const { Job } = await import('bullmq');
  const q = (name) => new Queue(name, { connection: queues, prefix: cluster.config.prefix });
  const byStage = {
    run: q('dispatch.code_implementation'),
    verify: q(QUEUES.verify),
    critic: q(QUEUES.critic),
    gate: q(QUEUES.mission),
  };
  const sums = {
    run: 0,
    'run→verify': 0,
    verify: 0,
    'verify→critic': 0,
    critic: 0,
    'critic→gate': 0,
    gate: 0,
  };
  let counted = 0;
  for (let i = 1; i <= n; i++) {
    const jobs = {};
    for (const [stage, queue] of Object.entries(byStage)) {
      jobs[stage] = await Job.fromId(queue, attemptJobId(missionId, taskId(i), 1, stage));
    }
    if (Object.values(jobs).some((job) => !job?.processedOn || !job.finishedOn)) continue;
    counted += 1;
    const { run, verify, critic, gate } = jobs;
    sums.run += run.finishedOn - run.processedOn;
    sums['run→verify'] += verify.processedOn - run.finishedOn;
    sums.verify += verify.finishedOn - verify.processedOn;
    sums['verify→critic'] += critic.processedOn - verify.finishedOn;
    sums.critic += critic.finishedOn - critic.processedOn;
    sums['critic→gate'] += gate.processedOn - critic.finishedOn;
    sums.gate += gate.finishedOn - gate.processedOn;
  }
  await Promise.all(Object.values(byStage).map((queue) => queue.close()));
  queues.disconnect();
  const means = {};
  for (const [key, value] of Object.entries(sums)) means[key] = counted ? value / counted : Number.NaN;
  return means;
}

/** One variant under the profilers: git calls, Redis round trips and CPU per task. */
async function profile(variant, opts) {
  const redis = await startRedis();
  const shim = await installGitShim();
  const flotillaScripts = { 'flotilla mark': MARK_SCRIPT, 'flotilla settle': SETTLE_SCRIPT };
  try {
    const callsBefore = await commandCalls(redis.admin);
    const redisCpuBefore = await redisCpuSeconds(redis.admin);
    const cpuBefore = await cpuMs();
    const monitor = await startMonitor(redis.url, flotillaScripts);
    const result =
      variant === 'flotilla'
        ? await runFlotilla(redis, opts)
        : await runBare(redis, { ...opts, git: variant === 'bare+git' });
    await monitor.stop();
    const cpuAfter = await cpuMs();
    const redisCpu = (await redisCpuSeconds(redis.admin)) - redisCpuBefore;
    const calls = diffCalls(callsBefore, await commandCalls(redis.admin));
    const git = await shim.read();
    const gitMsBySubcommand = {};
    for (const call of git)
      gitMsBySubcommand[call.subcommand] = (gitMsBySubcommand[call.subcommand] ?? 0) + call.ms;
    return {
      variant,
      seconds: result.seconds,
      git: {
        calls: git.length,
        ms: git.reduce((sum, call) => sum + call.ms, 0),
        bySubcommand: countBy(git, (c) => c.subcommand),
        msBySubcommand: gitMsBySubcommand,
      },
      redis: {
        roundTrips: monitor.total,
        byCommand: { ...monitor.counts },
        serverCommands: Object.values(calls).reduce((a, b) => a + b, 0),
        cpuMs: redisCpu * 1000,
      },
      cpu: { nodeMs: cpuAfter.self - cpuBefore.self, childrenMs: cpuAfter.children - cpuBefore.children },
    };
  } finally {
    await shim.remove();
    await redis.stop();
  }
}

export async function run(options, log = console.log) {
  putSimOnPath();
  const n = options.n ?? defaults.n;
  const runs = options.runs ?? defaults.runs;
  const slots = options.slots ?? defaults.slots;
  const criticModes =
    (options.critic ?? defaults.critic) === 'both'
      ? [false, true]
      : [(options.critic ?? defaults.critic) === 'on'];
  const variants = options.variants ?? ['bare', 'bare+git', 'flotilla'];
  log(
    `overhead: ${n} independent tasks, 1 host × ${slots} slots, ${runs} run(s) per variant, critic ${criticModes.map((c) => (c ? 'on' : 'off')).join(' and ')}`,
  );
  const results = [];
  for (const critic of criticModes) {
    const seconds = Object.fromEntries(variants.map((v) => [v, []]));
    const ratios = [];
    const gitRatios = [];
    let stages;
    for (let r = 0; r < runs; r++) {
      const redis = await startRedis();
      try {
        const row = {};
        for (const variant of variants) {
          const result =
            variant === 'flotilla'
              ? await runFlotilla(redis, { n, slots, critic })
              : await runBare(redis, { n, slots, critic, git: variant === 'bare+git' });
          row[variant] = result.seconds;
          seconds[variant].push(result.seconds);
          if (result.stages) stages = result.stages;
          log(
            `  critic ${critic ? 'on ' : 'off'} run ${r + 1}: ${variant.padEnd(8)} ${fmt(result.seconds, 1)} s (${fmt(n / result.seconds, 2)} tasks/s)`,
          );
        }
        if (row.flotilla && row.bare) ratios.push(row.flotilla / row.bare);
        if (row.flotilla && row['bare+git']) gitRatios.push(row.flotilla / row['bare+git']);
      } finally {
        await redis.stop();
      }
    }
    const entry = {
      critic,
      n,
      slots,
      seconds: Object.fromEntries(Object.entries(seconds).map(([k, v]) => [k, summarize(v)])),
      ratio: summarize(ratios),
      ratioVsGit: summarize(gitRatios),
      stages,
    };
    results.push(entry);
    log('');
    printTable(
      [
        ['variant', 'seconds', 'tasks/s (median)'],
        ...variants.map((v) => [v, fmtStats(entry.seconds[v], 1, 's'), fmt(n / entry.seconds[v].median, 2)]),
      ],
      log,
    );
    log(`  flotilla/bare      = ${fmtStats(entry.ratio)}   (target ≤ 1.5 at N=200, critic off)`);
    log(`  flotilla/bare+git  = ${fmtStats(entry.ratioVsGit)}   (orchestration alone)`);
    if (stages) {
      log(
        '  flotilla, mean per task (ms): ' +
          Object.entries(stages)
            .map(([k, v]) => `${k} ${fmt(v, 0)}`)
            .join(', '),
      );
    }
  }
  if (options.profile !== false) {
    const profileN = Math.min(n, options.profileN ?? defaults.profileN);
    log('');
    log(
      `profile: ${profileN} tasks per variant, critic ${criticModes.at(-1) ? 'on' : 'off'}, with a logging git shim and MONITOR (slower; not part of the ratios)`,
    );
    const profiles = [];
    for (const variant of variants)
      profiles.push(await profile(variant, { n: profileN, slots, critic: criticModes.at(-1) }));
    const per = (value) => fmt(value / profileN, 1);
    printTable(
      [
        ['per task', ...profiles.map((p) => p.variant)],
        ['git invocations', ...profiles.map((p) => per(p.git.calls))],
        ['git wall ms (sum)', ...profiles.map((p) => per(p.git.ms))],
        ['Redis round trips', ...profiles.map((p) => per(p.redis.roundTrips))],
        ['Redis commands incl. in Lua', ...profiles.map((p) => per(p.redis.serverCommands))],
        ['redis-server CPU ms', ...profiles.map((p) => per(p.redis.cpuMs))],
        ['node (this process) CPU ms', ...profiles.map((p) => per(p.cpu.nodeMs))],
        ['child processes CPU ms', ...profiles.map((p) => per(p.cpu.childrenMs))],
      ],
      log,
    );
    const flotilla = profiles.find((p) => p.variant === 'flotilla');
    if (flotilla) {
      const top = (counts, limit = 12) =>
        Object.entries(counts)
          .sort((a, b) => b[1] - a[1])
          .slice(0, limit)
          .map(([k, v]) => `${k} ${fmt(v / profileN, 1)}`)
          .join(', ');
      log(`  flotilla git calls per task: ${top(flotilla.git.bySubcommand, Infinity)}`);
      log(`  flotilla git wall ms per task: ${top(flotilla.git.msBySubcommand)}`);
      log(`  flotilla Redis round trips per task: ${top(flotilla.redis.byCommand)}`);
    }
    results.push({ profile: profiles, profileN });
  }
  return results;
}
