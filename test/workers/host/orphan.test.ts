import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue, Worker } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attemptRef, integrationBranch } from '../../../src/shared/contracts.js';
import { createRedis } from '../../../src/shared/redis.js';
import { assertLockHeld } from '../../../src/workers/stages/lock-fence.js';
import { commitAttempt } from '../../../src/workers/workspace/commit.js';
import { runGit } from '../../../src/workers/workspace/git.js';
import { integrateAttempt } from '../../../src/workers/workspace/integrate.js';
import { prepareWorkspace } from '../../../src/workers/workspace/prepare-workspace.js';
import { openRepoCache } from '../../../src/workers/workspace/repo-cache.js';
import { removeWorktree } from '../../../src/workers/workspace/worktree.js';
import { checkoutAttempt } from '../../helpers/checkouts.js';
import { indent, sim, startCluster } from '../../helpers/flotilla.js';
import { mission, openStage, type Stage, task, writes } from '../../helpers/hosts-stage.js';
import { startRedis, uniquePrefix } from '../../helpers/redis-server.js';
import {
  BIN_BUILDER,
  BIN_REVIEWER,
  cliProcesses,
  startReadyWorker,
  startWorker,
  stopAllWorkers,
  until,
} from '../../helpers/worker-process.js';

/**
 * The CLI a killed host leaves behind (docs/RECOVERY.md, "The orphaned CLI"): a host started
 * again with the same --host-id kills it, and work published by anything but the run that
 * completed the job — an orphan pushing to the attempt branch, a host that lost its lock — is
 * never committed by flotilla, and never merged.
 */
describe('orphaned CLIs', () => {
  let stage: Stage;

  beforeAll(async () => {
    stage = await openStage();
  });
  afterAll(async () => {
    await stopAllWorkers();
    await stage?.close();
  });

  it('a host restarted with the same --host-id kills the CLI its killed predecessor left running', async () => {
    const home = stage.home('phoenix');
    const start = () =>
      startReadyWorker(stage.cluster, { hostId: 'phoenix', home, path: [BIN_BUILDER, BIN_REVIEWER] });
    const first = await start();
    const { file } = await stage.writeMission(
      mission([task({ id: 'long', steps: writes('long', '- sleep: 120s') })]),
    );
    const id = await stage.submit(file);
    const orphan = await until(
      'the CLI to run',
      () => cliProcesses(home).find((cli) => cli.args.includes('long-a1-PROMPT')),
      90_000,
    );
    await first.kill9();
    // Nothing of the dead host is left to stop it: the CLI leads its own process group.
    expect(cliProcesses(home).map((cli) => cli.pid)).toContain(orphan.pid);

    const second = await start();
    expect(
      second.hasLog(/killed 1 CLI process group\(s\) left running by a previous run of host phoenix/),
    ).toBe(true);
    await until(
      'the orphan to be gone',
      () => (cliProcesses(home).some((cli) => cli.pid === orphan.pid) ? undefined : true),
      10_000,
    );
    await stage.client.cancel(id);
    await second.stop();
  }, 240_000);

  it('a host of the same id for another cluster starts beside a live one and leaves its CLI alone', async () => {
    const home = stage.home('dup-clusters');
    const other = await startRedis();
    try {
      const first = await startReadyWorker(stage.cluster, {
        hostId: 'dup',
        home,
        path: [BIN_BUILDER, BIN_REVIEWER],
      });
      const { file } = await stage.writeMission(
        mission([task({ id: 'long', steps: writes('long', '- sleep: 120s') })]),
      );
      const id = await stage.submit(file);
      const agent = await until(
        'the CLI to run',
        () => cliProcesses(home).find((cli) => cli.args.includes('long-a1-PROMPT')),
        90_000,
      );
      // Another Redis: another cluster, whose host "dup" on this machine is another host.
      const second = await startReadyWorker(
        { redisUrl: other.url, prefix: uniquePrefix() },
        { hostId: 'dup', home, path: [BIN_BUILDER, BIN_REVIEWER] },
      );
      expect(second.hasLog(/killed \d+ CLI process group/)).toBe(false);
      expect(cliProcesses(home).map((cli) => cli.pid)).toContain(agent.pid);
      // Its shutdown kills its own CLIs only (it has none): the first host's agent runs on.
      second.signal('SIGTERM');
      expect((await second.exited).code).toBe(0);
      expect(cliProcesses(home).map((cli) => cli.pid)).toContain(agent.pid);
      expect(first.running).toBe(true);
      await stage.client.cancel(id);
      await first.stop();
    } finally {
      await other.stop();
    }
  }, 240_000);

  it('a second host of the same id and cluster on one machine is refused, and the first runs on', async () => {
    const home = stage.home('dup-same');
    const first = await startReadyWorker(stage.cluster, {
      hostId: 'dup',
      home,
      path: [BIN_BUILDER, BIN_REVIEWER],
    });
    const { file } = await stage.writeMission(
      mission([task({ id: 'held', steps: writes('held', '- sleep: 120s') })]),
    );
    const id = await stage.submit(file);
    const agent = await until(
      'the CLI to run',
      () => cliProcesses(home).find((cli) => cli.args.includes('held-a1-PROMPT')),
      90_000,
    );
    const second = await startWorker(stage.cluster, {
      hostId: 'dup',
      home,
      path: [BIN_BUILDER, BIN_REVIEWER],
    });
    const { code } = await second.exited;
    expect(code).toBe(2);
    expect(second.lines.map((line) => line.raw)).toContainEqual(
      `flotilla: host id dup is already in use on this machine by process ${first.pid} for this cluster; stop that host or start this one with another --host-id`,
    );
    expect(cliProcesses(home).map((cli) => cli.pid)).toContain(agent.pid);
    expect(first.running).toBe(true);
    await stage.client.cancel(id);
    await first.stop();
  }, 240_000);
});

