/**
 * Large repositories: a task's git cost must not grow with the size of the tree (issue 11). The
 * same trivial missions (the stand-in agent writes one file, criterion `test -f`, critic off) on
 * one host with 4 slots, on an empty repository and on large ones (bench/lib/big-repo.js):
 *
 *   cold  a fresh host (new FLOTILLA_HOME: no repo cache, no checkouts) runs the first mission;
 *   warm  the same host then runs a second mission on the same repository.
 *
 * Reported: seconds, the ratio to the empty repository (same task count, same cold/warm), and per
 * task the git processes started and their summed wall time (a logging git shim on PATH, so every
 * figure here includes its small cost, the empty repository's too). One full checkout of each tree
 * is timed on its own as the yardstick for "cold costs one checkout per slot".
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { generatedRepo, linuxRepo, repoStats, scratchClone } from './lib/big-repo.js';
import { missionYaml, startFlotilla, taskId } from './lib/flotilla.js';
import { countBy, installGitShim } from './lib/profile.js';
import { startRedis } from './lib/redis.js';
import { fmt, now, printTable, putSimOnPath, withDeadline } from './lib/util.js';
import { stageTimes } from './overhead.js';

const exec = promisify(execFile);

export const defaults = {
  repos: ['empty', 'generated', 'linux'],
  counts: [8, 40],
  slots: 4,
  phases: ['cold', 'warm'],
};

async function sourceRepo(kind, log) {
  if (kind === 'generated') return generatedRepo({}, log);
  if (kind === 'linux') return linuxRepo(log);
  return null;
}

/** Seconds for one plain full checkout of the tree: what "one checkout per slot" costs here. */
async function oneCheckoutSeconds(source) {
  const dir = await mkdtemp(join(tmpdir(), 'flotilla-bench-checkout-'));
  try {
    const began = now();
    await exec('git', [
      '--git-dir',
      source,
      'worktree',
      'add',
      '--quiet',
      '--detach',
      join(dir, 'tree'),
      'HEAD',
    ]);
    return (now() - began) / 1000;
  } finally {
    await exec('git', ['--git-dir', source, 'worktree', 'remove', '--force', join(dir, 'tree')]).catch(
      () => {},
    );
    await rm(dir, { recursive: true, force: true });
  }
}

async function runMission(cluster, workspace, n, label, shim, redisUrl) {
  const tasks = Array.from({ length: n }, (_, i) => ({ id: taskId(i + 1) }));
  const file = join(cluster.dir, `${label}.yaml`);
  await writeFile(
    file,
    missionYaml(tasks, `large-repo ${label}`).replace('workspace: ./ws', `workspace: ${workspace}`),
  );
  await shim.reset();
  const started = now();
  const { id } = await cluster.client.submit(file);
  const status = await withDeadline(cluster.client.wait(id, { pollMs: 200 }), 90 * 60_000, label);
  const seconds = (now() - started) / 1000;
  if (status.status !== 'done') {
    const bad = status.tasks.filter((t) => t.status !== 'completed').slice(0, 3);
    throw new Error(`${label}: mission ${status.status}: ${JSON.stringify(bad)}`);
  }
  const calls = await shim.read();
  // Where the time goes, stage by stage (as overhead.js reports it): the BullMQ jobs' own times.
  const stages = await stageTimes(redisUrl, cluster, id, n).catch(() => null);
  const msBy = {};
  for (const call of calls) msBy[call.subcommand] = (msBy[call.subcommand] ?? 0) + call.ms;
  // Full checkouts made: warm-pool checkouts (under checkouts/) and per-stage worktrees (elsewhere).
  const adds = calls.filter((c) => c.subcommand === 'worktree add');
  const poolAdds = adds.filter((c) => c.args.some((a) => a.includes('/checkouts/'))).length;
  return {
    seconds,
    poolCheckouts: poolAdds,
    otherWorktrees: adds.length - poolAdds,
    gitCalls: calls.length,
    gitMs: calls.reduce((sum, call) => sum + call.ms, 0),
    bySubcommand: countBy(calls, (c) => c.subcommand),
    msBySubcommand: msBy,
    stages,
  };
}

