#!/usr/bin/env node
/**
 * flotilla's benchmarks (docs/BENCHMARKS.md). `npm run bench` builds and runs them all at their
 * default sizes; pick some and scale them with flags:
 *
 *   node bench/run.js                               # all, default sizes (about 15 minutes here)
 *   node bench/run.js overhead --n 200 --runs 3 --critic both   # the sizes docs/BENCHMARKS.md reports
 *   node bench/run.js schedule --runs 3 --seed 7
 *   node bench/run.js scale --sizes 1000,2000,5000,10000 --e2e 300 --workers 2 --missions 200
 *   node bench/run.js scale --sizes 0 --e2e 10000 --shape deep-wide --workers 20 --slots 1 --missions 0
 *   node bench/run.js recovery --runs 3 --locks default,30000:30000:15000
 *   node bench/run.js bullmq --jobs 10000           # raw BullMQ on this machine, for calibration
 *   node bench/run.js large-repo --repos empty,generated,linux --counts 8,40   # git cost on big trees
 *   node bench/run.js integrate --n 150             # the gate's merges alone: one at a time and batched
 *   node bench/run.js audit --n 2000 --runs 3       # the hash-chained audit append against RPUSH
 *   node bench/run.js board --sizes 30,300,10000    # the mission page's size and time
 *   node bench/run.js checkpoint --repos empty,generated --runs 10   # one checkpoint of a running checkout
 *   node bench/run.js sim-start --runs 20          # the stand-in agent's CPU: --version and one task's run
 *   node bench/run.js checkout-cycle --cycles 20   # one task's workspace work on big trees, walks against scans
 *   node bench/run.js index-update --sizes 1000,10000,40000 --runs 10   # the index moved in-process against git
 *   node bench/run.js fs-calls --n 3000 --runs 3   # one file call, asynchronous against synchronous
 *   node bench/run.js output --sizes 1,100,1000 --streams stdout,stderr   # a loud agent: host peak RSS and outcome by MB printed
 *   node bench/run.js long-run --n 20             # a 20-minute agent run on the defaults (not in the default set)
 *   node bench/run.js … --json results.json         # also write every figure as JSON
 *
 * Every benchmark starts its own redis-server on a free loopback port and needs `npm run build`.
 */
import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { machine } from './lib/machine.js';

const BENCHMARKS = {
  bullmq: () => import('./bullmq.js'),
  overhead: () => import('./overhead.js'),
  integrate: () => import('./integrate.js'),
  schedule: () => import('./schedule.js'),
  scale: () => import('./scale.js'),
  recovery: () => import('./recovery.js'),
  'large-repo': () => import('./large-repo.js'),
  audit: () => import('./audit-chain.js'),
  board: () => import('./board.js'),
  checkpoint: () => import('./checkpoint.js'),
  'sim-start': () => import('./sim-start.js'),
  'checkout-cycle': () => import('./checkout-cycle.js'),
  'index-update': () => import('./index-update.js'),
  'fs-calls': () => import('./fs-calls.js'),
  output: () => import('./output.js'),
  'long-run': () => import('./long-run.js'),
};

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    n: { type: 'string' },
    jobs: { type: 'string' },
    runs: { type: 'string' },
    slots: { type: 'string' },
    critic: { type: 'string' },
    variants: { type: 'string' },
    'no-profile': { type: 'boolean' },
    'profile-n': { type: 'string' },
    tasks: { type: 'string' },
    seed: { type: 'string' },
    stretch: { type: 'string' },
    startup: { type: 'string' },
    sizes: { type: 'string' },
    e2e: { type: 'string' },
    workers: { type: 'string' },
    missions: { type: 'string' },
    'mission-tasks': { type: 'string' },
    shape: { type: 'string' },
    width: { type: 'string' },
    window: { type: 'string' },
    progress: { type: 'string' },
    idle: { type: 'string' },
    home: { type: 'string' },
    locks: { type: 'string' },
    repos: { type: 'string' },
    counts: { type: 'string' },
    phases: { type: 'string' },
    blocks: { type: 'string' },
    cycles: { type: 'string' },
    modes: { type: 'string' },
    streams: { type: 'string' },
    json: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  },
});

