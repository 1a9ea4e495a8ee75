import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { report } from '../../../../src/cli/commands/missions.js';
import { integrationBranch, QUEUES } from '../../../../src/shared/contracts.js';
import { MissionStore } from '../../../../src/shared/store/mission-store.js';
import { runGit } from '../../../../src/workers/workspace/git.js';
import { indent, sim, startCluster, type TestCluster } from '../../../helpers/flotilla.js';
import { refWrites, resetRefWrites } from '../../../helpers/ref-write-seam.js';

/**
 * The gate's merge step inside whole missions on a real Redis, real git and the stand-in agent:
 * conflicts found by merge-tree become retries with the files in the next prompt, a batch with a
 * conflict settles the others, and a gate that dies between publishing and settling merges once.
 */
vi.mock('../../../../src/workers/workspace/ref-files.js', async (original) =>
  (await import('../../../helpers/ref-write-seam.js')).seamed(await original()),
);

let cluster: TestCluster;
let scratchDir: string;

beforeAll(async () => {
  cluster = await startCluster({ hosts: 1, slots: 4 });
  scratchDir = await mkdtemp(join(tmpdir(), 'flotilla-merge-'));
});
afterEach(() => {
  resetRefWrites();
  vi.restoreAllMocks();
});
afterAll(async () => {
  await cluster?.stop();
  await rm(scratchDir, { recursive: true, force: true });
});

async function git(cwd: string, ...args: string[]): Promise<string> {
  return (await runGit(args, { cwd })).stdout.trim();
}

function task(id: string, steps: string): string {
  return [
    `  - id: ${id}`,
    `    title: ${id}`,
    `    exit_criteria: ["true"]`,
    `    critic: false`,
    `    description: |`,
    indent(sim(steps)),
  ].join('\n');
}

function missionYaml(goal: string, tasks: string[]): string {
  return [
    `goal: ${goal}`,
    'workspace: ./ws',
    'defaults: { backoff: 100ms, max_attempts: 3 }',
    'tasks:',
    ...tasks,
  ].join('\n');
}

const writes = (path: string, content: string) =>
  `- sleep: 300ms\n- write: {path: ${path}, content: "${content}"}`;

async function repoOf(id: string): Promise<string> {
  return (await cluster.client.store.getMission(id)).meta.repo;
}

/** Publishes of the integration branch after its creation (one reflog line each). */
async function publishesAfterCreation(repo: string, id: string): Promise<number> {
  const lines = await git(repo, 'reflog', 'show', '--format=%H', `refs/heads/${integrationBranch(id)}`);
  return lines.split('\n').filter(Boolean).length - 1;
}

async function merges(repo: string, id: string): Promise<string[]> {
  return (await git(repo, 'log', '--merges', '--format=%s', `refs/heads/${integrationBranch(id)}`))
    .split('\n')
    .filter(Boolean);
}

