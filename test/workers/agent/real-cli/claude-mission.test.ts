import { copyFile, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { execa } from 'execa';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { AuditEntry, MissionStatusJson } from '../../../../src/shared/contracts.js';
import { ROOT, SIM_ADAPTERS, startCluster, type TestCluster } from '../../../helpers/flotilla.js';
import {
  type CapturedRequest,
  type ScriptedModelServer,
  startModelServer,
  textTurn,
  userText,
  writeTurn,
} from '../../../helpers/model-server.js';

/**
 * A mission through the real Claude Code CLI (`node_modules/.bin/claude`) and the real adapter file
 * `adapters/claude-code.md`, unchanged: the host's environment points `claude` at a scripted
 * Messages API, the CLI writes the task's file and the result file with its own Write tool, and
 * flotilla verifies, reviews (with the stand-in reviewer, a CLI other than the builder's),
 * merges and records Claude's own cost. The second test runs the same CLI with no credentials.
 */

const NOT_LOGGED_IN = 'Not logged in · Please run /login';
const BIN = join(ROOT, 'node_modules', '.bin');

/** What the host's CLIs inherit: the test process's environment, as a worker's would be. */
const ENV_KEYS = [
  'PATH',
  'HOME',
  'ANTHROPIC_BASE_URL',
  'ANTHROPIC_API_KEY',
  'CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC',
  'DISABLE_AUTOUPDATER',
  'DISABLE_TELEMETRY',
  'DISABLE_ERROR_REPORTING',
] as const;

/**
 * Sets the host environment for one test and gives back a function that restores it. Any other
 * ANTHROPIC_* or CLAUDE_* variable (a developer's own login) is removed for the test's duration
 * without being read, so it can neither leak into the run nor make the "no credentials" case pass.
 */
function hostEnvironment(values: Partial<Record<(typeof ENV_KEYS)[number], string>>): () => void {
  const saved = new Map<string, string | undefined>();
  const touched = new Set<string>([
    ...ENV_KEYS,
    ...Object.keys(process.env).filter((k) => k.startsWith('ANTHROPIC_') || k.startsWith('CLAUDE_')),
  ]);
  for (const key of touched) {
    saved.set(key, process.env[key]);
    delete process.env[key];
  }
  for (const [key, value] of Object.entries(values)) if (value !== undefined) process.env[key] = value;
  return () => {
    for (const [key, value] of saved) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  };
}

/** A host adapters folder: the real claude-code.md, copied now so it is the file as it stands, and the stand-in reviewer. */
async function adaptersFolder(dir: string): Promise<string> {
  const folder = join(dir, 'adapters');
  await mkdir(folder, { recursive: true });
  await copyFile(join(ROOT, 'adapters', 'claude-code.md'), join(folder, 'claude-code.md'));
  await copyFile(join(SIM_ADAPTERS, 'sim-reviewer.md'), join(folder, 'sim-reviewer.md'));
  return folder;
}

const GREETING = 'hello from claude, via flotilla\n';

/** The result file the scripted agent writes, at the path the prompt names. */
function resultTurn(request: CapturedRequest) {
  const path = /write your result to: (\S+)/.exec(userText(request))?.[1];
  if (!path) return textTurn('I could not find where to write my result.');
  return writeTurn(
    path,
    [
      '# Result: greet',
      '',
      '**Status**: Complete',
      '',
      '**Summary**: Wrote greeting.txt with the greeting the task asks for.',
      '',
      '**Outputs**: greeting.txt',
      '',
      '**Findings**: The repository had no greeting before; one file was enough.',
      '',
      '**Issues**: None',
      '',
      '**Errors**: None',
      '',
    ].join('\n'),
  );
}

/** A result that pauses the task: the six sections and agent-dispatch's needs_input block. */
function askTurn(question: string) {
  return (request: CapturedRequest) => {
    const path = /write your result to: (\S+)/.exec(userText(request))?.[1] ?? 'missing-result-path.md';
    return writeTurn(
      path,
      [
        '**Status**: Needs Input',
        `**Summary**: I need an answer before I go on: ${question}`,
        '**Outputs**: None',
        '**Findings**: None',
        '**Issues**: None',
        '**Errors**: None',
        '',
        '<agent-result>',
        '<status>needs_input</status>',
        '<outputs></outputs>',
        `<summary>Waiting for: ${question}</summary>`,
        `<questions>[{"id": "Q1", "text": "${question}", "options": []}]</questions>`,
        '<completed-steps>read the task</completed-steps>',
        '<resume-guidance>Answer and I continue.</resume-guidance>',
        '</agent-result>',
        '',
      ].join('\n'),
    );
  };
}

const MISSION = [
  'goal: Greet through the real Claude Code',
  'workspace: ./ws',
  'defaults: { max_attempts: 2, backoff: 200ms, timeout: 5m }',
  'tasks:',
  '  - id: greet',
  '    title: Write the greeting',
  '    capability: code_implementation',
  '    exit_criteria: ["grep -q \'hello from claude\' greeting.txt"]',
  '    description: Create greeting.txt holding one line of greeting.',
].join('\n');

function task(status: MissionStatusJson, id: string) {
  const found = status.tasks.find((t) => t.id === id);
  if (!found) throw new Error(`no task ${id}`);
  return found;
}

function stage(audit: AuditEntry[], taskId: string, name: AuditEntry['stage']): AuditEntry[] {
  return audit.filter((e) => e.taskId === taskId && e.stage === name);
}

describe('a mission on the real claude CLI', () => {
  let dir: string;
  let adapters: string;
  const cleanups: (() => Promise<void> | void)[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'flotilla-claude-mission-'));
    adapters = await adaptersFolder(dir);
  });
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function cluster(env: Parameters<typeof hostEnvironment>[0]): Promise<TestCluster> {
    cleanups.push(hostEnvironment(env));
    const started = await startCluster({ hosts: 0 });
    cleanups.push(() => started.stop());
    await started.addHost({ adaptersDir: adapters, hostId: 'claude-host' });
    return started;
  }

  it('builds, verifies, reviews and merges a task written by claude through adapters/claude-code.md', async () => {
    const server: ScriptedModelServer = await startModelServer([
      writeTurn('greeting.txt', GREETING),
      resultTurn,
      textTurn('Done: greeting.txt is written and the result file describes it.'),
    ]);
    cleanups.push(() => server.stop());
    const home = await mkdtemp(join(dir, 'home-'));
    const c = await cluster({
      PATH: `${BIN}${delimiter}${process.env.PATH ?? ''}`,
      HOME: home,
      ANTHROPIC_BASE_URL: server.url,
      ANTHROPIC_API_KEY: 'test-key',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_AUTOUPDATER: '1',
      DISABLE_TELEMETRY: '1',
      DISABLE_ERROR_REPORTING: '1',
    });
    expect(c.hosts[0]?.clis.map((cli) => cli.adapter.cli)).toEqual(['claude-code', 'flotilla-sim-reviewer']);

    const status = await c.run(MISSION);
    const audit = await c.client.store.getAudit(status.id);
    const [run] = stage(audit, 'greet', 'run');
    expect(status.status, JSON.stringify({ status, run: run?.message, problems: server.problems })).toBe(
      'done',
    );
    expect(task(status, 'greet')).toMatchObject({ status: 'completed', attempts: 1, cli: 'claude-code' });

    // The work is Claude's own Write, merged into the integration branch.
    const { meta } = await c.client.store.getMission(status.id);
    const shown = await execa('git', ['-C', meta.repo, 'show', `${status.branch}:greeting.txt`]);
    expect(`${shown.stdout}\n`).toBe(GREETING);

    // The server saw flotilla's prompt, delivered on stdin as the adapter says, whole.
    expect(server.problems).toEqual([]);
    const main = server.requests.filter((r) => r.kind === 'main');
    expect(main).toHaveLength(3);
    const prompt = run?.files?.['prompt.md'] ?? '';
    expect(prompt).toContain('# Dispatch Task');
    expect(userText(main[0]!)).toContain(prompt.trim());
    expect(main[0]!.headers['x-api-key']).toBe('test-key');
    // {model} became the adapter's model_execution alias, which the CLI resolved itself.
    expect((main[0]!.body as { model?: string }).model).toMatch(/sonnet/);

    // The result came from the file Claude wrote at the resolved result path.
    expect(run?.message).toMatch(/^Claude Code exited 0 .*result success from file/);
    expect(run?.files?.['result.md']).toContain('Wrote greeting.txt with the greeting');

    // The cost is Claude's own total_cost_usd from its JSON line.
    const printed = JSON.parse(run?.files?.['stdout.txt'] ?? '{}') as { total_cost_usd?: number };
    expect(printed.total_cost_usd).toBeGreaterThan(0);
    expect(task(status, 'greet').costUsd).toBeCloseTo(printed.total_cost_usd ?? 0, 9);
    expect(status.costUsd).toBeCloseTo(printed.total_cost_usd ?? 0, 9);

    // A CLI other than the builder's reviewed it.
    const [critic] = stage(audit, 'greet', 'critic');
    expect(critic?.cli).toBe('flotilla-sim-reviewer');
    expect(critic?.message).toContain('approve');
  });

  it('pauses on needs_input, resumes with every answered round, and refuses a third round', async () => {
    const questions = ['Formal or casual greeting?', 'With an exclamation mark?', 'Signed by whom?'];
    const server = await startModelServer(
      questions.flatMap((question) => [askTurn(question), textTurn('I asked; waiting for the answer.')]),
    );
    cleanups.push(() => server.stop());
    const home = await mkdtemp(join(dir, 'home-'));
    const c = await cluster({
      PATH: `${BIN}${delimiter}${process.env.PATH ?? ''}`,
      HOME: home,
      ANTHROPIC_BASE_URL: server.url,
      ANTHROPIC_API_KEY: 'test-key',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_AUTOUPDATER: '1',
      DISABLE_TELEMETRY: '1',
      DISABLE_ERROR_REPORTING: '1',
    });
    const id = await c.submit(MISSION);
    const paused = async (attempt: number) => {
      const deadline = Date.now() + 90_000;
      for (;;) {
        const status = await c.client.status(id);
        const greet = task(status, 'greet');
        if (greet.status === 'needs_input' && greet.attempts === attempt) return status;
        if (Date.now() > deadline || ['failed', 'completed'].includes(greet.status)) {
          throw new Error(`greet did not pause at attempt ${attempt}: ${JSON.stringify(greet)}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    };

    const first = await paused(1);
    expect(first.status).toBe('running');
    expect(task(first, 'greet').questions).toEqual([{ id: 'Q1', text: questions[0], options: [] }]);
    await c.client.answer(id, 'greet', 'formal');
    await paused(2);
    await c.client.answer(id, 'greet', 'no exclamation mark');
    await paused(3);
    await expect(c.client.answer(id, 'greet', 'me')).rejects.toThrow(/two answered rounds/);
    expect(task(await c.client.status(id), 'greet').status).toBe('needs_input');

    const audit = await c.client.store.getAudit(id);
    const prompts = stage(audit, 'greet', 'run').map((e) => e.files?.['prompt.md'] ?? '');
    expect(prompts).toHaveLength(3);
    expect(prompts[0]).not.toContain('## Continuation');
    const second = prompts[1]!.slice(prompts[1]!.indexOf('## Continuation'));
    expect(second).toContain(questions[0]);
    expect(second).toContain('formal');
    // The second continuation carries both rounds: each question with its own answer.
    const third = prompts[2]!.slice(prompts[2]!.indexOf('## Continuation'));
    for (const text of [questions[0], 'formal', questions[1], 'no exclamation mark'])
      expect(third).toContain(text);
    expect(third.indexOf(questions[0]!)).toBeLessThan(third.indexOf(questions[1]!));
    // What Claude received is what the audit shows.
    const main = server.requests.filter((r) => r.kind === 'main');
    expect(userText(main[4]!)).toContain(prompts[2]!.trim());
    expect(server.problems).toEqual([]);

    await c.client.cancel(id);
    expect((await c.client.wait(id, { pollMs: 200 })).status).toBe('cancelled');
  });

  it('fails fast with Claude’s own message when it is not logged in, and the host stops offering it', async () => {
    const home = await mkdtemp(join(dir, 'empty-home-'));
    const c = await cluster({
      PATH: `${BIN}${delimiter}${process.env.PATH ?? ''}`,
      HOME: home,
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_AUTOUPDATER: '1',
      DISABLE_TELEMETRY: '1',
      DISABLE_ERROR_REPORTING: '1',
    });
    expect(c.hosts[0]?.clis.map((cli) => cli.adapter.cli)).toContain('claude-code');

    const status = await c.run(MISSION);
    const greet = task(status, 'greet');
    expect(status.status).toBe('failed');
    expect(greet).toMatchObject({ status: 'failed', attempts: 1 });
    // Claude's own words, not the JSON line that carried them.
    expect(greet.error).toContain(`Claude Code: ${NOT_LOGGED_IN}`);
    expect(greet.error).not.toContain('"type":"result"');
    // One attempt, far inside the task's 5 minutes and the adapter's 15: nothing waited for a timeout.
    const took = Date.parse(greet.finishedAt ?? '') - Date.parse(greet.startedAt ?? '');
    expect(took).toBeLessThan(120_000);

    const hosts = await c.client.store.hosts();
    const host = hosts.find((h) => h.hostId === 'claude-host');
    expect(host?.disabled).toEqual([{ cli: 'claude-code', reason: NOT_LOGGED_IN }]);
    expect(host?.clis.map((cli) => cli.cli)).toEqual(['flotilla-sim-reviewer']);
  });
});
