/**
 * flotilla as the benchmarks drive it: the compiled library from dist/ (run `npm run build` first),
 * in-process worker hosts on the stand-in agent, and mission files written to a scratch folder.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FlotillaClient } from '../../dist/client.js';
import { loadConfig } from '../../dist/shared/config.js';
import { silentLogger } from '../../dist/shared/logger.js';
import { startHost } from '../../dist/workers/host/host.js';
import { fileMonitor } from '../../dist/workers/workspace/file-monitor.js';
import { putSimOnPath, SIM_ADAPTERS, uniquePrefix } from './util.js';

/** A config for one benchmark: its own prefix and home, the sim adapters, silent logs. */
export function benchConfig(redisUrl, dir, env = {}) {
  return loadConfig({
    ...process.env,
    REDIS_URL: redisUrl,
    FLOTILLA_PREFIX: uniquePrefix(),
    FLOTILLA_HOME: join(dir, 'home'),
    FLOTILLA_ADAPTERS: SIM_ADAPTERS,
    LOG_LEVEL: 'silent',
    ...env,
  });
}

/** A client and `hosts` in-process hosts on one Redis, like `flotilla run` does on one machine. */
export async function startFlotilla(redisUrl, options = {}) {
  putSimOnPath();
  const dir = await mkdtemp(join(tmpdir(), 'flotilla-bench-'));
  const config = benchConfig(redisUrl, dir, options.env);
  const client = await FlotillaClient.connect({ config, redisUrl });
  const hosts = [];
  for (let i = 0; i < (options.hosts ?? 1); i++) {
    hosts.push(
      await startHost({
        config,
        redisUrl,
        adaptersDir: SIM_ADAPTERS,
        hostId: `bench-host-${i + 1}`,
        slots: options.slots ?? 4,
        logger: silentLogger(),
        graceMs: 2_000,
        heartbeatMs: 1_000,
      }),
    );
  }
  let missions = 0;
  return {
    config,
    client,
    hosts,
    dir,
    /** Writes the mission (workspace `./ws`) into a fresh folder; returns the file's path. */
    async writeMission(yaml) {
      const missionDir = join(dir, `mission-${++missions}`);
      await mkdir(join(missionDir, 'ws'), { recursive: true });
      const file = join(missionDir, 'mission.yaml');
      await writeFile(file, yaml);
      return file;
    },
    async stop() {
      await Promise.all(hosts.map((h) => h.close({ force: true })));
      await client.close();
      // As a worker's prune does: stop watching the checkouts before deleting them, or Watchman
      // spends the next benchmark's CPU on the deletion of every watched tree.
      await (await fileMonitor())?.forgetUnder(dir);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** A sim block inside a YAML block scalar, indented for `description: |`. */
function simBlock(steps, spaces = 6) {
  const pad = ' '.repeat(spaces);
  return ['```sim', ...steps, '```'].map((line) => pad + line).join('\n');
}

/**
 * One task of a benchmark mission: the sim writes `path` (default `<id>.txt`, after an optional
 * sleep) and the one exit criterion checks that file exists. With `wholeRun`, the sleep lasts until
 * `sleepMs` after the sim's start (`sleep_until`), so the CLI's run takes `sleepMs` in all.
 */
export function taskYaml({
  id,
  deps = [],
  sleepMs = 0,
  wholeRun = false,
  critic = false,
  path = `${id}.txt`,
}) {
  const steps = [];
  if (sleepMs > 0) steps.push(`- ${wholeRun ? 'sleep_until' : 'sleep'}: ${sleepMs}ms`);
  steps.push(`- write: {path: ${path}, content: "${id} done"}`);
  if (critic) steps.push('- review: {score: 9}');
  return [
    `  - id: ${id}`,
    `    title: Task ${id}`,
    '    capability: code_implementation',
    `    critic: ${critic}`,
    `    depends_on: [${deps.join(', ')}]`,
    `    exit_criteria: ["test -f ${path}"]`,
    '    description: |',
    `      Benchmark task ${id}.`,
    '',
    simBlock(steps),
  ].join('\n');
}

export function missionYaml(tasks, goal = 'benchmark mission') {
  return [
    `goal: ${goal}`,
    'workspace: ./ws',
    'defaults: { max_attempts: 1, timeout: 5m, backoff: 1s }',
    'tasks:',
    ...tasks.map(taskYaml),
    '',
  ].join('\n');
}

export const taskId = (i) => `t${String(i).padStart(5, '0')}`;
