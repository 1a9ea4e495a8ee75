/**
 * What one checkpoint of a running CLI's checkout costs (docs/RECOVERY.md, "Checkpoints"), on an
 * empty repository and on the generated 26,000-file one (bench/lib/big-repo.js): the time of one
 * save (snapshot in a temporary index, commit-tree, push to the mission repo) after the agent
 * changed a few files, the time of a save that finds nothing new, and the git processes flotilla
 * starts for each (a logging git shim on PATH, so the times include its small cost).
 *
 *   node bench/run.js checkpoint --repos empty,generated --runs 10
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { checkoutPool } from '../dist/workers/workspace/checkout-pool.js';
import { checkpointWriter } from '../dist/workers/workspace/checkpoint.js';
import { openRepoCache } from '../dist/workers/workspace/repo-cache.js';
import { leaseCheckout } from '../dist/workers/workspace/warm-checkout.js';
import { generatedRepo, repoStats, scratchClone } from './lib/big-repo.js';
import { installGitShim } from './lib/profile.js';
import { fmtStats, now, printTable, summarize } from './lib/util.js';

const exec = promisify(execFile);

export const defaults = { repos: ['empty', 'generated'], runs: 10 };

async function emptyRepo(dir) {
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'README.md'), '# empty\n');
  const git = (...args) => exec('git', ['-C', dir, '-c', 'user.name=b', '-c', 'user.email=b@b', ...args]);
  await git('init', '--quiet', '--initial-branch=main');
  await git('add', '-A');
  await git('commit', '--quiet', '-m', 'base');
  return dir;
}

async function measure(kind, runs, shim, log) {
  const root = await mkdtemp(join(tmpdir(), 'flotilla-bench-checkpoint-'));
  try {
    const repo =
      kind === 'generated'
        ? await scratchClone(await generatedRepo({}, log), join(root, 'repo.git'))
        : await emptyRepo(join(root, 'repo'));
    const stats = kind === 'generated' ? await repoStats(repo) : { files: 1 };
    const cache = await openRepoCache({ repo, cacheDir: join(root, 'cache') });
    await cache.fetch();
    const { stdout } = await exec('git', ['-C', cache.dir, 'rev-parse', 'refs/remotes/origin/HEAD']);
    const base = stdout.trim();
    const pool = await checkoutPool(cache, { root: join(root, 'checkouts'), keep: 1 });
    const lease = await leaseCheckout(pool, base, undefined);
    // A file the agent keeps rewriting, deep in the tree like real work, and a new one per round.
    const { stdout: listed } = await exec('git', ['-C', lease.dir, 'ls-files'], { maxBuffer: 1 << 28 });
    const tracked = listed.split('\n').filter(Boolean);
    const edited = tracked[Math.floor(tracked.length / 2)] ?? 'README.md';
    const writer = checkpointWriter({
      dir: lease.dir,
      ref: 'refs/flotilla-wip/bench/t/a1',
      baseCommit: base,
      message: 'flotilla checkpoint: bench',
    });
    const changed = [];
    const unchanged = [];
    for (let round = 1; round <= runs; round++) {
      await writeFile(join(lease.dir, edited), `rewritten in round ${round}\n`);
      await writeFile(join(lease.dir, `new-${round}.txt`), `round ${round}\n`);
      await shim.reset();
      let began = now();
      const saved = await writer.save();
      const changedMs = now() - began;
      if (saved === 'unchanged') throw new Error(`${kind}: round ${round} saved nothing`);
      const changedCalls = await shim.read();
      await shim.reset();
      began = now();
      if ((await writer.save()) !== 'unchanged') throw new Error(`${kind}: an unchanged checkout was saved`);
      const unchangedMs = now() - began;
      const unchangedCalls = await shim.read();
      changed.push({
        ms: changedMs,
        processes: changedCalls.length,
        subcommands: changedCalls.map((c) => c.subcommand),
        calls: changedCalls,
      });
      unchanged.push({ ms: unchangedMs, processes: unchangedCalls.length });
    }
    await lease.release();
    return { kind, files: stats.files, changed, unchanged };
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

export async function run(options = {}, log = console.log) {
  const repos = options.repos ?? defaults.repos;
  const runs = options.runs ?? defaults.runs;
  const shim = await installGitShim();
  const results = [];
  try {
    for (const kind of repos) results.push(await measure(kind, runs, shim, log));
  } finally {
    await shim.remove();
  }
  const rows = [
    ['repo', 'tracked files', 'save after a change', 'git processes', 'save, nothing new', 'git processes'],
  ];
  for (const r of results) {
    // The first save also asks for the index path and the base tree once; later ones do not.
    const later = r.changed.slice(1);
    rows.push([
      r.kind,
      r.files,
      fmtStats(summarize(r.changed.map((c) => c.ms)), 0, 'ms'),
      `${r.changed[0]?.processes} first, ${later[0]?.processes ?? '—'} later`,
      fmtStats(summarize(r.unchanged.map((c) => c.ms)), 0, 'ms'),
      String(r.unchanged[0]?.processes ?? '—'),
    ]);
  }
  printTable(rows, log);
  log(`  git per save after a change: ${results[0]?.changed[0]?.subcommands.join(', ')}`);
  for (const r of results) {
    const by = {};
    for (const c of r.changed.slice(1))
      for (const call of c.calls) {
        by[call.subcommand] ??= [];
        by[call.subcommand].push(call.ms);
      }
    const parts = Object.entries(by).map(([name, ms]) => `${name} ${summarize(ms).median.toFixed(0)}`);
    log(`  ${r.kind}, median ms per git command of a later save: ${parts.join(', ')}`);
  }
  return results.map((r) => ({
    kind: r.kind,
    files: r.files,
    changedMs: summarize(r.changed.map((c) => c.ms)),
    unchangedMs: summarize(r.unchanged.map((c) => c.ms)),
    processesFirst: r.changed[0]?.processes,
    processesLater: r.changed[1]?.processes,
    processesUnchanged: r.unchanged[0]?.processes,
  }));
}
