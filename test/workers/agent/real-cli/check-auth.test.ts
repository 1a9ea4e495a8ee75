import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AgentCli, CLI_BIN, setUpCli } from '../../../helpers/agent-clis.js';
import { ROOT } from '../../../helpers/flotilla.js';
import { type ScriptedModelServer, startModelServer, textTurn } from '../../../helpers/model-server.js';

/**
 * `flotilla detect --check-auth` on the shipped adapters, with the four real CLIs installed: once
 * with every CLI pointed at the scripted server (logged in), once with a HOME holding nothing and
 * no key (not logged in). The built `bin/flotilla.js` runs as an operator would run it.
 */
const BIN = join(ROOT, 'bin', 'flotilla.js');
const TESTED: readonly AgentCli[] = ['claude-code', 'codex-cli', 'gemini-cli', 'opencode'];

interface Detected {
  cli: string;
  available: boolean;
  version: string | null;
  auth?: { state: string; message: string };
}

async function detect(env: Record<string, string>): Promise<Detected[]> {
  const run = await execa(
    'node',
    [BIN, 'detect', '--adapters', join(ROOT, 'adapters'), '--check-auth', '--json'],
    {
      env: { ...env, LOG_LEVEL: 'silent' },
      extendEnv: false,
      reject: false,
      timeout: 180_000,
    },
  );
  expect(run.exitCode, run.stderr).toBe(0);
  return JSON.parse(run.stdout.trim().split('\n').at(-1) ?? '[]') as Detected[];
}

describe('flotilla detect --check-auth', () => {
  let dir: string;
  let server: ScriptedModelServer;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'flotilla-check-auth-'));
    // The two prompt-based checks (Gemini, OpenCode) each make one model call.
    server = await startModelServer([textTurn('OK'), textTurn('OK')]);
  });
  afterAll(async () => {
    await server?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('reports each installed CLI logged in when it can reach its (scripted) API', async () => {
    const home = join(dir, 'logged-in');
    let env: Record<string, string> = {};
    for (const cli of TESTED) env = { ...env, ...(await setUpCli(cli, { home, url: server.url })).env };
    // `codex login status` reads Codex's own stored login, which `codex login --with-api-key` writes.
    await execa(join(CLI_BIN, 'codex'), ['login', '--with-api-key'], {
      env,
      extendEnv: false,
      input: 'test-key',
    });

    const detected = await detect(env);
    const byCli = Object.fromEntries(detected.map((d) => [d.cli, d]));
    for (const cli of TESTED) {
      expect(byCli[cli], JSON.stringify(detected)).toMatchObject({
        available: true,
        auth: { state: 'logged-in' },
      });
      expect(byCli[cli]?.version).toBeTruthy();
    }
    expect(byCli['claude-code']?.auth?.message).toContain('API key: ANTHROPIC_API_KEY');
    expect(byCli['codex-cli']?.auth?.message).toContain('API key configured');
    // Gemini and OpenCode have no status command: their check is one small prompt, answered here.
    const prompted = server.main().map((r) => r.protocol);
    expect(prompted.sort()).toEqual(['chat', 'gemini']);
    // Copilot CLI and Aider are not installed here, so nothing was checked for them.
    expect(byCli['copilot-cli']).toMatchObject({ available: false });
    expect(byCli['copilot-cli']?.auth).toBeUndefined();
  });

  it('reports each installed CLI not logged in, in its own words, when it has no credentials', async () => {
    const home = join(dir, 'empty');
    let env: Record<string, string> = {};
    for (const cli of TESTED) env = { ...env, ...(await setUpCli(cli, { home })).env };
    const before = server.requests.length;

    const detected = await detect(env);
    const byCli = Object.fromEntries(detected.map((d) => [d.cli, d]));
    for (const cli of TESTED) {
      expect(byCli[cli], JSON.stringify(detected)).toMatchObject({
        available: true,
        auth: { state: 'not-logged-in' },
      });
    }
    expect(byCli['claude-code']?.auth?.message).toBe('Not logged in. Run claude auth login to authenticate.');
    expect(byCli['codex-cli']?.auth?.message).toBe('Not logged in');
    expect(server.requests.length).toBe(before);
  });
});
