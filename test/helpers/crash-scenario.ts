import { expect } from 'vitest';
import { byTask, integrationMerges, mission, type Stage, task, writes } from './hosts-stage.js';
import {
  BIN_BUILDER,
  BIN_REVIEWER,
  cliProcesses,
  errorLines,
  startReadyWorker,
  until,
  type WorkerProcess,
} from './worker-process.js';

export interface CrashMeasure {
  /** From the SIGKILL to the task's next `running` event (another host took the job). */
  readonly recoveryMs: number;
  /** From the SIGKILL to the mission's end. */
  readonly missionAfterKillMs: number;
  /** Agent CLIs of the dead host still alive right after the kill (their own process groups). */
  readonly orphans: number;
  /** Whether those orphans were still alive once the mission was done. */
  readonly orphansAliveAtEnd: number;
}

/**
 * Two hosts with the builder and the reviewer; a mission whose `slow` task sleeps 8 s, so it is
 * surely running when the host running it is killed with SIGKILL. The job must move to the other
 * host when its lock expires, the mission must complete, every task approved exactly once.
 */
export async function crashMidTask(stage: Stage, options: { lockMs?: number }): Promise<CrashMeasure> {
  const start = (hostId: string) =>
    startReadyWorker(stage.cluster, {
      hostId,
      home: stage.home(hostId),
      path: [BIN_BUILDER, BIN_REVIEWER],
      ...(options.lockMs ? { lockMs: options.lockMs } : {}),
    });
  const hosts = await Promise.all([start('host-1'), start('host-2')]);
  const { file, ws } = await stage.writeMission(
    mission([
      task({ id: 'slow', steps: writes('slow', '- sleep: 8s') }),
      task({ id: 'quick', steps: writes('quick') }),
      task({
        id: 'after',
        deps: ['slow'],
        steps: writes('after'),
        criteria: ['test -f slow.txt', 'test -f after.txt'],
      }),
    ]),
  );
  const id = await stage.submit(file);

  // The slow task's CLI is running on one of the hosts: that host dies.
  const victim = await until(
    'the slow task to run its CLI',
    async () => {
      const host = byTask(await stage.client.status(id), 'slow').host;
      const found = hosts.find((h) => h.hostId === host);
      // The run's CLI is handed its prompt file, named after the task and attempt: `slow-a1-PROMPT.md`.
      return found && cliProcesses(found.home).some((cli) => cli.args.includes('slow-a1-PROMPT'))
        ? found
        : undefined;
    },
    90_000,
  );
  const survivor = hosts.find((h) => h !== victim) as WorkerProcess;
  const killedAt = Date.now();
  await victim.kill9();
  const orphans = cliProcesses(victim.home).length;

  const status = await stage.wait(id, 240_000);
  const ended = Date.now();
  expect(status.status, await stage.explain(id)).toBe('done');
  for (const t of status.tasks) {
    // A crash is BullMQ's to retry: it never uses up one of the task's attempts.
    expect(t, await stage.explain(id)).toMatchObject({ status: 'completed', attempts: 1 });
  }
  expect(byTask(status, 'slow').host).toBe(survivor.hostId);

  const audit = await stage.audit(id);
  for (const taskId of ['slow', 'quick', 'after']) {
    const gates = audit.filter((e) => e.taskId === taskId && e.stage === 'gate');
    expect(
      gates.map((e) => e.message),
      await stage.explain(id),
    ).toEqual([expect.stringMatching(/^approved/)]);
  }
  // The dead host never finished its run of `slow`, so the only run entry is the survivor's.
  expect(audit.filter((e) => e.taskId === 'slow' && e.stage === 'run').map((e) => e.host)).toEqual([
    survivor.hostId,
  ]);
  // One merge per task on the integration branch: the orphaned CLI cannot approve or push anything.
  const merges = await integrationMerges(ws, id);
  expect([...merges].sort()).toEqual([
    'flotilla: merge after (attempt 1)',
    'flotilla: merge quick (attempt 1)',
    'flotilla: merge slow (attempt 1)',
  ]);

  expect(errorLines(survivor)).toEqual([]);
  const rerun = (await stage.events(id)).find(
    (e) => e.taskId === 'slow' && e.status === 'running' && Date.parse(e.at) > killedAt,
  );
  expect(rerun?.message).toContain(survivor.hostId);
  return {
    recoveryMs: Date.parse(rerun?.at ?? '') - killedAt,
    missionAfterKillMs: ended - killedAt,
    orphans,
    orphansAliveAtEnd: cliProcesses(victim.home).length,
  };
}
