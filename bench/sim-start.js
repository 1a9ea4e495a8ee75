/**
 * The stand-in agent's own start-up, which is most of a benchmark task's CPU outside git: the CPU
 * (user + system, all threads) of `flotilla-sim --version`, a host's detection, and of the run of
 * one benchmark task: the prompt flotilla assembles for a task of lib/flotilla.js's taskYaml (a
 * ```sim block with one write), delivered with the sim adapter's flags through
 * examples/bin/flotilla-sim, in a scratch git repository. `node` on an empty module is the floor no
 * launcher gets under. Each process reports its own process.cpuUsage() as it exits, through fd 3
 * (a one-line module loaded with --import), so every run is measured alone, without perf or time.
 */
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadMission } from '../dist/producer/load.js';
import { assemblePrompt } from '../dist/workers/stages/run/prompt.js';
import { missionYaml } from './lib/flotilla.js';
import { fmt, printTable, ROOT, summarize } from './lib/util.js';

export const defaults = { runs: 20 };

const LAUNCHER = join(ROOT, 'examples', 'bin', 'flotilla-sim');
const REPORT_CPU = `data:text/javascript,${encodeURIComponent(
  "import { writeSync } from 'node:fs'; process.on('exit', () => { const u = process.cpuUsage(); writeSync(3, String((u.user + u.system) / 1000)); });",
)}`;

/** The prompt file flotilla writes for task t00001 of a one-task benchmark mission, attempt 1. */
async function benchmarkPrompt(dir) {
  const file = join(dir, 'mission.yaml');
  await writeFile(file, missionYaml([{ id: 't00001' }]));
  const { mission, problems } = await loadMission(file);
  if (!mission) throw new Error(`the benchmark mission does not load: ${JSON.stringify(problems)}`);
  const [task] = mission.tasks;
  return assemblePrompt({
    personality: '',
    missionGoal: mission.goal,
    task,
    handoff: [],
    controlMode: task.controlMode,
    resultPath: '.planning/dispatch/t00001-a1-RESULT.md',
  });
}

/** CPU ms of one process, as it reported at exit. */
function cpuOf(args, cwd) {
  const done = spawnSync(process.execPath, ['--import', REPORT_CPU, ...args], {
    cwd,
    stdio: ['ignore', 'ignore', 'pipe', 'pipe'],
    encoding: 'utf8',
  });
  if (done.status !== 0) throw new Error(`${args.join(' ')}: exit ${done.status}: ${done.stderr}`);
  return Number(done.output[3]);
}

export async function run(options = {}) {
  const runs = options.runs ?? defaults.runs;
  const dir = await mkdtemp(join(tmpdir(), 'flotilla-bench-sim-'));
  try {
    const repo = join(dir, 'repo');
    await mkdir(join(repo, '.planning', 'dispatch'), { recursive: true });
    spawnSync('git', ['init', '-q', repo]);
    const promptFile = '.planning/dispatch/t00001-a1-PROMPT.md';
    await writeFile(join(repo, promptFile), await benchmarkPrompt(dir));
    const empty = join(dir, 'empty.mjs');
    await writeFile(empty, '');

    const cases = {
      'node, empty module': [empty],
      '--version': [LAUNCHER, '--version'],
      'task run (one write)': [
        LAUNCHER,
        ...['--model', 'sim-medium', '--output-format', 'json', '--prompt-file', promptFile],
      ],
    };
    const samples = Object.fromEntries(Object.keys(cases).map((name) => [name, []]));
    // Interleaved, so a change in the machine's load touches every case alike.
    for (let i = 0; i < runs; i++) {
      for (const [name, args] of Object.entries(cases)) samples[name].push(cpuOf(args, repo));
    }
    const stats = Object.fromEntries(Object.entries(samples).map(([name, ms]) => [name, summarize(ms)]));
    printTable([
      ['process', 'CPU ms, median', 'min–max', 'runs'],
      ...Object.entries(stats).map(([name, s]) => [
        name,
        fmt(s.median, 1),
        `${fmt(s.min, 1)}–${fmt(s.max, 1)}`,
        s.n,
      ]),
    ]);
    return stats;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
