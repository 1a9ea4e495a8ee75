#!/usr/bin/env node
/**
 * What the origin guard (agent/origin-guard.ts) costs per agent run: two snapshots (`git status`
 * plus a stat of each listed path) of the repository flotilla runs in, here a repository of
 * --files files (default 25,000) with --dirty changed and untracked files; and how many statuses
 * four runs that start and end together take when they share them. Needs `npm run build`.
 *
 *   node bench/origin-guard.js --files 25000 --dirty 50 --runs 7
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { diffOrigin, watchOrigin } from '../dist/workers/agent/origin-guard.js';
import { createOriginStatusReads, readOriginStatus } from '../dist/workers/agent/origin-status.js';

const { values } = parseArgs({
  options: { files: { type: 'string' }, dirty: { type: 'string' }, runs: { type: 'string' } },
});
const files = Number(values.files ?? 25_000);
const dirty = Number(values.dirty ?? 50);
const runs = Number(values.runs ?? 7);

const repo = mkdtempSync(join(tmpdir(), 'flotilla-bench-origin-'));
const git = (...args) => execFileSync('git', ['-C', repo, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
try {
  git('init', '-q');
  for (let i = 0; i < files; i++) {
    const dir = join(repo, `d${Math.floor(i / 500)}`);
    if (i % 500 === 0) mkdirSync(dir);
    writeFileSync(join(dir, `f${i}.txt`), `file ${i}\n`);
  }
  git('add', '-A');
  // No automatic gc: a detached `git gc --auto` would still be writing .git when the folder goes.
  git('-c', 'gc.auto=0', '-c', 'user.name=b', '-c', 'user.email=b@b', 'commit', '-qm', 'seed');
  const dirs = Math.ceil(files / 500);
  for (let i = 0; i < dirty; i++) {
    const d = i % dirs;
    writeFileSync(join(repo, `d${d}`, `f${d * 500 + Math.floor(i / dirs)}.txt`), `changed ${i}\n`);
    writeFileSync(join(repo, `untracked-${i}.txt`), 'new\n');
  }
  const times = [];
  for (let run = 0; run < runs; run++) {
    const started = performance.now();
    const before = await readOriginStatus(repo);
    const after = await readOriginStatus(repo);
    if (!before || !after || diffOrigin(before, after).length !== 0) throw new Error('unexpected change');
    times.push(performance.now() - started);
  }
  // Four slots: their befores join one status; CLIs that exited before an after started share it.
  let reads = 0;
  const shared = createOriginStatusReads((root) => {
    reads++;
    return readOriginStatus(root);
  });
  const slots = 4;
  const watches = await Promise.all(
    Array.from({ length: slots }, () => watchOrigin({ dir: repo, exclude: [], writable: null }, shared)),
  );
  const exited = shared.mark();
  await Promise.all(watches.map((watch) => watch?.changes(exited)));
  times.sort((a, b) => a - b);
  const ms = (t) => `${t.toFixed(0)} ms`;
  console.log(
    `origin guard, ${files} files, ${dirty * 2} dirty entries, ${runs} runs: two snapshots per agent run take min ${ms(times[0])}, median ${ms(times[Math.floor(runs / 2)])}, max ${ms(times.at(-1))}`,
  );
  console.log(`${slots} runs that start and end together: ${reads} git status calls instead of ${slots * 2}`);
} finally {
  rmSync(repo, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
}
