import { readlink } from 'node:fs/promises';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditEntry, MissionStatusJson } from '../../../../src/shared/contracts.js';
import { indent, sim, startCluster, type TestCluster } from '../../../helpers/flotilla.js';

/**
 * Result collection on the real pipeline (DESIGN §4 step 4, cli-dispatch's error recovery): a result
 * printed instead of written, a timeout that left a partial result (Complete with Warnings, judged by
 * the criteria) and one that left none (a failed attempt that retries), and the CLI's whole process
 * tree killed on timeout.
 */

function byId(status: MissionStatusJson, id: string) {
  const found = status.tasks.find((t) => t.id === id);
  if (!found) throw new Error(`no task ${id}`);
  return found;
}

function runs(audit: AuditEntry[], taskId: string): AuditEntry[] {
  return audit.filter((e) => e.taskId === taskId && e.stage === 'run');
}

function gates(audit: AuditEntry[], taskId: string): string[] {
  return audit.filter((e) => e.taskId === taskId && e.stage === 'gate').map((e) => e.message);
}

/**
 * Processes whose command line holds `needle`, this test's own `ps` excluded; with `under`, only
 * those working inside that folder (so another test run on the machine with the same task ids
 * does not count).
 */
async function processesWith(needle: string, under?: string): Promise<string[]> {
  const { stdout } = await execa('ps', ['-eo', 'pid=,args=']);
  const lines = stdout.split('\n').filter((line) => line.includes(needle) && !line.includes('ps -eo'));
  if (!under) return lines;
  const inside = await Promise.all(
    lines.map(async (line) => {
      const cwd = await readlink(`/proc/${line.trim().split(/\s+/)[0]}/cwd`).catch(() => '');
      return cwd.startsWith(under);
    }),
  );
  return lines.filter((_, i) => inside[i]);
}

/** A `sleep` whose odd duration names it, so no other process on the machine matches. */
const GRANDCHILD_SLEEP = `${4000 + Math.floor(Math.random() * 900)}.25`;

