/**
 * A loud agent's output and the host's memory: one task whose stand-in agent prints `mb`
 * megabytes of log lines on stdout or stderr (flotilla-sim's `print` step, a megabyte a write) before it
 * writes its result file and its JSON result line, on one in-process host with one slot. Each size
 * runs in a child process of its own, which reports the task's outcome and its own peak RSS
 * (process.resourceUsage().maxRSS: the host, the client and the pipeline in one process, as
 * `flotilla run` has them; the agent and redis-server are processes of their own and not in it).
 *
 *   node bench/run.js output --sizes 1,100,1000 --streams stdout,stderr --runs 1
 *
 * The same file runs against an older build (copy it into that checkout's bench/): it only uses
 * the library as bench/lib/flotilla.js starts it.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startRedis } from './lib/redis.js';
import { fmt, printTable, withDeadline } from './lib/util.js';

export const defaults = { sizes: [1, 100, 1000], runs: 1, streams: ['stdout'] };

const CHILD_FLAG = '--output-child';
const MB = 1024 * 1024;

export async function run(options = {}) {
  const sizes = options.sizes ?? defaults.sizes;
  const runs = options.runs ?? defaults.runs;
  const streams = options.streams ?? defaults.streams;
  const redis = await startRedis();
  const results = [];
  try {
    for (let i = 0; i < runs; i++) {
      for (const stream of streams) {
        for (const mb of sizes) results.push({ mb, stream, ...(await child(redis.url, mb, stream)) });
      }
    }
  } finally {
    await redis.stop();
  }
  printTable([
    ['printed', 'task', 'host peak RSS', 'seconds', 'error'],
    ...results.map((r) => [
      `${r.mb} MB on ${r.stream}`,
      r.task,
      `${fmt(r.maxRssMb, 0)} MB`,
      fmt(r.seconds, 1),
      (r.error ?? '').replace(/\s+/g, ' ').slice(0, 90),
    ]),
  ]);
  return results;
}

/** One size in a fresh process, so its peak RSS is its own. */
function child(redisUrl, mb, stream) {
  return new Promise((done, fail) => {
    const args = [fileURLToPath(import.meta.url), CHILD_FLAG, redisUrl, String(mb), stream];
    const proc = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    proc.stdout.on('data', (chunk) => {
      out += chunk;
    });
    proc.on('error', fail);
    proc.on('exit', (code) => {
      const line = out.trim().split('\n').at(-1) ?? '';
      try {
        done(JSON.parse(line));
      } catch {
        fail(new Error(`the ${mb} MB run exited ${code} without a report: ${out.slice(-500)}`));
      }
    });
  });
}

async function childMain(redisUrl, mb, stream) {
  const { startFlotilla } = await import('./lib/flotilla.js');
  const cluster = await startFlotilla(redisUrl, { slots: 1 });
  const file = await cluster.writeMission(
    [
      'goal: a loud agent',
      'workspace: ./ws',
      'defaults: { max_attempts: 1, timeout: 10m }',
      'tasks:',
      '  - id: loud',
      '    title: A loud agent',
      '    capability: code_implementation',
      '    critic: false',
      '    exit_criteria: ["test -f loud.txt"]',
      '    description: |',
      '      Print a lot, then write loud.txt.',
      '',
      '      ```sim',
      `      - print: {mb: ${mb}, stream: ${stream}}`,
      '      - write: {path: loud.txt, content: done}',
      '      - cost_usd: 0.01',
      '      ```',
      '',
    ].join('\n'),
  );
  const started = performance.now();
  const { id } = await cluster.client.submit(file);
  const status = await withDeadline(cluster.client.wait(id, { pollMs: 200 }), 15 * 60_000, `${mb} MB`);
  const seconds = (performance.now() - started) / 1000;
  const task = status.tasks.find((t) => t.id === 'loud');
  const report = {
    task: task?.status ?? 'missing',
    ...(task?.error ? { error: task.error } : {}),
    maxRssMb: (process.resourceUsage().maxRSS * 1024) / MB,
    seconds,
  };
  await cluster.stop();
  process.stdout.write(`${JSON.stringify(report)}\n`);
  process.exit(0);
}

if (process.argv[2] === CHILD_FLAG) {
  await childMain(process.argv[3], Number(process.argv[4]), process.argv[5] ?? 'stdout');
}
