import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditEntry, MissionStatusJson } from '../../../../src/shared/contracts.js';
import { indent, SIM_ADAPTERS, sim, startCluster, type TestCluster } from '../../../helpers/flotilla.js';

/**
 * Loud agents on the real pipeline (a private Redis, an in-process host, flotilla-sim's `print`
 * step): a CLI that prints hundreds of megabytes finishes on its own merits, since its output is
 * read as it comes and only its tail kept. Before, output was buffered up to 16 MB and the pipe
 * cut past it: the CLI died of EPIPE and its task failed with "The CLI failed and printed no
 * structured result". An operator's FLOTILLA_MAX_OUTPUT stops such a CLI with a plain message.
 */

function byId(status: MissionStatusJson, id: string) {
  const found = status.tasks.find((t) => t.id === id);
  if (!found) throw new Error(`no task ${id}`);
  return found;
}

function task(fields: { id: string; steps: string; criteria?: string; extra?: string[] }): string {
  return [
    `  - id: ${fields.id}`,
    `    title: Task ${fields.id}`,
    '    capability: code_implementation',
    '    critic: false',
    `    exit_criteria: [${JSON.stringify(fields.criteria ?? `test -f ${fields.id}.txt`)}]`,
    ...(fields.extra ?? []).map((line) => `    ${line}`),
    '    description: |',
    `      Do ${fields.id}.`,
    '',
    indent(sim(fields.steps)),
  ].join('\n');
}

function mission(tasks: string[]): string {
  return [
    'goal: Survive loud agents',
    'workspace: ./ws',
    'defaults: { max_attempts: 1, timeout: 5m }',
    'tasks:',
    ...tasks,
  ].join('\n');
}

const runEntry = (audit: AuditEntry[], taskId: string) =>
  audit.find((e) => e.taskId === taskId && e.stage === 'run');

const NOISE = 'flotilla-sim: a line of output from a loud agent, printed on purpose';

describe('a loud agent on a host without a cap', () => {
  let cluster: TestCluster;
  let adapters: string;

  beforeAll(async () => {
    // Besides the stand-in as the adapters ship it (Claude Code's JSON line on stdout), one that
    // prints its result as plain text on stdout, with no JSON around it and no usage format; it
    // comes second in file order, so only a task that pins it runs on it.
    adapters = await mkdtemp(join(tmpdir(), 'flotilla-loud-adapters-'));
    const shipped = await readFile(join(SIM_ADAPTERS, 'sim.md'), 'utf8');
    await writeFile(join(adapters, 'sim.md'), shipped);
    await writeFile(
      join(adapters, 'text-sim.md'),
      shipped
        .replace('cli: flotilla-sim', 'cli: sim-text')
        .replace('"--output-format", "json"', '"--output-format", "text"')
        .replace(/^usage_format: .*\n/m, ''),
    );
    cluster = await startCluster({ hosts: 0 });
    await cluster.addHost({ adaptersDir: adapters });
  });
  afterAll(async () => {
    await cluster?.stop();
    if (adapters) await rm(adapters, { recursive: true, force: true });
  });

  it('200 MB on stdout, then the result and its cost in the JSON line at the end: done, cost counted', async () => {
    const status = await cluster.run(
      mission([
        task({
          id: 'loud',
          steps: [
            '- print: {mb: 200}',
            '- write: {path: loud.txt, content: done}',
            '- stdout_only: true',
            '- cost_usd: 0.25',
            '- result: {summary: "Wrote loud.txt after a lot of logging."}',
          ].join('\n'),
        }),
      ]),
    );
    const loud = byId(status, 'loud');
    expect(status.status, loud.error ?? '').toBe('done');
    expect(loud.cli).toBe('flotilla-sim');
    const entry = runEntry(await cluster.client.store.getAudit(status.id), 'loud');
    expect(loud.costUsd).toBeCloseTo(0.25, 6);
    expect(entry?.event).toMatchObject({ resultSource: 'stdout', resultStatus: 'success' });
    expect(entry?.files?.['result.md']).toContain('Wrote loud.txt after a lot of logging.');
    const stdout = entry?.files?.['stdout.txt'] ?? '';
    expect(stdout).toMatch(/^\[200 MB printed in all; only the end is kept\]\n/);
    expect(stdout).toContain('"total_cost_usd":0.25');
    expect(stdout.length).toBeLessThan(25_000);
  });

  it('40 MB on stdout and the result in its file: done', async () => {
    const status = await cluster.run(
      mission([task({ id: 'logs', steps: '- print: {mb: 40}\n- write: {path: logs.txt, content: ok}' })]),
    );
    expect(status.status, byId(status, 'logs').error ?? '').toBe('done');
  });

  it('40 MB on stderr: done, and the audit keeps the end of stderr', async () => {
    const status = await cluster.run(
      mission([
        task({
          id: 'warns',
          steps: '- print: {mb: 40, stream: stderr}\n- write: {path: warns.txt, content: ok}',
        }),
      ]),
    );
    expect(status.status, byId(status, 'warns').error ?? '').toBe('done');
    const stderr =
      runEntry(await cluster.client.store.getAudit(status.id), 'warns')?.files?.['stderr.txt'] ?? '';
    expect(stderr).toMatch(/^\[40 MB printed in all; only the end is kept\]\n/);
    expect(stderr.trimEnd().split('\n').at(-1)).toBe(NOISE);
  });

  it('40 MB of plain text on stdout with the six sections at the end: the result is read from stdout', async () => {
    const status = await cluster.run(
      mission([
        task({
          id: 'plain',
          extra: ['cli: sim-text'],
          steps: [
            '- print: {mb: 40}',
            '- write: {path: plain.txt, content: ok}',
            '- stdout_only: true',
            '- result: {summary: "Plain text after the noise."}',
          ].join('\n'),
        }),
      ]),
    );
    const plain = byId(status, 'plain');
    expect(status.status, plain.error ?? '').toBe('done');
    expect(plain.cli).toBe('sim-text');
    const entry = runEntry(await cluster.client.store.getAudit(status.id), 'plain');
    expect(entry?.event).toMatchObject({ resultSource: 'stdout', resultStatus: 'success' });
    // What is kept of stdout is its end: the result, not the 40 MB before it.
    const result = entry?.files?.['result.md'] ?? '';
    expect(result).toContain('Plain text after the noise.');
    expect(result.length).toBeLessThanOrEqual(4 * 1024 * 1024);
  });

  it('an exit criterion that prints 30 MB is judged by its exit code', async () => {
    const status = await cluster.run(
      mission([
        task({
          id: 'verbose',
          steps: '- write: {path: verbose.txt, content: ok}',
          criteria: `yes 'test output line' | head -c ${30 * 1024 * 1024} && test -f verbose.txt`,
        }),
      ]),
    );
    expect(status.status, byId(status, 'verbose').error ?? '').toBe('done');
  });
});

