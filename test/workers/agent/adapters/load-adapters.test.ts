import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { adaptersCheck } from '../../../../src/cli/commands/adapters-check.js';
import type { Adapter } from '../../../../src/shared/adapter.js';
import { FlotillaError, formatProblem } from '../../../../src/shared/errors.js';
import { loadAdapters, loadAdaptersOrThrow } from '../../../../src/workers/agent/adapters/load-adapters.js';
import { classifyReply } from '../../../../src/workers/agent/reply-class.js';
import { ROOT } from '../../../helpers/paths.js';

/** Legion's published adapter files, read from the shared folder beside the repository (CI lays it there). */
const LEGION =
  process.env.FLOTILLA_LEGION_FIXTURES ?? join(ROOT, '..', 'shared', 'fixtures', 'legion-adapters');
/** Relative, so the expected problems read the way a person sees them. */
const BAD = relative(process.cwd(), join(ROOT, 'test/fixtures/adapters-bad'));
const OURS = join(ROOT, 'adapters');

function byCli(adapters: readonly Adapter[], cli: string): Adapter {
  const adapter = adapters.find((candidate) => candidate.cli === cli);
  if (!adapter) throw new Error(`no adapter ${cli} among ${adapters.map((a) => a.cli).join(', ')}`);
  return adapter;
}

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, io: { out: (line: string) => out.push(line), err: (line: string) => err.push(line) } };
}

