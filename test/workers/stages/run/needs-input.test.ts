import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditEntry, MissionStatusJson } from '../../../../src/shared/contracts.js';
import { indent, sim, startCluster, type TestCluster } from '../../../helpers/flotilla.js';

/**
 * needs_input on the real pipeline (agent-dispatch): an agent that cannot go on without an answer
 * pauses its task, the mission keeps running, `answer()` resumes the task as a continuation whose
 * prompt holds the questions and the answer, and the task completes.
 */

function task(status: MissionStatusJson, id: string) {
  const found = status.tasks.find((t) => t.id === id);
  if (!found) throw new Error(`no task ${id}`);
  return found;
}

async function until<T>(
  what: string,
  read: () => Promise<T>,
  ok: (value: T) => boolean,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (ok(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

function runs(audit: AuditEntry[], taskId: string): AuditEntry[] {
  return audit.filter((e) => e.taskId === taskId && e.stage === 'run');
}

describe('needs_input and answer', () => {
  let cluster: TestCluster;
  let id: string;

  beforeAll(async () => {
    cluster = await startCluster({ hosts: 1, slots: 4 });
    const yaml = [
      'goal: Prove the question round trip',
      'workspace: ./ws',
      'defaults: { max_attempts: 2, backoff: 200ms, timeout: 60s }',
      'tasks:',
      '  - id: paint',
      '    title: Paint the shed',
      '    capability: code_implementation',
      '    critic: false',
      '    exit_criteria: ["grep -q painted shed.txt"]',
      '    description: |',
      '      Paint the shed in the colour the owner wants.',
      '',
      indent(
        sim(
          [
            '- write: {path: primer.txt, content: "primed"}',
            '- needs_input:',
            '    questions:',
            '      - {text: "Which colour should the shed be?", options: [red, blue]}',
            '      - "Matte or gloss?"',
            '    completed_steps: [primed the wood]',
            '    resume_guidance: Paint with the chosen colour.',
            '- write: {path: shed.txt, content: "painted"}',
          ].join('\n'),
        ),
      ),
      '  - id: fence',
      '    title: Mend the fence',
      '    capability: code_implementation',
      '    critic: false',
      '    exit_criteria: ["test -f fence.txt"]',
      '    description: |',
      '      Independent of the shed.',
      '',
      indent(sim('- write: {path: fence.txt, content: "mended"}')),
    ].join('\n');
    id = await cluster.submit(yaml);
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it('pauses the task with its questions while the mission runs on', async () => {
    const status = await until(
      'paint to pause and fence to finish',
      () => cluster.client.status(id),
      (s) => task(s, 'paint').status === 'needs_input' && task(s, 'fence').status === 'completed',
    );
    expect(status.status).toBe('running');
    const paint = task(status, 'paint');
    expect(paint.attempts).toBe(1);
    expect(paint.error).toBeNull();
    expect(paint.questions).toEqual([
      { id: 'Q1', text: 'Which colour should the shed be?', options: ['red', 'blue'] },
      // The agent's own JSON, unchanged: an empty list stays a list through the Lua transitions.
      { id: 'Q2', text: 'Matte or gloss?', options: [] },
    ]);
    const gate = (await cluster.client.store.getAudit(id)).find(
      (e) => e.taskId === 'paint' && e.stage === 'gate',
    );
    expect(gate?.message).toMatch(/^paused: the agent needs input/);
  });

  it('resumes as a continuation whose prompt carries the questions and the answer, then completes', async () => {
    expect(await cluster.client.answer(id, 'paint', 'use blue, matte')).toEqual({ attempt: 2 });
    const status = await cluster.client.wait(id, { pollMs: 200 });
    expect(status.status).toBe('done');
    expect(task(status, 'paint')).toMatchObject({ status: 'completed', attempts: 2 });
    // Answered questions are not shown as waiting any more.
    expect(task(status, 'paint').questions).toBeUndefined();
    const audit = await cluster.client.store.getAudit(id);
    expect(audit.find((e) => e.taskId === 'paint' && e.stage === 'answer')?.message).toBe(
      'answered: use blue, matte',
    );
    const [first, second] = runs(audit, 'paint');
    expect(first?.files?.['prompt.md']).not.toContain('## Continuation');
    const prompt = second?.files?.['prompt.md'] ?? '';
    const continuation = prompt.slice(prompt.indexOf('## Continuation'));
    expect(prompt.indexOf('## Continuation')).toBeGreaterThan(prompt.indexOf('## Task'));
    expect(continuation).toContain('### Your Questions');
    expect(continuation).toContain('Which colour should the shed be?');
    expect(continuation).toContain('### Answers\n\nuse blue, matte');
    // A continuation is not a retry: nothing failed.
    expect(prompt).not.toContain('PREVIOUS ATTEMPT FAILED');
    expect(second?.files?.['result.md']).toContain('Answers received: use blue, matte');
  });

  it('refuses an answer for a task that is not waiting for one', async () => {
    await expect(cluster.client.answer(id, 'paint', 'red after all')).rejects.toThrow(
      /not waiting for an answer/,
    );
    await expect(cluster.client.answer(id, 'nope', 'x')).rejects.toThrow(/no task 'nope'/);
  });
});
