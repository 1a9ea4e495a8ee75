import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditEntry, MissionStatusJson } from '../../../../src/shared/contracts.js';
import { MAX_ARG_BYTES } from '../../../../src/workers/agent/invocation.js';
import { indent, SIM_ADAPTERS, sim, startCluster, type TestCluster } from '../../../helpers/flotilla.js';

/**
 * Prompt delivery on the real pipeline: the stand-in agent accepts the prompt by every mode, so
 * adapters that differ from examples/adapters/sim.md only in `prompt_delivery` prove each mode
 * gets the whole prompt to the CLI — including a prompt too long for one argument, which goes on
 * stdin instead, and one over the adapter's max_prompt_size, which is not sent at all.
 */

/** sim.md with another `cli` name and delivery; everything else as shipped. */
function variant(
  source: string,
  cli: string,
  delivery: string,
  promptFlag: string,
  maxPromptSize?: number,
): string {
  let text = source
    .replace(/^cli: flotilla-sim$/m, `cli: ${cli}`)
    .replace(/^prompt_delivery: file_path$/m, `prompt_delivery: ${delivery}`)
    .replace(/^prompt_flag: "--prompt-file"$/m, `prompt_flag: ${promptFlag}`);
  if (maxPromptSize !== undefined)
    text = text.replaceAll(/max_prompt_size: \d+/g, `max_prompt_size: ${maxPromptSize}`);
  if (!text.includes(`cli: ${cli}`) || !text.includes(`prompt_delivery: ${delivery}`)) {
    throw new Error('examples/adapters/sim.md changed shape; update this test’s variant()');
  }
  return text;
}

function byId(status: MissionStatusJson, id: string) {
  const found = status.tasks.find((t) => t.id === id);
  if (!found) throw new Error(`no task ${id}`);
  return found;
}

function runs(audit: AuditEntry[], taskId: string): AuditEntry[] {
  return audit.filter((e) => e.taskId === taskId && e.stage === 'run');
}

function task(id: string, cli: string, extra: string[] = [], filler = ''): string {
  return [
    `  - id: ${id}`,
    `    title: Deliver ${id}`,
    '    capability: code_implementation',
    `    cli: ${cli}`,
    '    critic: false',
    `    exit_criteria: ["test -f ${id}.txt"]`,
    ...extra.map((line) => `    ${line}`),
    '    description: |',
    `      Write ${id}.txt.`,
    '',
    indent(sim(`- write: {path: ${id}.txt, content: "delivered"}`)),
    ...(filler ? ['', indent(filler)] : []),
  ].join('\n');
}

describe('prompt delivery', () => {
  let cluster: TestCluster;
  let dir: string;
  let status: MissionStatusJson;
  let audit: AuditEntry[];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'flotilla-delivery-'));
    const adapters = join(dir, 'adapters');
    await mkdir(adapters);
    const source = await readFile(join(SIM_ADAPTERS, 'sim.md'), 'utf8');
    await writeFile(join(adapters, 'a-stdin.md'), variant(source, 'sim-stdin', 'stdin_pipe', 'null'));
    await writeFile(join(adapters, 'b-flag.md'), variant(source, 'sim-flag', 'content_flag', '"--prompt"'));
    await writeFile(
      join(adapters, 'c-tiny.md'),
      variant(source, 'sim-tiny', 'content_flag', '"--prompt"', 500),
    );
    await writeFile(join(adapters, 'd-file.md'), variant(source, 'sim-file', 'file_path', '"--prompt-file"'));
    cluster = await startCluster({ hosts: 0 });
    await cluster.addHost({ adaptersDir: adapters });

    // Lines of prose well past what one argument may hold; the sim block stays in the task section.
    const line = 'Background the agent should read but that changes nothing about the task. ';
    const filler = line.repeat(Math.ceil((MAX_ARG_BYTES + 16_384) / line.length));
    const yaml = [
      'goal: Prove every delivery mode',
      'workspace: ./ws',
      'defaults: { max_attempts: 2, backoff: 200ms, timeout: 60s }',
      'tasks:',
      task('by-file', 'sim-file'),
      task('by-stdin', 'sim-stdin'),
      task('by-flag', 'sim-flag'),
      task('by-flag-long', 'sim-flag', [], filler),
      task('over-limit', 'sim-tiny', ['max_attempts: 1']),
    ].join('\n');
    const id = await cluster.submit(yaml);
    status = await cluster.client.wait(id, { pollMs: 200 });
    audit = await cluster.client.store.getAudit(id);
  });
  afterAll(async () => {
    await cluster?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('gets the prompt to the CLI by file path, on stdin and as one argument', () => {
    for (const id of ['by-file', 'by-stdin', 'by-flag']) {
      // The sim found its block and the result path in what it was given, so it had the prompt.
      expect(byId(status, id)).toMatchObject({ status: 'completed', attempts: 1 });
      expect(runs(audit, id)[0]?.message).toContain('result success from file');
    }
    expect(byId(status, 'by-flag').cli).toBe('sim-flag');
    expect(byId(status, 'by-stdin').cli).toBe('sim-stdin');
  });

  it('sends a prompt too long for one argument on stdin instead of failing to start the CLI', () => {
    const prompt = runs(audit, 'by-flag-long')[0]?.files?.['prompt.md'] ?? '';
    expect(Buffer.byteLength(prompt)).toBeGreaterThan(MAX_ARG_BYTES);
    expect(byId(status, 'by-flag-long')).toMatchObject({ status: 'completed', attempts: 1 });
    // An over-long argument would have been E2BIG: the CLI disabled, not a completed task.
    expect(runs(audit, 'by-flag-long')[0]?.message).toMatch(/^Flotilla Sim exited 0/);
  });

  it('does not send a prompt over the adapter’s max_prompt_size, truncated or otherwise', () => {
    const overLimit = byId(status, 'over-limit');
    expect(overLimit).toMatchObject({ status: 'failed', attempts: 1 });
    expect(overLimit.error).toMatch(/exceeds Flotilla Sim's max_prompt_size \(500\); not sent truncated/);
    expect(runs(audit, 'over-limit').some((e) => e.message.includes('exited'))).toBe(false);
  });
});