describe('result collection', () => {
  let cluster: TestCluster;
  let status: MissionStatusJson;
  let audit: AuditEntry[];
  let repo: string;

  beforeAll(async () => {
    cluster = await startCluster({ hosts: 1, slots: 4 });
    // The timeouts are short, but not so short that a loaded 2-core machine misses them while the
    // stand-in is still starting: `exceed_timeout` writes its partial result first thing.
    const task = (id: string, steps: string, extra: string[] = [], criteria = [`test -f ${id}.txt`]) =>
      [
        `  - id: ${id}`,
        `    title: Task ${id}`,
        '    capability: code_implementation',
        '    critic: false',
        `    exit_criteria: ${JSON.stringify(criteria)}`,
        ...extra.map((line) => `    ${line}`),
        '    description: |',
        `      Do ${id}.`,
        '',
        indent(sim(steps)),
      ].join('\n');
    const yaml = [
      'goal: Prove result collection',
      'workspace: ./ws',
      'defaults: { max_attempts: 2, backoff: 200ms, timeout: 60s }',
      'tasks:',
      task('printed', '- write: {path: printed.txt, content: "x"}\n- stdout_only: true'),
      task(
        'cut-partial',
        '- write: {path: cut-partial.txt, content: "half done"}\n- exceed_timeout: {partial_result: true}',
        ['timeout: 6s', 'max_attempts: 1'],
      ),
      task('exit-3', '- write: {path: exit-3.txt, content: "x"}\n- result: {exit_code: 3}'),
      task('limited', '- rate_limit: {times: 1}\n- write: {path: limited.txt, content: "x"}'),
      task(
        'cut-bare',
        [
          '- write: {path: cut-bare.txt, content: "{attempt}"}',
          `- run: {argv: [sleep, "${GRANDCHILD_SLEEP}"], timeout: 10m}`,
          '  before_attempt: 2',
        ].join('\n'),
        ['timeout: 6s'],
      ),
    ].join('\n');
    const id = await cluster.submit(yaml);
    status = await cluster.client.wait(id, { pollMs: 200 });
    audit = await cluster.client.store.getAudit(id);
    repo = (await cluster.client.store.getMission(id)).meta.repo;
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it('takes a result printed on stdout (inside the CLI’s JSON) when no file was written', async () => {
    expect(byId(status, 'printed')).toMatchObject({ status: 'completed', attempts: 1 });
    const [run] = runs(audit, 'printed');
    expect(run?.message).toContain('result success from stdout');
    expect(run?.files?.['result.md']).toContain('**Status**: Complete');
    // The stdout result was written to the result path, so it is archived with the prompt.
    const files = await execa('git', [
      '-C',
      repo,
      'ls-tree',
      '-r',
      '--name-only',
      `refs/flotilla/${status.id}/printed/a1`,
    ]);
    expect(files.stdout).toMatch(/\.planning\/dispatch\/archive\/\d{8}-\d{6}-printed-a1-RESULT\.md/);
  });

  it('keeps a partial result after a timeout as Complete with Warnings, and lets the criteria decide', () => {
    expect(byId(status, 'cut-partial')).toMatchObject({ status: 'completed', attempts: 1 });
    const [run] = runs(audit, 'cut-partial');
    expect(run?.message).toContain('(timed out)');
    expect(run?.message).toContain('result success_with_warnings from file');
    expect(run?.files?.['result.md']).toContain('**Status**: Complete with Warnings');
    expect(
      audit.some((e) => e.taskId === 'cut-partial' && e.stage === 'verify' && e.message.includes('passed')),
    ).toBe(true);
  });

  it('fails an attempt that timed out without a result, and retries it with the failure in the prompt', () => {
    expect(byId(status, 'cut-bare')).toMatchObject({ status: 'completed', attempts: 2 });
    const [first, second] = runs(audit, 'cut-bare');
    expect(first?.message).toContain('(timed out)');
    expect(first?.message).toContain('result failure');
    expect(gates(audit, 'cut-bare')[0]).toMatch(
      /^retry in \d+s: run failed: The CLI timed out before writing a result file/,
    );
    expect(second?.files?.['prompt.md']).toContain('## ⚠️ PREVIOUS ATTEMPT FAILED (attempt 1/2)');
    expect(second?.files?.['prompt.md']).toContain('The CLI timed out before writing a result file');
  });

  it('keeps a result written before a non-zero exit as a partial result, with a warning', () => {
    expect(byId(status, 'exit-3')).toMatchObject({ status: 'completed', attempts: 1 });
    const [run] = runs(audit, 'exit-3');
    expect(run?.message).toMatch(/^Flotilla Sim exited 3 .*result success_with_warnings from file/);
    expect(run?.message).toContain('partial result: the process did not end cleanly');
  });

  it('does not count a rate-limited run as an attempt: the job goes back to the queue', () => {
    expect(byId(status, 'limited')).toMatchObject({ status: 'completed', attempts: 1 });
    const [limited, ran] = runs(audit, 'limited');
    expect(limited?.message).toMatch(/^rate limited \(attempt not counted, back to the queue\): .*429/);
    expect(ran?.message).toMatch(/^Flotilla Sim exited 0/);
    expect(ran?.attempt).toBe(1);
  });

  it('kills the CLI’s whole process tree on timeout: neither the agent nor its child is left', async () => {
    // The sim's `run` step started `sleep` as its own child; only a process-group kill reaches it.
    expect(await processesWith(`sleep ${GRANDCHILD_SLEEP}`)).toEqual([]);
    expect(await processesWith('cut-bare-a1-PROMPT.md', cluster.dir)).toEqual([]);
    expect(await processesWith('cut-partial-a1-PROMPT.md', cluster.dir)).toEqual([]);
  });
});
