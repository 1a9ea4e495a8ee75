#!/usr/bin/env node
/**
 * What the origin guard (agent/origin-guard.ts) costs per agent run: two snapshots (`git status`
 * plus a stat of each listed path) of the repository flotilla runs in, here a repository of
 * --files files (default 25,000) with --dirty changed and untracked files. Needs `npm run build`.
 *
 *   node bench/origin-guard.js --files 25000 --dirty 50 --runs 7
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { diffOrigin, snapshotOrigin } from '../dist/agent/origin-guard.js';

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
    const before = await snapshotOrigin(repo, []);
    const after = await snapshotOrigin(repo, []);
    if (!before || !after || diffOrigin(before, after).length !== 0) throw new Error('unexpected change');
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  const ms = (t) => `${t.toFixed(0)} ms`;
  console.log(
    `origin guard, ${files} files, ${dirty * 2} dirty entries, ${runs} runs: two snapshots per agent run take min ${ms(times[0])}, median ${ms(times[Math.floor(runs / 2)])}, max ${ms(times.at(-1))}`,
  );
} finally {
  rmSync(repo, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
}