const temporary: string[] = [];
afterEach(async () => {
  await Promise.all(temporary.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

describe("Legion's adapter files", () => {
  it('loads codex-cli, copilot-cli and gemini-cli, in file order, with no problems', async () => {
    const { adapters, problems } = await loadAdapters(LEGION);
    expect(problems).toEqual([]);
    expect(adapters.map((adapter) => adapter.cli)).toEqual(['codex-cli', 'copilot-cli', 'gemini-cli']);
    const orders = adapters.map((adapter) => adapter.order);
    expect(orders).toEqual([...orders].sort((a, b) => a - b));
  });

  it('skips the files without a Dispatch Configuration section, with the reason, and never lists ADAPTER.md', async () => {
    const { adapters, skipped } = await loadAdapters(LEGION);
    const reasons = Object.fromEntries(skipped.map((file) => [relative(LEGION, file.file), file.reason]));
    expect(reasons['claude-code.md']).toBe("no '## Dispatch Configuration' section");
    expect(reasons['opencode.md']).toBe("no '## Dispatch Configuration' section");
    expect(Object.keys(reasons)).not.toContain('ADAPTER.md');
    expect(adapters.map((adapter) => adapter.file)).not.toContain(join(LEGION, 'ADAPTER.md'));
  });

  it('takes names from the front matter and model tiers from the Tool Mappings table', async () => {
    const { adapters } = await loadAdapters(LEGION);
    const codex = byCli(adapters, 'codex-cli');
    expect(codex.displayName).toBe('OpenAI Codex CLI');
    expect(codex.maxPromptSize).toBe(128000);
    expect(codex.models).toEqual({
      planning: 'gpt-5.4',
      execution: 'gpt-5.3-codex',
      check: 'gpt-5.1-codex-mini',
    });
    expect(codex.config.invoke_flags).toEqual(['--approval-mode', 'full-auto', '--quiet']);
    expect(codex.config.prompt_delivery).toBe('content_flag');
    expect(codex.config.prompt_flag).toBe('-p');

    // "`claude-opus-4-6` or `gpt-5.3-codex` (user-configured)": the first backticked value.
    expect(byCli(adapters, 'copilot-cli').models).toEqual({
      planning: 'claude-opus-4-6',
      execution: 'claude-sonnet-4-6',
      check: 'claude-haiku-4-5',
    });
  });

  it('reads gemini as stdin_pipe with prompt_flag null', async () => {
    const gemini = byCli((await loadAdapters(LEGION)).adapters, 'gemini-cli');
    expect(gemini.config.prompt_delivery).toBe('stdin_pipe');
    expect(gemini.config.prompt_flag).toBeNull();
    expect(gemini.config.invoke_flags).toEqual(['--sandbox']);
    expect(gemini.config.capabilities).toEqual([
      'web_search',
      'ui_design',
      'ux_research',
      'large_analysis',
      'code_review',
    ]);
    expect(gemini.models).toEqual({ planning: 'gemini-pro', execution: 'gemini-pro', check: 'gemini-flash' });
  });
});

describe('malformed adapter files', () => {
  it('reports one clear problem per mistake, with the line in the .md file, all at once', async () => {
    const { problems } = await loadAdapters(BAD);
    const file = (name: string) => join(BAD, name);
    expect(problems.map(formatProblem)).toEqual([
      `${file('bad-result-path.md')}:15: result_path: must contain the placeholder {task-id}, got '.planning/dispatch/RESULT.md'`,
      // The flow list opened on line 11 is never closed; yaml notices it on line 12.
      `${file('invalid-yaml.md')}:11: invalid YAML: Flow sequence in block collection must be sufficiently indented and end with a ]`,
      // A missing key has no line of its own: the ```yaml fence is named.
      `${file('missing-prompt-flag.md')}:10: prompt_flag: required when prompt_delivery is file_path`,
      `${file('negative-timeout.md')}:17: timeout_ms: expected a number > 0, got -5`,
      `${file('no-yaml-block.md')}:7: '## Dispatch Configuration' has no fenced \`\`\`yaml block (expected the dispatch settings in one)`,
      `${file('repeated-cli.md')}:2: cli: 'good' is already the cli of ${file('good.md')} (expected one file per CLI)`,
      `${file('several-problems.md')}:3: max_prompt_size: expected a number, got 'lots'`,
      `${file('several-problems.md')}:10: prompt_flag: required when prompt_delivery is content_flag`,
      `${file('several-problems.md')}:11: available: expected true or false, got 'yes'`,
      `${file('several-problems.md')}:12: capabilities: expected at least 1 item, got an empty list`,
      `${file('several-problems.md')}:15: invoke_flags: expected a string or a list, got the number 42`,
      `${file('several-problems.md')}:18: timeout_ms: expected a whole number, got the number 1.5`,
      `${file('unknown-delivery.md')}:14: prompt_delivery: expected one of file_path|stdin_pipe|content_flag, got 'pipe'`,
    ]);
  });

  it('still loads the valid files beside them, and keeps available: false out of the candidates', async () => {
    const { adapters, skipped } = await loadAdapters(BAD);
    expect(adapters.map((adapter) => adapter.cli)).toEqual(['good']);
    const good = byCli(adapters, 'good');
    // No front matter: the file name is the cli and the display name.
    expect(good.displayName).toBe('good');
    expect(good.config.invoke_flags).toEqual(['--model', '{model}', '--yes']);
    expect(good.models).toEqual({ execution: 'good-medium' });
    expect(skipped).toEqual([
      { file: join(BAD, 'README.md'), reason: "no '## Dispatch Configuration' section" },
      { file: join(BAD, 'switched-off.md'), reason: 'available: false' },
    ]);
  });

  it('loadAdaptersOrThrow throws adapter/invalid carrying every problem', async () => {
    const error = await loadAdaptersOrThrow(BAD).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(FlotillaError);
    const flotilla = error as FlotillaError;
    expect(flotilla.code).toBe('adapter/invalid');
    expect(flotilla.problems).toHaveLength(13);
    expect(flotilla.message).toBe(`${BAD}: invalid adapter files (13 problems)`);
  });

  it('a missing folder is adapter/invalid with a plain message', async () => {
    const missing = join(tmpdir(), 'flotilla-no-such-adapters');
    await expect(loadAdapters(missing)).rejects.toMatchObject({
      code: 'adapter/invalid',
      message: `${missing}: adapter folder not found`,
    });
  });

  it('reports unclosed front matter and an unclosed yaml block instead of guessing', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'flotilla-adapters-'));
    temporary.push(dir);
    await writeFile(
      join(dir, 'a.md'),
      '---\ncli: a\n\n## Dispatch Configuration\n\n```yaml\navailable: true\n',
    );
    await writeFile(join(dir, 'b.md'), '# B\n\n## Dispatch Configuration\n\n```yaml\navailable: true\n');
    const { problems } = await loadAdapters(dir);
    expect(problems.map(formatProblem)).toEqual([
      `${join(dir, 'a.md')}:1: front matter: the opening '---' has no closing '---'`,
      `${join(dir, 'a.md')}:6: the \`\`\`yaml block of the Dispatch Configuration is never closed`,
      `${join(dir, 'b.md')}:5: the \`\`\`yaml block of the Dispatch Configuration is never closed`,
    ]);
  });
});

