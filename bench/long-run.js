/**
 * An hours-long agent run on flotilla's defaults, compressed only in length: one task whose
 * stand-in agent works for `minutes` (a file written each minute, then a minute's sleep) under
 * `timeout: 3h`, on one in-process host with flotilla's default lock (10 s, renewed every 2.5 s),
 * stalled check, heartbeat and checkpoint interval (2 m). Every 5 s it samples what keeps such a
 * run alive and what it costs: the run job's lock (its remaining time must never reach 0), the
 * host's registry entry (its TTL), the attempt's work-in-progress ref (a new checkpoint commit
 * every interval while files change), the process's RSS, and the task's state. The run must end
 * done, in its first attempt, never taken over.
 *
 *   node bench/run.js long-run --n 20      # minutes (default 20); not in `npm run bench`'s default set
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startFlotilla } from './lib/flotilla.js';
import { startRedis } from './lib/redis.js';
import { fmt, printTable } from './lib/util.js';

export const defaults = { n: 20 };
const execFileP = promisify(execFile);

export async function run(options = {}) {
  const minutes = options.n ?? defaults.n;
  const redis = await startRedis();
  const cluster = await startFlotilla(redis.url, { slots: 1, env: { LOG_LEVEL: 'silent' } });
  const { prefix } = cluster.config;
  const steps = [];
  for (let i = 1; i <= minutes; i++) {
    steps.push(`      - write: {path: progress-${i}.txt, content: "minute ${i}"}`, '      - sleep: 60s');
  }
  steps.push('      - write: {path: long.txt, content: done}');
  const file = await cluster.writeMission(
    [
      'goal: an hours-long run, shortened',
      'workspace: ./ws',
      'defaults: { max_attempts: 1, timeout: 3h }',
      'tasks:',
      '  - id: long',
      '    title: Work for a long time',
      '    capability: code_implementation',
      '    critic: false',
      '    exit_criteria: ["test -f long.txt"]',
      '    description: |',
      '      Work steadily.',
      '',
      '      ```sim',
      ...steps,
      '      ```',
      '',
    ].join('\n'),
  );
  const ws = join(file, '..', 'ws');
  const started = Date.now();
  const { id } = await cluster.client.submit(file);
  const lockKey = `${prefix}:dispatch.code_implementation:${id}.long.a1.run:lock`;
  const hostKey = `${prefix}:host:bench-host-1`;
  const wipRef = `refs/flotilla-wip/${id}/long/a1`;
  const samples = [];
  const checkpoints = new Set();
  let status;
  for (;;) {
    status = await cluster.client.status(id);
    const task = status.tasks[0];
    const [lockMs, hostMs] = await Promise.all([
      cluster.client.redis.pttl(lockKey),
      cluster.client.redis.pttl(hostKey),
    ]);
    const wip = await execFileP('git', ['-C', ws, 'rev-parse', '--verify', '-q', wipRef]).then(
      (r) => r.stdout.trim(),
      () => '',
    );
    if (wip) checkpoints.add(wip);
    samples.push({
      at: (Date.now() - started) / 1000,
      task: task?.status,
      attempts: task?.attempts,
      lockMs,
      hostMs,
      rssMb: process.memoryUsage().rss / 2 ** 20,
    });
    if (status.status !== 'running') break;
    await new Promise((resolve) => setTimeout(resolve, 5_000));
  }
  const running = samples.filter((s) => s.task === 'running');
  const result = {
    minutes,
    outcome: status.status,
    attempts: status.tasks[0]?.attempts ?? 0,
    seconds: (Date.now() - started) / 1000,
    runningSamples: running.length,
    // -2: no key (the lock gone while the task ran would be a takeover waiting to happen).
    lockMinMs: Math.min(...running.map((s) => s.lockMs)),
    hostTtlMinMs: Math.min(...samples.map((s) => s.hostMs)),
    checkpoints: checkpoints.size,
    rssFirstMb: samples[0]?.rssMb ?? 0,
    rssMaxMb: Math.max(...samples.map((s) => s.rssMb)),
    rssLastMb: samples.at(-1)?.rssMb ?? 0,
  };
  await cluster.stop();
  await redis.stop();
  printTable([
    [
      'minutes',
      'outcome',
      'attempts',
      'lock left (min)',
      'host TTL (min)',
      'checkpoints',
      'RSS first/max/last',
    ],
    [
      String(minutes),
      result.outcome,
      String(result.attempts),
      `${result.lockMinMs} ms over ${result.runningSamples} samples`,
      `${result.hostTtlMinMs} ms`,
      String(result.checkpoints),
      `${fmt(result.rssFirstMb, 0)}/${fmt(result.rssMaxMb, 0)}/${fmt(result.rssLastMb, 0)} MB`,
    ],
  ]);
  return result;
}
