import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditEntry, MissionStatusJson } from '../../../../src/shared/contracts.js';
import { indent, sim, startCluster, type TestCluster } from '../../../helpers/flotilla.js';

/**
 * Usage and cost on the real pipeline: the stand-in prints Claude Code's `--output-format json`
 * line with `total_cost_usd` (its adapters say `usage_format: claude-json`), flotilla adds every
 * attempt's and every review's cost to the task and the mission, and a mission's `budget_usd` stops
 * new attempts once it is spent.
 */

function byId(status: MissionStatusJson, id: string) {
  const found = status.tasks.find((t) => t.id === id);
  if (!found) throw new Error(`no task ${id}`);
  return found;
}

function runs(audit: AuditEntry[], taskId: string): AuditEntry[] {
  return audit.filter((e) => e.taskId === taskId && e.stage === 'run');
}

function task(fields: { id: string; steps: string; criteria?: string; extra?: string[] }): string {
  return [
    `  - id: ${fields.id}`,
    `    title: Task ${fields.id}`,
    '    capability: code_implementation',
    `    exit_criteria: [${JSON.stringify(fields.criteria ?? `test -f ${fields.id}.txt`)}]`,
    ...(fields.extra ?? []).map((line) => `    ${line}`),
    '    description: |',
    `      Do ${fields.id}.`,
    '',
    indent(sim(fields.steps)),
  ].join('\n');
}

function mission(defaults: string, tasks: string[]): string {
  return ['goal: Prove cost accounting', 'workspace: ./ws', `defaults: ${defaults}`, 'tasks:', ...tasks].join(
    '\n',
  );
}

describe('usage, cost and budget', () => {
  let cluster: TestCluster;

  beforeAll(async () => {
    cluster = await startCluster({ hosts: 1, slots: 4 });
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it('sums the cost of every attempt into the task, and of every attempt and review into the mission', async () => {
    const status = await cluster.run(
      mission('{ max_attempts: 3, backoff: 200ms, timeout: 60s }', [
        task({
          id: 'twice',
          steps:
            '- cost_usd: 0.4\n- break_until_attempt: 2\n- write: {path: twice.txt, content: good, broken: bad}',
          criteria: 'grep -q good twice.txt',
          extra: ['critic: false'],
        }),
        task({
          id: 'reviewed',
          steps:
            '- cost_usd: 0.4\n- write: {path: reviewed.txt, content: ok}\n- cost_usd: 0.1\n  role: reviewer\n- review: {score: 9}',
        }),
      ]),
    );
    expect(status.status).toBe('done');
    expect(byId(status, 'twice').attempts).toBe(2);
    expect(byId(status, 'twice').costUsd).toBeCloseTo(0.8, 6);
    // A task's cost is what its own CLI runs cost (the board charges it to that CLI); the
    // reviewer's run is another CLI's, and counts in the mission's total.
    expect(byId(status, 'reviewed').costUsd).toBeCloseTo(0.4, 6);
    expect(status.costUsd).toBeCloseTo(1.3, 6);
    // The figure came from the CLI's own JSON line, which the audit keeps.
    const audit = await cluster.client.store.getAudit(status.id);
    expect(runs(audit, 'twice')[0]?.files?.['stdout.txt']).toContain('"total_cost_usd":0.4');
  });

  it('fails a task with a budget reason instead of using all its attempts once the budget is spent', async () => {
    const status = await cluster.run(
      mission('{ max_attempts: 5, backoff: 200ms, timeout: 60s, budget_usd: 0.5 }', [
        task({
          id: 'spendy',
          steps: '- cost_usd: 0.4\n- write: {path: spendy.txt, content: wrong}',
          criteria: 'grep -q right spendy.txt',
          extra: ['critic: false'],
        }),
      ]),
    );
    expect(status.status).toBe('failed');
    const spendy = byId(status, 'spendy');
    // 0.4 after the first attempt is under the budget; 0.8 after the second is over it.
    expect(spendy).toMatchObject({ status: 'failed', attempts: 2 });
    expect(spendy.error).toMatch(/budget of \$0\.5 spent \(\$0\.80\)/);
    expect(status.costUsd).toBeCloseTo(0.8, 6);
  });

  it('starts no new attempt of a released task once the budget is spent', async () => {
    const status = await cluster.run(
      mission('{ max_attempts: 3, backoff: 200ms, timeout: 60s, budget_usd: 0.5 }', [
        task({
          id: 'first',
          steps: '- cost_usd: 0.6\n- write: {path: first.txt, content: ok}',
          extra: ['critic: false'],
        }),
        [
          '  - id: second',
          '    title: Task second',
          '    capability: code_implementation',
          '    depends_on: [first]',
          '    critic: false',
          '    exit_criteria: ["test -f second.txt"]',
          '    description: |',
          '      Do second.',
          '',
          indent(sim('- cost_usd: 0.6\n- write: {path: second.txt, content: ok}')),
        ].join('\n'),
      ]),
    );
    expect(status.status).toBe('partial');
    expect(byId(status, 'first').status).toBe('completed');
    const second = byId(status, 'second');
    expect(second).toMatchObject({ status: 'failed', attempts: 1 });
    expect(second.error).toMatch(/budget of \$0\.5 spent/);
    // Its CLI never ran: nothing was spent on it.
    expect(status.costUsd).toBeCloseTo(0.6, 6);
    const audit = await cluster.client.store.getAudit(status.id);
    expect(runs(audit, 'second').some((e) => e.message.includes('exited'))).toBe(false);
  });
});