describe('a loud agent on a host with FLOTILLA_MAX_OUTPUT=20MB', () => {
  let cluster: TestCluster;

  beforeAll(async () => {
    cluster = await startCluster({ hosts: 1, env: { FLOTILLA_MAX_OUTPUT: '20MB' } });
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it('is stopped past the cap, and its task says why; one under the cap finishes', async () => {
    const status = await cluster.run(
      mission([
        task({ id: 'flood', steps: '- print: {mb: 100}\n- write: {path: flood.txt, content: ok}' }),
        task({ id: 'quiet', steps: '- print: {mb: 5}\n- write: {path: quiet.txt, content: ok}' }),
      ]),
    );
    const flood = byId(status, 'flood');
    expect(flood.status).toBe('failed');
    expect(flood.error).toContain('The CLI printed more than 20 MB; stopped by flotilla.');
    expect(flood.error).not.toMatch(/EPIPE/);
    const entry = runEntry(await cluster.client.store.getAudit(status.id), 'flood');
    expect(entry?.event).toMatchObject({ exitCode: null, timedOut: false });
    expect(entry?.message).toContain('the CLI printed more than 20 MB; stopped by flotilla');
    expect(byId(status, 'quiet').status, byId(status, 'quiet').error ?? '').toBe('completed');
  });

  it('stops a reviewer past the cap too, and the attempt says the reviewer did', async () => {
    const status = await cluster.run(
      mission([
        task({
          id: 'reviewed',
          extra: ['critic: true'],
          steps:
            '- write: {path: reviewed.txt, content: ok}\n- print: {mb: 100}\n  role: reviewer\n- review: {score: 9}',
        }).replace('    critic: false\n', ''),
      ]),
    );
    const reviewed = byId(status, 'reviewed');
    expect(reviewed.status).toBe('failed');
    expect(reviewed.error).toContain(
      'the reviewer Flotilla Sim Reviewer printed more than 20 MB; stopped by flotilla',
    );
  });
});
