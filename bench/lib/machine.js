/** What the figures were measured on, for the report's header and docs/BENCHMARKS.md. */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { ROOT } from './util.js';

function command(file, args) {
  try {
    return execFileSync(file, args, { stdio: ['ignore', 'pipe', 'ignore'] })
      .toString()
      .trim();
  } catch {
    return 'unknown';
  }
}

export async function machine() {
  const version = (pkg) =>
    JSON.parse(readFileSync(join(ROOT, 'node_modules', pkg, 'package.json'), 'utf8')).version;
  return {
    nproc: Number(command('nproc', [])) || cpus().length,
    cpu: cpus()[0]?.model ?? 'unknown',
    memory: `${(totalmem() / 2 ** 30).toFixed(0)} GiB`,
    node: process.version,
    redis: command('redis-server', ['--version']).split(' ').slice(0, 3).join(' '),
    git: command('git', ['--version']),
    bullmq: version('bullmq'),
    ioredis: version('ioredis'),
    load: loadavg()
      .map((l) => l.toFixed(2))
      .join(' '),
  };
}
