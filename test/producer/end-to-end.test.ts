import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditEntry, MissionStatusJson } from '../../src/shared/contracts.js';
import { indent, sim, startCluster, type TestCluster } from '../helpers/flotilla.js';

/**
 * The pipeline end to end on a real Redis, real git and the stand-in agent as a real subprocess:
 * run → verify → critic → gate, DAG release, retries with feedback, failures and skips.
 */

function task(fields: {
  id: string;
  deps?: string[];
  steps: string;
  criteria?: string[];
  extra?: string;
}): string {
  const criteria = fields.criteria ?? [`test -f ${fields.id}.txt`];
  return [
    `  - id: ${fields.id}`,
    `    title: Task ${fields.id}`,
    `    capability: code_implementation`,
    `    depends_on: [${(fields.deps ?? []).join(', ')}]`,
    `    exit_criteria:`,
    ...criteria.map((c) => `      - ${JSON.stringify(c)}`),
    ...(fields.extra ? [fields.extra] : []),
    `    description: |`,
    `      Do ${fields.id}.`,
    '',
    indent(sim(fields.steps)),
  ].join('\n');
}

function mission(tasks: string[], defaults = '{ max_attempts: 3, backoff: 200ms, timeout: 60s }'): string {
  return [`goal: test mission`, `workspace: ./ws`, `defaults: ${defaults}`, `tasks:`, ...tasks].join('\n');
}

const write = (id: string, extra = '') => `- write: {path: ${id}.txt, content: "${id} done"}\n${extra}`;

function entries(audit: AuditEntry[], taskId: string, stage: AuditEntry['stage']): AuditEntry[] {
  return audit.filter((e) => e.taskId === taskId && e.stage === stage);
}

function byId(status: MissionStatusJson, id: string) {
  const found = status.tasks.find((t) => t.id === id);
  if (!found) throw new Error(`no task ${id}`);
  return found;
}

describe('a mission end to end', () => {
  let cluster: TestCluster;

  beforeAll(async () => {
    cluster = await startCluster({ hosts: 1, slots: 4 });
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it('releases a diamond task by task: D waits for B and C, B does not wait for C’s retries', async () => {
    // C's second attempt cannot finish until B has run: a release in waves (B held back until C is
    // done) would never get there, so the mission finishing proves it without reading clocks.
    const marker = join(cluster.dir, 'b-ran');
    const status = await cluster.run(
      mission([
        task({ id: 'a', steps: write('a') }),
        task({
          id: 'b',
          deps: ['a'],
          steps: `${write('b')}\n- run: [touch, ${JSON.stringify(marker)}]`,
        }),
        task({
          id: 'c',
          deps: ['a'],
          steps: [
            '- sleep: 300ms',
            '- break_until_attempt: 2',
            '- write: {path: c.txt, content: "good", broken: "bad"}',
            `- run: [bash, -c, ${JSON.stringify(`for i in $(seq 500); do [ -f '${marker}' ] && exit 0; sleep 0.1; done; exit 1`)}]`,
            '  from_attempt: 2',
          ].join('\n'),
          criteria: ['grep -q good c.txt'],
        }),
        task({
          id: 'd',
          deps: ['b', 'c'],
          steps: write('d'),
          criteria: ['test -f a.txt', 'test -f b.txt', 'grep -q good c.txt', 'test -f d.txt'],
        }),
      ]),
    );
    expect(status.status).toBe('done');
    expect(byId(status, 'c').attempts).toBe(2);
    expect(byId(status, 'b').attempts).toBe(1);
    const audit = await cluster.client.store.getAudit(status.id);
    const dStarted = Date.parse(byId(status, 'd').startedAt!);
    expect(dStarted).toBeGreaterThanOrEqual(Date.parse(byId(status, 'b').finishedAt!));
    expect(dStarted).toBeGreaterThanOrEqual(Date.parse(byId(status, 'c').finishedAt!));
    // d's criteria saw a, b and c's work: the integration branch holds every approved dependency.
    expect(entries(audit, 'd', 'verify')[0]!.message).toContain('passed');
    expect(entries(audit, 'd', 'route')).toHaveLength(1);
  });

  it('ends partial: a failed task skips its dependents, an independent task completes', async () => {
    const status = await cluster.run(
      mission(
        [
          task({
            id: 'broken',
            steps: '- write: {path: x.txt, content: nope}',
            criteria: ['grep -q yes x.txt'],
          }),
          task({ id: 'after', deps: ['broken'], steps: write('after') }),
          task({ id: 'later', deps: ['after'], steps: write('later') }),
          task({ id: 'alone', steps: write('alone') }),
        ],
        '{ max_attempts: 2, backoff: 100ms }',
      ),
    );
    expect(status.status).toBe('partial');
    expect(byId(status, 'broken')).toMatchObject({ status: 'failed', attempts: 2 });
    expect(byId(status, 'after')).toMatchObject({ status: 'skipped', attempts: 0 });
    expect(byId(status, 'later')).toMatchObject({ status: 'skipped' });
    expect(byId(status, 'after').error).toContain('broken');
    expect(byId(status, 'alone').status).toBe('completed');
    const summary = await cluster.client.summary(status.id);
    expect(summary).toContain('⚠️ Mission partial: test mission');
    expect(summary).toContain('❌ Task broken');
  });

  it('feeds a critic rejection into the next prompt, then approves', async () => {
    const status = await cluster.run(
      mission([
        task({
          id: 'crit',
          steps: `${write('crit')}\n- review_until_attempt: {attempt: 2, score_before: 3, issues_before: ["the frobnicator is missing"]}\n- review: {score: 9}`,
        }),
      ]),
    );
    expect(status.status).toBe('done');
    const crit = byId(status, 'crit');
    expect(crit).toMatchObject({ status: 'completed', attempts: 2, score: 9 });
    const audit = await cluster.client.store.getAudit(status.id);
    const critics = entries(audit, 'crit', 'critic');
    expect(critics[0]!.message).toContain('score 3/10');
    expect(critics[0]!.cli).toBe('flotilla-sim-reviewer');
    const secondPrompt = entries(audit, 'crit', 'run').find((e) => e.attempt === 2)!.files!['prompt.md']!;
    expect(secondPrompt).toContain('## ⚠️ PREVIOUS ATTEMPT FAILED (attempt 1/3)');
    expect(secondPrompt).toContain('the frobnicator is missing');
  });

  it('feeds failing criteria output into the retry prompt', async () => {
    const status = await cluster.run(
      mission([
        task({
          id: 'flaky',
          steps:
            '- break_until_attempt: 2\n- write: {path: f.txt, content: "right", broken: "wrong-output-123"}',
          criteria: ['cat f.txt; grep -q right f.txt'],
        }),
      ]),
    );
    expect(status.status).toBe('done');
    const audit = await cluster.client.store.getAudit(status.id);
    const retryPrompt = entries(audit, 'flaky', 'run').find((e) => e.attempt === 2)!.files!['prompt.md']!;
    expect(retryPrompt).toContain('cat f.txt; grep -q right f.txt');
    expect(retryPrompt).toContain('wrong-output-123');
  });
});
