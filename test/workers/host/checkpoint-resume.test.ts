import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditEntry } from '../../../src/shared/contracts.js';
import { INTERRUPTED_TEXT } from '../../../src/workers/stages/run/prompt.js';
import { byTask, mission, openStage, type Stage, task } from '../../helpers/hosts-stage.js';
import {
  BIN_BUILDER,
  BIN_REVIEWER,
  cliProcesses,
  errorLines,
  startReadyWorker,
  until,
  type WorkerProcess,
} from '../../helpers/worker-process.js';

/**
 * Resume from a checkpoint (docs/RECOVERY.md, "Checkpoints"), with real host processes: the
 * agent writes a file and then works on for minutes; once a checkpoint of its checkout is
 * recorded, its host dies with SIGKILL. The run job is re-delivered to the other host, which
 * must start from the checkpoint: the agent there finds its file (and only then finishes at
 * once), its prompt says the run was interrupted, the attempt is still attempt 1, and the
 * integration branch holds the work without any checkpoint commit; the checkpoint ref is gone.
 * Without checkpoints the second run would start from zero and sleep for ten minutes.
 */
describe('a host killed after a checkpoint', () => {
  let stage: Stage;

  beforeAll(async () => {
    stage = await openStage();
  });
  afterAll(async () => {
    await stage?.close();
  });

  it('continues the same attempt on another host from the checkpoint', async () => {
    // The tuned lock of the crash tests (test/workers/host/crash.test.ts): the job moves within seconds.
    const start = (hostId: string) =>
      startReadyWorker(stage.cluster, {
        hostId,
        home: stage.home(hostId),
        path: [BIN_BUILDER, BIN_REVIEWER],
        lockMs: 5_000,
      });
    const hosts = await Promise.all([start('host-1'), start('host-2')]);
    // First run: early.txt is not there, so the agent writes it and works on (sleeps) for long.
    // A run that finds early.txt (the checkpoint's) writes resumed.txt and finishes.
    const script =
      'if [ -f early.txt ]; then echo resumed > resumed.txt; else echo early > early.txt; sleep 600; fi';
    const { file, ws } = await stage.writeMission(
      mission(
        [
          task({
            id: 'long',
            steps: `- run: {argv: [bash, -c, ${JSON.stringify(script)}], timeout: 15m}`,
            criteria: ['grep -qx early early.txt', 'grep -qx resumed resumed.txt'],
          }),
        ],
        '{ max_attempts: 2, backoff: 500ms, timeout: 15m, checkpoint_interval: 1s }',
      ),
    );
    const id = await stage.submit(file);

    // A checkpoint that holds early.txt, in the mission repo.
    const holdsEarly = async (entry: AuditEntry) => {
      if (entry.taskId !== 'long' || entry.event?.kind !== 'checkpoint') return false;
      const file = `${entry.event.commit}:early.txt`;
      return (await execa('git', ['-C', ws, 'cat-file', '-e', file], { reject: false })).exitCode === 0;
    };
    const saved = await until(
      'a checkpoint of the running task with early.txt in it',
      async () => {
        for (const entry of await stage.audit(id)) if (await holdsEarly(entry)) return entry;
        return undefined;
      },
      90_000,
    );
    const victim = hosts.find((h) => h.hostId === saved.host) as WorkerProcess;
    const survivor = hosts.find((h) => h !== victim) as WorkerProcess;
    expect(cliProcesses(victim.home).some((cli) => cli.args.includes('long-a1-PROMPT'))).toBe(true);
    await victim.kill9();

    const status = await stage.wait(id, 240_000);
    expect(status.status, await stage.explain(id)).toBe('done');
    // A re-delivery, not a new task attempt.
    expect(byTask(status, 'long'), await stage.explain(id)).toMatchObject({
      status: 'completed',
      attempts: 1,
      host: survivor.hostId,
    });

    const audit = (await stage.audit(id)).filter((e) => e.taskId === 'long');
    expect(audit.every((e) => e.attempt === 1)).toBe(true);
    const resumed = audit.find((e) => e.event?.kind === 'resumed');
    expect(resumed?.host, await stage.explain(id)).toBe(survivor.hostId);
    const runs = audit.filter((e) => e.event?.kind === 'run');
    // The dead host never finished its run: the one run entry is the survivor's, and its prompt
    // told the agent that the previous run was interrupted.
    expect(runs.map((e) => e.host)).toEqual([survivor.hostId]);
    expect(runs[0]?.files?.['prompt.md']).toContain(INTERRUPTED_TEXT);

    // The integration branch has the file written before the checkpoint, and no checkpoint commit.
    const branch = `flotilla/${id}`;
    const show = (path: string) => execa('git', ['-C', ws, 'show', `${branch}:${path}`]);
    expect((await show('early.txt')).stdout).toBe('early');
    expect((await show('resumed.txt')).stdout).toBe('resumed');
    const history = (await execa('git', ['-C', ws, 'log', '--format=%H %s', branch])).stdout.split('\n');
    const checkpoints = audit.flatMap((e) => (e.event?.kind === 'checkpoint' ? [e.event.commit] : []));
    expect(checkpoints.length).toBeGreaterThan(0);
    for (const commit of checkpoints) {
      expect(history.some((line) => line.startsWith(commit))).toBe(false);
      const ancestor = await execa('git', ['-C', ws, 'merge-base', '--is-ancestor', commit, branch], {
        reject: false,
      });
      expect(ancestor.exitCode).not.toBe(0);
    }
    expect(history.some((line) => /checkpoint/i.test(line))).toBe(false);
    // The work-in-progress ref went once the attempt's own commit was pushed.
    expect((await execa('git', ['-C', ws, 'for-each-ref', 'refs/flotilla-wip/'])).stdout).toBe('');

    expect(errorLines(survivor)).toEqual([]);
  }, 360_000);
});
