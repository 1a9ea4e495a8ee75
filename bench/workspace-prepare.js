#!/usr/bin/env node
/**
 * What telling the user about uncommitted changes costs at submit on a large repository
 * (docs/BENCHMARKS.md, "Preparing the workspace"). prepareWorkspace runs `git status` on a local
 * repository to say which changes the mission will not see; this times the whole preparation on a
 * repository of --files files, clean and with a few changes, beside `git status` alone.
 *
 *   npm run build && node bench/workspace-prepare.js --files 25000 --runs 5
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { prepareWorkspace } from '../dist/workers/workspace/prepare-workspace.js';
import { fmtStats, now, printTable, summarize } from './lib/util.js';

const { values } = parseArgs({ options: { files: { type: 'string' }, runs: { type: 'string' } } });
const files = Number(values.files ?? 25_000);
const runs = Number(values.runs ?? 5);

const git = (cwd, ...args) =>
  execFileSync('git', ['-C', cwd, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
const dir = mkdtempSync(join(tmpdir(), 'flotilla-bench-ws-'));
const repo = join(dir, 'repo');
try {
  for (let i = 0; i < files; i++) {
    const folder = join(repo, `d${Math.floor(i / 250)}`);
    if (i % 250 === 0) mkdirSync(folder, { recursive: true });
    writeFileSync(join(folder, `f${i}.txt`), `file ${i}\n`);
  }
  git(repo, 'init', '-q');
  git(repo, 'add', '-A');
  git(repo, '-c', 'user.name=bench', '-c', 'user.email=bench@invalid', 'commit', '-qm', 'seed');

  const time = async (fn) => {
    const samples = [];
    for (let r = 0; r < runs; r++) {
      const start = now();
      await fn(r);
      samples.push(now() - start);
    }
    return summarize(samples);
  };
  let n = 0;
  const prepare = () => prepareWorkspace({ workspace: repo, missionId: `bench-${++n}` });
  const statusOnly = await time(() => git(repo, 'status', '--porcelain', '-z'));
  const clean = await time(prepare);
  for (let i = 0; i < 10; i++) writeFileSync(join(repo, 'd0', `f${i}.txt`), 'changed\n');
  for (let i = 0; i < 5; i++) writeFileSync(join(repo, `new${i}.txt`), 'new\n');
  const dirty = await time(prepare);
  const prepared = await prepare();
  console.log(`Preparing a local workspace of ${files} files (${runs} runs each), ms:`);
  printTable([
    ['what', 'median (min–max)'],
    ['git status --porcelain alone', fmtStats(statusOnly, 1)],
    ['prepareWorkspace, clean repo', fmtStats(clean, 1)],
    ['prepareWorkspace, 15 changed paths', fmtStats(dirty, 1)],
  ]);
  console.log(`note: ${prepared.notes[0] ?? '(none)'}`);
} finally {
  // git may still be finishing background writes in .git; give it a moment.
  rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
}
