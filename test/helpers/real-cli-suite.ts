import { copyFile, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import { execa } from 'execa';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { AuditEntry, MissionStatusJson } from '../../src/shared/contracts.js';
import { parseUsage, type UsageFormat } from '../../src/workers/agent/usage.js';
import { type AgentCli, cliHome, hostEnvironment, setUpCli, writeFileTurn } from './agent-clis.js';
import { ROOT, SIM_ADAPTERS, SIM_BIN, startCluster, type TestCluster } from './flotilla.js';
import {
  type CapturedRequest,
  type ScriptStep,
  startModelServer,
  type Turn,
  textTurn,
  userText,
} from './model-server.js';

/**
 * One real agent CLI (a devDependency) run by flotilla through the project's own adapter file,
 * copied unchanged into a host's adapters folder; only the environment and config files in a
 * private HOME point the CLI at a scripted model server on loopback. Each test is one mission on
 * its own host: the result file, the stdout fallback, a rate limit and a login error.
 */
export interface RealCli {
  readonly cli: AgentCli;
  readonly displayName: string;
  /** The adapter file in adapters/. */
  readonly file: string;
  /** A capability the adapter offers and the stand-in reviewer does not. */
  readonly capability: string;
  /** The model the adapter's `{model}` becomes, as the server sees it. */
  readonly model: RegExp;
  /** This CLI's usage_format, when it has one. */
  readonly usageFormat?: UsageFormat;
  /** A 429 in the shape this CLI's API sends, and the CLI's line about it. */
  readonly rateLimit: { readonly turn: Turn; readonly says: string };
  /** A 401 in this API's shape, and the CLI's own message about it. */
  readonly loginError: { readonly turn: Turn; readonly says: string };
}

const RESULT_SECTIONS = [
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
].join('\n');

const TURN_USAGE = { input_tokens: 1_000, output_tokens: 50 };

function mission(spec: RealCli, greeting: string): string {
  return [
    `goal: Greet through the real ${spec.displayName}`,
    'workspace: ./ws',
    'defaults: { max_attempts: 2, backoff: 200ms, timeout: 5m }',
    'tasks:',
    '  - id: greet',
    '    title: Write the greeting',
    `    capability: ${spec.capability}`,
    `    cli: ${spec.cli}`,
    `    exit_criteria: ["grep -q '${greeting.trim()}' greeting.txt"]`,
    '    description: Create greeting.txt holding one line of greeting.',
  ].join('\n');
}

/** Where the prompt asks for the result, so the scripted agent writes it there with its own tool. */
function resultPath(request: CapturedRequest): string {
  const path = /write your result to: (\S+)/.exec(userText(request))?.[1];
  if (!path) throw new Error('the prompt names no result path');
  return path;
}

function stage(audit: AuditEntry[], name: AuditEntry['stage']): AuditEntry[] {
  return audit.filter((e) => e.taskId === 'greet' && e.stage === name);
}

function greetTask(status: MissionStatusJson) {
  const found = status.tasks.find((t) => t.id === 'greet');
  if (!found) throw new Error('no task greet');
  return found;
}

export function describeRealCli(spec: RealCli): void {
  describe(`the real ${spec.displayName} through adapters/${spec.file}`, () => {
    let dir: string;
    let adapters: string;
    let cluster: TestCluster;
    const cleanups: (() => Promise<void> | void)[] = [];

    beforeAll(async () => {
      dir = await cliHome();
      adapters = join(dir, 'adapters');
      await mkdir(adapters);
      await copyFile(join(ROOT, 'adapters', spec.file), join(adapters, spec.file));
      await copyFile(join(SIM_ADAPTERS, 'sim-reviewer.md'), join(adapters, 'sim-reviewer.md'));
      cluster = await startCluster({ hosts: 0, env: { FLOTILLA_HOME: join(dir, 'flotilla') } });
    });
    afterEach(async () => {
      for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    });
    afterAll(async () => {
      await cluster?.stop();
      await rm(dir, { recursive: true, force: true });
    });

    /** A scripted server, the CLI's config in a fresh HOME, and a host that sees only them. */
    async function hostWith(script: ScriptStep[], hostId: string) {
      const server = await startModelServer(script);
      cleanups.push(() => server.stop());
      const home = await mkdtemp(join(dir, 'home-'));
      const { env } = await setUpCli(spec.cli, { home, url: server.url });
      // The stand-in reviewer is on the host too, so a CLI other than the builder's reviews.
      cleanups.push(hostEnvironment({ ...env, PATH: `${SIM_BIN}${delimiter}${env.PATH}` }));
      const host = await cluster.addHost({ adaptersDir: adapters, hostId });
      cleanups.push(async () => {
        await host.close({ force: true });
        cluster.hosts.splice(cluster.hosts.indexOf(host), 1);
      });
      expect(host.clis.map((c) => c.adapter.cli).sort()).toEqual([spec.cli, 'flotilla-sim-reviewer'].sort());
      return { server, host };
    }

    it('delivers the prompt, and the CLI writes the work and the result file with its own tools', async () => {
      const greeting = `hello from ${spec.cli}, via flotilla\n`;
      const { server } = await hostWith(
        [
          writeFileTurn(spec.cli, 'greeting.txt', greeting, TURN_USAGE),
          (request) => ({
            ...writeFileTurn(spec.cli, resultPath(request), RESULT_SECTIONS),
            usage: TURN_USAGE,
          }),
          textTurn('Done: greeting.txt is written and the result file describes it.', TURN_USAGE),
        ],
        `${spec.cli}-file`,
      );
      const status = await cluster.run(mission(spec, greeting));
      const audit = await cluster.client.store.getAudit(status.id);
      const [run] = stage(audit, 'run');
      const context = JSON.stringify({ status, run, problems: server.problems });
      expect(status.status, context).toBe('done');
      expect(greetTask(status)).toMatchObject({ status: 'completed', attempts: 1, cli: spec.cli });

      // The CLI's own write, merged into the integration branch.
      const { meta } = await cluster.client.store.getMission(status.id);
      const shown = await execa('git', ['-C', meta.repo, 'show', `${status.branch}:greeting.txt`]);
      expect(`${shown.stdout}\n`).toBe(greeting);

      // flotilla's prompt reached the model whole, as the adapter delivers it.
      expect(server.problems).toEqual([]);
      const main = server.main();
      expect(main).toHaveLength(3);
      const prompt = run?.files?.['prompt.md'] ?? '';
      expect(prompt).toContain('# Dispatch Task');
      expect(userText(main[0]!)).toContain(prompt.trim());
      expect(
        JSON.stringify(main[0]!.body).match(spec.model) ?? main[0]!.path.match(spec.model),
      ).not.toBeNull();

      // The result is the file the CLI wrote at the resolved result path.
      expect(run?.message).toMatch(new RegExp(`^${spec.displayName} exited 0 .*result success from file`));
      expect(run?.files?.['result.md']).toContain('Wrote greeting.txt with the greeting');

      // What the CLI printed about its usage, read with the adapter's usage_format.
      if (spec.usageFormat) {
        const usage = parseUsage(spec.usageFormat, run?.files?.['stdout.txt'] ?? '');
        expect(usage?.inputTokens).toBe(3 * TURN_USAGE.input_tokens);
        expect(usage?.outputTokens).toBe(3 * TURN_USAGE.output_tokens);
        if (usage?.costUsd !== undefined) expect(greetTask(status).costUsd).toBeCloseTo(usage.costUsd, 9);
      }
    });

    it('takes the result from stdout when the CLI writes no result file', async () => {
      const greeting = `stdout greeting from ${spec.cli}\n`;
      await hostWith(
        [writeFileTurn(spec.cli, 'greeting.txt', greeting), textTurn(RESULT_SECTIONS)],
        `${spec.cli}-stdout`,
      );
      const status = await cluster.run(mission(spec, greeting));
      const [run] = stage(await cluster.client.store.getAudit(status.id), 'run');
      expect(status.status, JSON.stringify({ status, run })).toBe('done');
      expect(run?.message).toMatch(/result success from stdout/);
      expect(run?.files?.['result.md']).toContain('Wrote greeting.txt with the greeting');
    });

    it('treats a 429 as a rate limit: no attempt used, the CLI cools down, the job goes back', async () => {
      const { server } = await hostWith([spec.rateLimit.turn], `${spec.cli}-429`);
      const id = await cluster.submit(mission(spec, 'never written'));
      const limited = await waitFor(async () => {
        const audit = await cluster.client.store.getAudit(id);
        return stage(audit, 'run').find((e) => e.message.startsWith('rate limited'));
      });
      expect(limited.message).toContain('rate limited (attempt not counted, back to the queue)');
      expect(limited.message).toContain(spec.rateLimit.says);
      const host = (await cluster.client.store.hosts()).find((h) => h.hostId === `${spec.cli}-429`);
      expect(host?.coolingDown.map((c) => c.cli)).toEqual([spec.cli]);
      const task = greetTask(await cluster.client.status(id));
      expect(task.attempts).toBe(1);
      expect(task.status).not.toBe('failed');
      expect(server.main().length).toBeGreaterThan(0);
      await cluster.client.cancel(id);
      expect((await cluster.client.wait(id, { pollMs: 200 })).status).toBe('cancelled');
    });

    it('fails fast on a 401 with the CLI’s own message, and the host stops offering the CLI', async () => {
      await hostWith([spec.loginError.turn], `${spec.cli}-401`);
      const status = await cluster.run(mission(spec, 'never written'));
      const task = greetTask(status);
      expect(status.status).toBe('failed');
      expect(task).toMatchObject({ status: 'failed', attempts: 1 });
      // The status line is clipped; the audit keeps the CLI's whole line.
      expect(task.error).toContain(`run failed: ${spec.displayName}: `);
      const [run] = stage(await cluster.client.store.getAudit(status.id), 'run');
      expect(run?.message).toContain(spec.loginError.says);
      const host = (await cluster.client.store.hosts()).find((h) => h.hostId === `${spec.cli}-401`);
      expect(host?.disabled.map((d) => d.cli)).toEqual([spec.cli]);
      expect(host?.disabled[0]?.reason).toContain(spec.loginError.says);
    });
  });
}

async function waitFor<T>(probe: () => Promise<T | undefined>, timeoutMs = 120_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