describe('the gate merge step', () => {
  it('merges a batch once, retries only the conflicting attempt with the files in its prompt, and leaves the repo clean', async () => {
    // The first gate's publish waits until all four gates are active, so the other three queue
    // behind it on this host and are merged as one batch, deterministically.
    const release = join(scratchDir, 'release');
    refWrites.before = async (ref) => {
      if (!ref.startsWith('refs/heads/')) return;
      while (!(await stat(release).catch(() => null))) await new Promise((done) => setTimeout(done, 50));
    };

    const id = await cluster.submit(
      missionYaml('batch', [
        task('a', writes('shared.txt', 'from a')),
        task('b', writes('b.txt', 'b')),
        task('c', writes('shared.txt', 'from c')),
        task('d', writes('d.txt', 'd')),
      ]),
      { 'ws/.planning/notes.md': 'my own plan\n', 'ws/README.md': 'readme\n' },
    );
    const connection = new Redis(cluster.redis.url, { maxRetriesPerRequest: null });
    const missionQueue = new Queue(QUEUES.mission, { connection, prefix: cluster.config.prefix });
    try {
      await vi.waitFor(
        async () => {
          if ((await missionQueue.getActiveCount()) < 4) throw new Error('gates not all active yet');
        },
        { timeout: 90_000, interval: 100 },
      );
    } finally {
      await missionQueue.close();
      await connection.quit();
    }
    await writeFile(release, '');
    const status = await cluster.client.wait(id, { pollMs: 200 });
    expect(status.status).toBe('done');

    const attempts = Object.fromEntries(status.tasks.map((t) => [t.id, t.attempts]));
    expect(attempts.b).toBe(1);
    expect(attempts.d).toBe(1);
    // One of a and c merged first; the other conflicted in shared.txt and only it went again.
    expect([attempts.a, attempts.c].sort()).toEqual([1, 2]);
    const loser = attempts.a === 2 ? 'a' : 'c';
    const audit = await cluster.client.store.getAudit(id);
    const retryPrompt = audit.find((e) => e.taskId === loser && e.stage === 'run' && e.attempt === 2)
      ?.files?.['prompt.md'];
    expect(retryPrompt).toContain('PREVIOUS ATTEMPT FAILED (attempt 1/3)');
    expect(retryPrompt).toContain('- `shared.txt`');
    expect(retryPrompt).toContain('Merge conflict in shared.txt');
    expect(status.tasks.find((t) => t.id === loser)?.error ?? null).toBeNull();

    const repo = await repoOf(id);
    // Four merge commits, one per approved attempt, in three publishes: the first gate alone, the
    // batch of three (one of which conflicted), the retried attempt.
    expect(await merges(repo, id)).toHaveLength(4);
    expect(await publishesAfterCreation(repo, id)).toBe(3);

    // The integration branch holds the work only; the user's own .planning/ file stays.
    const tip = `refs/heads/${integrationBranch(id)}`;
    const files = (await git(repo, 'ls-tree', '-r', '--name-only', tip)).split('\n').sort();
    expect(files).toEqual(['.planning/notes.md', 'README.md', 'b.txt', 'd.txt', 'shared.txt']);
    // The prompts are in the attempts' own commits, reachable under refs/flotilla/.
    const refs = (await git(repo, 'for-each-ref', '--format=%(refname)', `refs/flotilla/${id}/`)).split('\n');
    expect(refs.sort()).toEqual(
      [`${loser}/a1`, `${loser}/a2`, 'a/a1', 'b/a1', 'c/a1', 'd/a1']
        .filter((name, i, all) => all.indexOf(name) === i)
        .map((name) => `refs/flotilla/${id}/${name}`)
        .sort(),
    );
    expect(await git(repo, 'ls-tree', '-r', '--name-only', `refs/flotilla/${id}/b/a1`)).toContain(
      '.planning/dispatch/',
    );
    // `flotilla report` still has every attempt, and says where their commits are.
    const out = await mkdtemp(join(tmpdir(), 'flotilla-report-'));
    try {
      const printed: string[] = [];
      const io = { out: (line: string) => printed.push(line), err: () => {}, isTTY: false };
      expect(await report({ id, out }, cluster.config, io)).toBe(0);
      const text = await readFile(join(out, 'REPORT.md'), 'utf8');
      expect(text).toContain(`Attempts: refs/flotilla/${id}/<task>/a<n> in ${repo}`);
      for (const name of ['a/a1', 'b/a1', 'c/a1', 'd/a1', `${loser}/a2`]) {
        expect(await readFile(join(out, name, 'prompt.md'), 'utf8')).toContain('# Dispatch Task');
      }
    } finally {
      await rm(out, { recursive: true, force: true });
    }
    // `git branch` shows the user's branch and the mission's integration branch, nothing else.
    const branches = (await git(repo, 'branch', '--format=%(refname:short)')).split('\n');
    expect(branches).toContain(integrationBranch(id));
    expect(branches).toHaveLength(2);
  });

  it('does not merge twice when the gate dies after publishing and before settling', async () => {
    // The first settle fails as if the host died right there: the merge is published, the task
    // is not settled, and BullMQ runs the gate job again.
    const settle = MissionStore.prototype.settle;
    let failed = false;
    vi.spyOn(MissionStore.prototype, 'settle').mockImplementation(function (this: MissionStore, ...args) {
      if (!failed) {
        failed = true;
        return Promise.reject(new Error('host died between publishing and settling'));
      }
      return settle.apply(this, args);
    });
    const id = await cluster.submit(missionYaml('replay', [task('solo', writes('solo.txt', 'solo'))]));
    const status = await cluster.client.wait(id, { pollMs: 200 });
    expect(failed).toBe(true);
    expect(status.status).toBe('done');
    expect(status.tasks[0]).toMatchObject({ id: 'solo', status: 'completed', attempts: 1 });
    const repo = await repoOf(id);
    expect(await merges(repo, id)).toEqual(['flotilla: merge solo (attempt 1)']);
    expect(await publishesAfterCreation(repo, id)).toBe(1);
    const gates = (await cluster.client.store.getAudit(id)).filter((e) => e.stage === 'gate');
    expect(gates).toHaveLength(1);
  });
});