if (values.help) {
  console.log(`usage: node bench/run.js [${Object.keys(BENCHMARKS).join('|')} …] [--n N] [--runs R] [--json FILE]
  overhead  --n 50 --runs 1 --slots 4 --critic off|on|both --variants bare,bare+git,flotilla --profile-n 20 --no-profile
  schedule  --tasks 30 --slots 4 --runs 2 --seed 4 --stretch 1   (stretch 10: tasks of 10–30 s)
            --startup inside|outside (the stand-in's own start-up within a task's time, or on top)
  scale     --sizes 1000,10000 --e2e 60 --workers 2 --slots 2 --missions 50 --mission-tasks 1 --runs 1
            --shape wide|deep-wide --width 100 (deep-wide: layers of 100, e2e/100 deep, cross-linked)
            --window N (per-window figures, default e2e/10) --progress N (stderr line every N tasks)
            --idle S (Redis load with every host idle, default 20; 0 skips)  --sizes 0 skips submit + state
            --home shared|own (one FLOTILLA_HOME for all worker processes, or one each)
  recovery  --runs 2 --locks default,30000:30000:15000   (default | lock ms[:stalled-check interval ms[:renew ms]])
            --blocks 5000,9000   instead: does an event-loop block that long hand a job to another host?
  bullmq    --jobs 10000 --runs 3
  large-repo --repos empty,generated,linux --counts 8,40 --slots 4 --phases cold,warm   (large repos cached in ~/.cache/flotilla-bench)
  integrate --n 150   (the gate's merges alone, without agents: one at a time against batched)
  audit     --n 2000 --runs 3   (chained audit append vs RPUSH; chain check, receipt sign/verify)
  board     --sizes 30,300,10000 --runs 5   (the mission page: bytes, times, store reads)
  checkpoint --repos empty,generated --runs 10   (one checkpoint of a running CLI's checkout: ms, git processes)
  sim-start --runs 20   (CPU of flotilla-sim --version and of one benchmark task's run, medians)
  checkout-cycle --repos generated,linux --cycles 20 --modes off,on   (one task's workspace work alone: FLOTILLA_CHECKOUT_SCAN walks against scans)
  index-update --sizes 1000,10000,40000 --runs 10   (the checkout's index moved in-process against git update-index, by index size)
  fs-calls  --n 3000 --runs 3   (one file call's CPU and wall, asynchronous against synchronous; a new file against a rewrite)
  output    --sizes 1,100,1000 --streams stdout,stderr --runs 1   (a task whose agent prints that many MB: its outcome and the host's peak RSS)
  long-run  --n 20   (one agent run of that many minutes on the default lock, heartbeat and checkpoints: lock left, checkpoints, RSS)
  --runs applies to every benchmark chosen; defaults: overhead 1, schedule 2, scale 1, recovery 2, bullmq 3`);
  process.exit(0);
}

const int = (value) => (value === undefined ? undefined : Number.parseInt(value, 10));
const list = (value) =>
  value === undefined ? undefined : value.split(',').map((v) => Number.parseInt(v, 10));
const options = {
  n: int(values.n),
  jobs: int(values.jobs),
  runs: int(values.runs),
  slots: int(values.slots),
  critic: values.critic,
  variants: values.variants?.split(','),
  profile: values['no-profile'] ? false : undefined,
  profileN: int(values['profile-n']),
  tasks: int(values.tasks),
  seed: int(values.seed),
  stretch: values.stretch === undefined ? undefined : Number(values.stretch),
  startup: values.startup,
  sizes: list(values.sizes),
  e2e: int(values.e2e),
  workers: int(values.workers),
  missions: int(values.missions),
  missionTasks: int(values['mission-tasks']),
  shape: values.shape,
  width: int(values.width),
  window: int(values.window),
  progress: int(values.progress),
  idle: int(values.idle),
  home: values.home,
  locks: values.locks?.split(','),
  repos: values.repos?.split(','),
  counts: list(values.counts),
  phases: values.phases?.split(','),
  blocks: list(values.blocks),
  cycles: int(values.cycles),
  modes: values.modes?.split(','),
  streams: values.streams?.split(','),
};

const unknown = positionals.filter((name) => !(name in BENCHMARKS));
if (unknown.length > 0) {
  console.error(`unknown benchmark: ${unknown.join(', ')} (known: ${Object.keys(BENCHMARKS).join(', ')})`);
  process.exit(2);
}
const chosen =
  positionals.length > 0 ? positionals : ['bullmq', 'overhead', 'schedule', 'scale', 'recovery', 'audit'];

const report = { machine: await machine(), startedAt: new Date().toISOString(), results: {} };
console.log(
  `machine: ${report.machine.nproc} CPUs (${report.machine.cpu}), ${report.machine.memory} RAM, node ${report.machine.node}, ${report.machine.redis}, ${report.machine.git}, bullmq ${report.machine.bullmq}, load ${report.machine.load}`,
);
const started = performance.now();
for (const name of chosen) {
  const began = performance.now();
  console.log(`\n=== ${name} ===`);
  const module = await BENCHMARKS[name]();
  report.results[name] = await module.run(options);
  console.log(`(${name}: ${((performance.now() - began) / 1000).toFixed(0)} s)`);
}
report.seconds = (performance.now() - started) / 1000;
console.log(`\nall done in ${report.seconds.toFixed(0)} s`);
if (values.json) await writeFile(values.json, `${JSON.stringify(report, null, 2)}\n`);
// Worker hosts leave timers (BullMQ, ioredis) behind for a moment; the report is complete.
process.exit(0);
