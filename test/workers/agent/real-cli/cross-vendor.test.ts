import { copyFile, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { AuditEntry } from '../../../../src/shared/contracts.js';
import { cliHome, hostEnvironment, setUpCli, writeFileTurn } from '../../../helpers/agent-clis.js';
import { ROOT, startCluster, type TestCluster } from '../../../helpers/flotilla.js';
import { type CapturedRequest, startModelServer, textTurn, userText } from '../../../helpers/model-server.js';

/**
 * A mission across vendors: one real CLI builds, the other real CLI reviews as the critic, both
 * through their adapter files unchanged and both talking to one scripted server (Claude Code on
 * the Messages API, Codex on the Responses API). The verdict is parsed from the critic CLI's own
 * output, the score lands in the status, and the audit names the critic's CLI.
 */

const ADAPTERS: Record<'claude-code' | 'codex-cli', string> = {
  'claude-code': 'claude-code.md',
  'codex-cli': 'codex-cli.md',
};

const RESULT = [
  '**Status**: Complete',
  '**Summary**: Wrote greeting.txt.',
  '**Outputs**: greeting.txt',
  '**Findings**: None',
  '**Issues**: None',
  '**Errors**: None',
  '',
].join('\n');

function resultPath(request: CapturedRequest): string {
  const path = /write your result to: (\S+)/.exec(userText(request))?.[1];
  if (!path) throw new Error('the prompt names no result path');
  return path;
}

describe('a cross-vendor mission on real CLIs', () => {
  let dir: string;
  let adapters: string;
  let cluster: TestCluster;
  const cleanups: (() => Promise<void> | void)[] = [];

  beforeAll(async () => {
    dir = await cliHome();
    adapters = join(dir, 'adapters');
    await mkdir(adapters);
    for (const file of Object.values(ADAPTERS))
      await copyFile(join(ROOT, 'adapters', file), join(adapters, file));
    cluster = await startCluster({ hosts: 0, env: { FLOTILLA_HOME: join(dir, 'flotilla') } });
  });
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  afterAll(async () => {
    await cluster?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it.each([
    ['claude-code', 'codex-cli', 'OpenAI Codex CLI', 'responses'],
    ['codex-cli', 'claude-code', 'Claude Code', 'anthropic'],
  ] as const)('%s builds, %s reviews as the critic', async (builder, critic, criticName, criticProtocol) => {
    const issue = `${critic} would name the constant`;
    const server = await startModelServer([
      writeFileTurn(builder, 'greeting.txt', `hello from ${builder}\n`),
      (request) => writeFileTurn(builder, resultPath(request), RESULT),
      textTurn('Built.'),
      // The critic answers in its final message; flotilla reads the verdict from the CLI's stdout.
      textTurn(`Reviewed the diff.\n\n{"score": 8, "verdict": "approve", "issues": ["${issue}"]}`),
    ]);
    cleanups.push(() => server.stop());
    const home = await mkdtemp(join(dir, 'home-'));
    const env = {
      ...(await setUpCli(builder, { home, url: server.url })).env,
      ...(await setUpCli(critic, { home, url: server.url })).env,
    };
    cleanups.push(hostEnvironment(env));
    const host = await cluster.addHost({ adaptersDir: adapters, hostId: `${builder}-builds` });
    cleanups.push(async () => {
      await host.close({ force: true });
      cluster.hosts.splice(cluster.hosts.indexOf(host), 1);
    });
    expect(host.clis.map((c) => c.adapter.cli).sort()).toEqual(['claude-code', 'codex-cli']);

    const status = await cluster.run(
      [
        `goal: ${builder} builds and ${critic} reviews`,
        'workspace: ./ws',
        'defaults: { max_attempts: 1, timeout: 5m }',
        'tasks:',
        '  - id: greet',
        '    title: Write the greeting',
        '    capability: code_implementation',
        `    cli: ${builder}`,
        `    exit_criteria: ["grep -q 'hello from ${builder}' greeting.txt"]`,
        '    description: Create greeting.txt holding one line of greeting.',
      ].join('\n'),
    );
    const audit: AuditEntry[] = await cluster.client.store.getAudit(status.id);
    const critique = audit.find((e) => e.stage === 'critic');
    expect(status.status, JSON.stringify({ status, critique, problems: server.problems })).toBe('done');
    expect(status.tasks[0]).toMatchObject({ status: 'completed', cli: builder, score: 8 });

    // The critic is the other vendor's real CLI, and what it printed carried the verdict.
    expect(critique?.cli).toBe(critic);
    expect(critique?.message).toBe(`critic ${criticName}: score 8/10, approve — ${issue}`);
    expect(critique?.message).not.toContain('self-review');
    const main = server.main();
    expect(main.at(-1)?.protocol).toBe(criticProtocol);
    expect(userText(main.at(-1)!)).toContain('greeting.txt');
    expect(server.problems).toEqual([]);
  });
});