/** One repository kind at one task count: a fresh host runs a cold mission, then a warm one. */
async function runPair(redis, kind, source, n, slots, shim, phases) {
  const cluster = await startFlotilla(redis.url, { slots });
  try {
    const workspace = join(cluster.dir, 'ws.git');
    if (source) await scratchClone(source, workspace);
    else await exec('mkdir', ['-p', workspace]);
    const out = {};
    // The first mission always runs (it makes the host warm); `--phases warm` just does not report it.
    out.cold = await runMission(cluster, workspace, n, `${kind}-${n}-cold`, shim, redis.url);
    if (phases.includes('warm'))
      out.warm = await runMission(cluster, workspace, n, `${kind}-${n}-warm`, shim, redis.url);
    if (!phases.includes('cold')) delete out.cold;
    return out;
  } finally {
    await cluster.stop();
  }
}

const top = (counts, n) =>
  Object.entries(counts)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 8)
    .map(([k, v]) => `${k} ${fmt(v / n, 1)}`)
    .join(', ');

export async function run(options, log = console.log) {
  putSimOnPath();
  const repos = options.repos ?? defaults.repos;
  const counts = options.counts ?? defaults.counts;
  const slots = options.slots ?? defaults.slots;
  const phases = options.phases ?? defaults.phases;
  log(
    `large-repo: ${repos.join(', ')} × ${counts.join(', ')} tasks, 1 host × ${slots} slots, cold then warm, critic off`,
  );
  const sources = {};
  const trees = {};
  for (const kind of repos) {
    sources[kind] = await sourceRepo(kind, log);
    if (sources[kind]) {
      trees[kind] = {
        ...(await repoStats(sources[kind])),
        checkoutSeconds: await oneCheckoutSeconds(sources[kind]),
      };
      log(
        `  ${kind}: ${trees[kind].files} files, ${fmt(trees[kind].mib, 0)} MiB packed, ${trees[kind].commits} commits; one full checkout ${fmt(trees[kind].checkoutSeconds, 1)} s`,
      );
    }
  }
  const redis = await startRedis();
  const shim = await installGitShim();
  const results = [];
  try {
    for (const n of counts) {
      for (const kind of repos) {
        const pair = await runPair(redis, kind, sources[kind], n, slots, shim, phases);
        for (const phase of phases) {
          const r = pair[phase];
          results.push({ kind, n, phase, ...r });
          log(
            `  ${kind.padEnd(9)} ${String(n).padStart(3)} tasks ${phase}: ${fmt(r.seconds, 1)} s, git ${fmt(r.gitCalls / n, 1)} processes and ${fmt(r.gitMs / n, 0)} ms per task; full checkouts: ${r.poolCheckouts} warm-pool, ${r.otherWorktrees} other worktrees`,
          );
          log(`      git per task: ${top(r.bySubcommand, n)}`);
          if (r.stages)
            log(
              `      stage ms per task: ${Object.entries(r.stages)
                .map(([k, v]) => `${k} ${fmt(v, 0)}`)
                .join(', ')}`,
            );
          log(`      git ms per task: ${top(r.msBySubcommand, n)}`);
        }
      }
    }
  } finally {
    await shim.remove();
    await redis.stop();
  }
  const empty = (n, phase) => results.find((r) => r.kind === 'empty' && r.n === n && r.phase === phase);
  log('');
  printTable(
    [
      [
        'repo',
        'tasks',
        'phase',
        'seconds',
        '/ empty',
        'git procs/task',
        'git ms/task',
        'pool checkouts',
        'other worktrees',
      ],
      ...results.map((r) => [
        r.kind,
        r.n,
        r.phase,
        fmt(r.seconds, 1),
        empty(r.n, r.phase) ? fmt(r.seconds / empty(r.n, r.phase).seconds, 2) : '—',
        fmt(r.gitCalls / r.n, 1),
        fmt(r.gitMs / r.n, 0),
        r.poolCheckouts,
        r.otherWorktrees,
      ]),
    ],
    log,
  );
  return { trees, results };
}