describe('work published after the attempt moved elsewhere', () => {
  it('a run whose job lock another host took while its CLI ran commits and pushes nothing', async () => {
    // Renewal every 8 s (lock 10 s), so the host's own renewal does not notice the lost lock first:
    // the fence before the commit is what must stop it.
    const cluster = await startCluster({ hosts: 1, slots: 1, env: { FLOTILLA_LOCK_RENEW_MS: '8000' } });
    try {
      const marker = join(cluster.dir, 'lock-taken');
      const port = new URL(cluster.redis.url).port;
      // On its first delivery the agent hands the run job's lock to "another host", then exits.
      const takeLock = [
        `test -e ${marker} && exit 0`,
        `key=$(redis-cli -p ${port} --scan --pattern '*:dispatch.code_implementation:*.run:lock' | head -1)`,
        `redis-cli -p ${port} set "$key" another-host PX 6000 >/dev/null`,
        `touch ${marker}`,
      ].join('; ');
      const yaml = [
        'goal: fence',
        'workspace: ./ws',
        'defaults: { max_attempts: 1, timeout: 60s }',
        'tasks:',
        '  - id: t',
        '    title: Task t',
        '    capability: code_implementation',
        '    critic: false',
        '    exit_criteria: ["test -f t.txt"]',
        '    description: |',
        '      Do t.',
        '',
        indent(sim(`- write: {path: t.txt, content: "t"}\n- run: [bash, -c, ${JSON.stringify(takeLock)}]`)),
      ].join('\n');
      const status = await cluster.run(yaml);
      expect(status.status).toBe('done');
      const audit = await cluster.client.store.getAudit(status.id);
      // One run row: the delivery that lost its lock published nothing and wrote no row; the
      // re-delivered job (after the stolen lock expired) ran, committed and was approved.
      expect(audit.filter((e) => e.stage === 'run')).toHaveLength(1);
      expect(status.tasks[0]).toMatchObject({ status: 'completed', attempts: 1 });
    } finally {
      await cluster.stop();
    }
  }, 120_000);

  let root: string;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'flotilla-orphan-'));
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('a host whose run job lost its lock to another host does not commit or push', async () => {
    const server = await startRedis();
    const redis = createRedis({ url: server.url, role: 'worker' });
    const workerConnection = redis.duplicate();
    const prefix = uniquePrefix();
    const queue = new Queue('dispatch.fence', { connection: redis, prefix });
    const seen: string[] = [];
    const worker = new Worker(
      'dispatch.fence',
      async (job, token) => {
        await assertLockHeld(job, token, 10_000);
        seen.push('held');
        // Another host took the job after a stalled check: its lock now carries that host's token.
        await redis.set(`${prefix}:dispatch.fence:${job.id}:lock`, 'another-host-token', 'PX', 10_000);
        await assertLockHeld(job, token, 10_000).then(
          () => seen.push('published anyway'),
          (error: Error) => seen.push(error.message),
        );
      },
      { connection: workerConnection, prefix },
    );
    // Completing the job fails too (BullMQ: "Lock mismatch"): that is the point.
    worker.on('error', () => {});
    try {
      await queue.add('run', {}, { jobId: 'm.t.a1.run' });
      await until('the processor to finish', () => (seen.length === 2 ? true : undefined), 30_000, 50);
      expect(seen).toEqual([
        'held',
        "lock lost: job m.t.a1.run moved to another host; this host's work is not committed or pushed",
      ]);
    } finally {
      await worker.close(true);
      await queue.close();
      await workerConnection.quit();
      await redis.quit();
      await server.stop();
    }
  });

  it('the gate merges the commit the completed run returned, never what was pushed over its ref', async () => {
    const ws = join(root, 'ws');
    await mkdir(ws);
    await writeFile(join(ws, 'README.md'), '# repo\n');
    const prepared = await prepareWorkspace({ workspace: ws, missionId: 'm1' });
    const cache = await openRepoCache({ repo: prepared.repo, cacheDir: join(root, 'cache') });
    const workRoot = join(root, 'work');
    const git = async (cwd: string, ...args: string[]) => (await runGit(args, { cwd })).stdout.trim();

    // The run that completed the job: its commits are what the run job returned.
    const run = await checkoutAttempt({ cache, workRoot, missionId: 'm1', taskId: 't', attempt: 1 });
    const ref = attemptRef('m1', 't', 1);
    await writeFile(join(run.dir, 'good.txt'), 'the run\n');
    const committed = await commitAttempt({ dir: run.dir, message: 't: the run', ref });
    // Then an orphan (a CLI left by a killed host) pushes its own work over the same ref.
    await writeFile(join(run.dir, 'orphan.txt'), 'the orphan\n');
    await git(run.dir, 'add', '-A');
    await git(run.dir, '-c', 'user.name=o', '-c', 'user.email=o@x', 'commit', '-qm', 'orphan');
    await git(run.dir, 'push', '-q', '--force', 'origin', `HEAD:${ref}`);
    await removeWorktree(run.dir);

    // What the gate passes (stages/gate/merge.ts): the run result's work commit, not the ref's tip.
    const merged = await integrateAttempt({
      cache,
      missionId: 'm1',
      attemptId: 't/a1',
      ref,
      workCommit: committed.workCommit,
      message: 'flotilla: merge t (attempt 1)',
    });
    expect(merged.ok).toBe(true);
    const tip = await git(prepared.repo, 'rev-parse', integrationBranch('m1'));
    const files = (await git(prepared.repo, 'ls-tree', '-r', '--name-only', tip)).split('\n');
    expect(files).toContain('good.txt');
    expect(files).not.toContain('orphan.txt');
  });
});
