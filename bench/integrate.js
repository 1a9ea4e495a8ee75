/**
 * The gate's serial section alone: how many approved attempts per second one host can merge into
 * a mission's integration branch, without agents, Redis or checkouts around it. N attempts, each
 * one work commit adding its own file on the mission's base (made with fast-import, so setting
 * up costs nothing to speak of), are integrated with flotilla's integrateAttempt:
 *
 *   one at a time   each gate waits for the one before (batches of one): the floor, and what a
 *                   host does when its gates arrive spread out
 *   all at once     N gates ask together; the host merges them in batches of up to 32, one
 *                   publish each (group commit)
 *
 * for a mission repo given as a local path (merge in the repo, update-ref) and as a URL (merge in
 * the host's cache, fetch + push --force-with-lease). A git shim on PATH counts processes.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { attemptRef } from '../dist/shared/contracts.js';
import { integrateAttempt } from '../dist/workers/workspace/integrate.js';
import { prepareWorkspace } from '../dist/workers/workspace/prepare-workspace.js';
import { openRepoCache } from '../dist/workers/workspace/repo-cache.js';
import { countBy, installGitShim } from './lib/profile.js';
import { fmt, now, printTable } from './lib/util.js';

export const defaults = { n: 150, runs: 1 };

/** N work commits on `base`, each adding `tNNNNN.txt`, published as attempt refs. */
function makeAttempts(repo, missionId, base, n) {
  const lines = [];
  for (let i = 1; i <= n; i++) {
    const id = `t${String(i).padStart(5, '0')}`;
    const content = `${id} done\n`;
    lines.push(
      `commit ${attemptRef(missionId, id, 1)}`,
      `mark :${i}`,
      'committer bench <bench@localhost> 1700000000 +0000',
      'data 5',
      'work',
      `from ${base}`,
      `M 100644 inline ${id}.txt`,
      `data ${Buffer.byteLength(content)}`,
      content,
    );
  }
  lines.push('done', '');
  execFileSync('git', ['-C', repo, 'fast-import', '--quiet', '--done'], { input: lines.join('\n') });
  const refs = execFileSync(
    'git',
    ['-C', repo, 'for-each-ref', '--format=%(refname) %(objectname)', `refs/flotilla/${missionId}/`],
    {
      encoding: 'utf8',
    },
  );
  return refs
    .trim()
    .split('\n')
    .map((line) => {
      const [ref, commit] = line.split(' ');
      const taskId = ref.split('/').at(-2);
      return {
        ref,
        workCommit: commit,
        attemptId: `${taskId}/a1`,
        message: `flotilla: merge ${taskId} (attempt 1)`,
      };
    });
}

async function measure({ n, remote, together, root }) {
  const dir = await mkdtemp(join(root, 'case-'));
  const seed = join(dir, 'seed');
  await mkdir(seed);
  const missionId = `bench-${together ? 'batch' : 'serial'}-${remote ? 'url' : 'path'}`;
  let repo = (await prepareWorkspace({ workspace: seed, missionId })).repo;
  if (remote) {
    const bare = join(dir, 'origin.git');
    execFileSync('git', ['clone', '--bare', '--quiet', repo, bare]);
    repo = `file://${bare}`;
  }
  const gitDir = remote ? repo.slice('file://'.length) : repo;
  const base = execFileSync('git', ['-C', gitDir, 'rev-parse', `refs/heads/flotilla/${missionId}`], {
    encoding: 'utf8',
  }).trim();
  const attempts = makeAttempts(gitDir, missionId, base, n);
  const cache = await openRepoCache({ repo, cacheDir: join(dir, 'cache') });
  const shim = await installGitShim();
  const started = now();
  let results = [];
  if (together) {
    results = await Promise.all(attempts.map((a) => integrateAttempt({ cache, missionId, ...a })));
  } else {
    for (const a of attempts) results.push(await integrateAttempt({ cache, missionId, ...a }));
  }
  const seconds = (now() - started) / 1000;
  const calls = await shim.read();
  await shim.remove();
  if (!results.every((r) => r.ok && !r.alreadyIntegrated))
    throw new Error('integrate: an attempt did not merge');
  const count = (args) => Number(execFileSync('git', ['-C', gitDir, ...args], { encoding: 'utf8' }).trim());
  const merges = count(['rev-list', '--merges', '--count', `refs/heads/flotilla/${missionId}`]);
  if (merges !== n) throw new Error(`integrate: ${merges} merge commits for ${n} attempts`);
  const bySubcommand = countBy(calls, (call) => call.subcommand);
  await rm(dir, { recursive: true, force: true });
  return { seconds, mergesPerS: n / seconds, gitPerMerge: calls.length / n, bySubcommand };
}

export async function run(options, log = console.log) {
  const n = options.n ?? defaults.n;
  const root = await mkdtemp(join(tmpdir(), 'flotilla-bench-integrate-'));
  log(`integrate: ${n} approved attempts into one integration branch, one host`);
  const rows = [];
  try {
    for (const remote of [false, true]) {
      for (const together of [false, true]) {
        const r = await measure({ n, remote, together, root });
        rows.push({ remote, together, ...r });
        log(
          `  ${remote ? 'URL ' : 'path'} ${together ? 'all at once ' : 'one at a time'}: ${fmt(r.seconds, 1)} s, ${fmt(r.mergesPerS, 1)} merges/s, ${fmt(r.gitPerMerge, 2)} git processes a merge (${Object.entries(
            r.bySubcommand,
          )
            .map(([k, v]) => `${k} ${fmt(v / n, 2)}`)
            .join(', ')})`,
        );
      }
    }
  } finally {
    await rm(root, { recursive: true, force: true });
  }
  log('');
  printTable(
    [
      ['mission repo', 'gates', 'seconds', 'merges/s', 'git processes a merge'],
      ...rows.map((r) => [
        r.remote ? 'URL' : 'path',
        r.together ? 'all at once' : 'one at a time',
        fmt(r.seconds, 1),
        fmt(r.mergesPerS, 1),
        fmt(r.gitPerMerge, 2),
      ]),
    ],
    log,
  );
  return { n, rows };
}