describe("flotilla's own adapters/", () => {
  it('loads all six with no problems', async () => {
    const { adapters, skipped, problems } = await loadAdapters(OURS);
    expect(problems).toEqual([]);
    expect(skipped).toEqual([]);
    expect(adapters.map((adapter) => adapter.cli).sort()).toEqual(
      ['aider', 'claude-code', 'codex-cli', 'copilot-cli', 'gemini-cli', 'opencode'].sort(),
    );
  });

  it('gives every adapter models, limits, a result path and error patterns that compile', async () => {
    for (const adapter of (await loadAdapters(OURS)).adapters) {
      const { config } = adapter;
      expect(Object.keys(adapter.models).sort(), adapter.cli).toEqual(['check', 'execution', 'planning']);
      expect(config.result_path, adapter.cli).toBe('.planning/dispatch/{task-id}-RESULT.md');
      expect(config.max_concurrent, adapter.cli).toBeGreaterThan(0);
      expect(adapter.maxPromptSize, adapter.cli).toBeGreaterThan(0);
      expect(config.cooldown_ms, adapter.cli).toBeGreaterThan(0);
      expect(config.invoke_flags, adapter.cli).toContain('{model}');
      const patterns = [...(config.rate_limit_patterns ?? []), ...(config.auth_error_patterns ?? [])];
      expect(config.rate_limit_patterns?.length, adapter.cli).toBeGreaterThan(0);
      expect(config.auth_error_patterns?.length, adapter.cli).toBeGreaterThan(0);
      for (const pattern of patterns) expect(() => new RegExp(pattern, 'i'), pattern).not.toThrow();
    }
  });

  it('never asks a CLI for what it refuses as root', async () => {
    const claude = byCli((await loadAdapters(OURS)).adapters, 'claude-code');
    expect(claude.config.invoke_flags).not.toContain('--dangerously-skip-permissions');
    expect(claude.config.invoke_flags).not.toContain('bypassPermissions');
    expect(claude.config.invoke_flags).toEqual(
      expect.arrayContaining(['-p', '--permission-mode', 'acceptEdits']),
    );
    expect(claude.config.usage_format).toBe('claude-json');
  });

  it('classifies the messages the real CLIs printed (recorded while writing the adapters)', async () => {
    const { adapters } = await loadAdapters(OURS);
    const cases: [cli: string, reply: string, kind: 'auth' | 'rate-limit'][] = [
      ['claude-code', 'Not logged in · Please run /login', 'auth'],
      ['claude-code', 'Invalid API key · Fix external API key', 'auth'],
      ['claude-code', 'Credit balance is too low', 'auth'],
      [
        'claude-code',
        'API Error: Request rejected (429) · This request would exceed the rate limit',
        'rate-limit',
      ],
      [
        'codex-cli',
        'ERROR: unexpected status 401 Unauthorized: Incorrect API key provided: sk-… url: http://127.0.0.1/v1/responses',
        'auth',
      ],
      [
        'codex-cli',
        '{"type":"error","message":"exceeded retry limit, last status: 429 Too Many Requests"}',
        'rate-limit',
      ],
      ['gemini-cli', 'Please set an Auth method in your /root/.gemini/settings.json or specify …', 'auth'],
      [
        'gemini-cli',
        'Attempt 1 failed with status 429. Retrying with backoff... _ApiError: {"error":{"code":429,"status":"RESOURCE_EXHAUSTED"}}',
        'rate-limit',
      ],
      ['copilot-cli', 'Error: No authentication information found.', 'auth'],
      ['opencode', 'Error: invalid x-api-key', 'auth'],
      ['aider', 'litellm.RateLimitError: AnthropicException - rate_limit_error', 'rate-limit'],
    ];
    for (const [cli, reply, kind] of cases) {
      expect(classifyReply(byCli(adapters, cli), reply)?.kind, `${cli}: ${reply}`).toBe(kind);
    }
  });
});

describe('flotilla adapters check', () => {
  it('lists every adapter and exits 0 for our folder', async () => {
    const { out, err, io } = capture();
    expect(await adaptersCheck({ dir: OURS, json: false }, io)).toBe(0);
    expect(err).toEqual([]);
    expect(out[0]).toBe(`${OURS}: 6 adapters, 0 skipped, 0 problems`);
    expect(out).toContain(`claude-code — Claude Code (${join(OURS, 'claude-code.md')})`);
    expect(out).toContain('  models:       planning=opus, execution=sonnet, check=haiku');
  });

  it('prints skipped files with their reason', async () => {
    const { out, io } = capture();
    expect(await adaptersCheck({ dir: LEGION, json: false }, io)).toBe(0);
    expect(out).toContain(
      `skipped ${join(LEGION, 'claude-code.md')}: no '## Dispatch Configuration' section`,
    );
    expect(out).toContain('  delivery:     content_flag (-p)');
  });

  it('prints one line per problem on stderr and exits 2', async () => {
    const { err, io } = capture();
    expect(await adaptersCheck({ dir: BAD, json: false }, io)).toBe(2);
    expect(err).toEqual((await loadAdapters(BAD)).problems.map(formatProblem));
  });

  it('gives a JSON report on stdout with --json', async () => {
    const { out, io } = capture();
    expect(await adaptersCheck({ dir: BAD, json: true }, io)).toBe(2);
    expect(out).toHaveLength(1);
    const report = JSON.parse(out[0] ?? '');
    expect(report.adapters.map((adapter: { cli: string }) => adapter.cli)).toEqual(['good']);
    expect(report.adapters[0]).toMatchObject({
      displayName: 'good',
      delivery: 'stdin_pipe',
      capabilities: ['code_implementation', 'testing'],
    });
    expect(report.problems).toHaveLength(13);
    expect(report.skipped).toHaveLength(2);
  });

  it('exits 2 with a plain message, not a stack trace, for a missing folder', async () => {
    const { out, err, io } = capture();
    expect(await adaptersCheck({ dir: 'no/such/adapters', json: false }, io)).toBe(2);
    expect(out).toEqual([]);
    expect(err).toEqual(['no/such/adapters: adapter folder not found']);
  });
});
