import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterEach, describe, expect, it } from 'vitest';
import { CLAUDE_BIN as CLAUDE, CLAUDE_HEADLESS_ARGS, claudeEnv } from '../../../helpers/claude-cli.js';
import {
  errorTurn,
  type ScriptedModelServer,
  startModelServer,
  textTurn,
  userText,
  writeTurn,
} from '../../../helpers/model-server.js';

// The real Claude Code CLI (devDependency @anthropic-ai/claude-code), talking to a local scripted
// Messages API. See docs/TESTING.md for the flags and environment and why.
const NOT_LOGGED_IN = 'Not logged in · Please run /login';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function tempDir(label: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `flotilla-claude-${label}-`));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

async function scripted(...turns: Parameters<typeof startModelServer>[0]): Promise<ScriptedModelServer> {
  const server = await startModelServer(turns);
  cleanups.push(server.stop);
  return server;
}

const RESULT = [
  '# Result: t1',
  '',
  '**Status**: Complete',
  '**Summary**: Created the greeting module.',
  '**Outputs**: src/greet.ts',
  '**Findings**: None',
  '**Issues**: None',
  '**Errors**: None',
  '',
].join('\n');

describe('scripted Messages API', () => {
  const post = (url: string, path: string, body: unknown) =>
    fetch(`${url}${path}`, { method: 'POST', body: JSON.stringify(body) });
  const tools = [{ name: 'Write' }];

  it('answers main requests from the script, side requests generically, and records all', async () => {
    const server = await scripted(writeTurn('/tmp/x.md', 'hi'), textTurn('streamed reply'));

    const title = await post(server.url, '/v1/messages', {
      model: 'm',
      messages: [{ role: 'user', content: 'title?' }],
      output_config: {
        format: { type: 'json_schema', schema: { properties: { title: { type: 'string' } } } },
      },
    });
    expect(await title.json()).toMatchObject({
      content: [{ type: 'text', text: '{"title":"Scripted test session"}' }],
    });

    const first = await (
      await post(server.url, '/v1/messages', {
        model: 'm',
        tools,
        messages: [{ role: 'user', content: 'go' }],
      })
    ).json();
    expect(first).toMatchObject({
      stop_reason: 'tool_use',
      content: [{ type: 'tool_use', name: 'Write', input: { file_path: '/tmp/x.md', content: 'hi' } }],
    });

    const stream = await post(server.url, '/v1/messages', { model: 'm', tools, stream: true, messages: [] });
    const events = (await stream.text()).match(/^event: (\S+)/gm)?.map((line) => line.slice(7));
    expect(events).toEqual([
      'message_start',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);

    const tokens = await post(server.url, '/v1/messages/count_tokens', { model: 'm', messages: [] });
    expect(await tokens.json()).toEqual({ input_tokens: expect.any(Number) });
    await post(server.url, '/v1/messages', { model: 'm', tools, messages: [] });

    expect(server.requests.map((request) => request.kind)).toEqual([
      'side',
      'main',
      'main',
      'count_tokens',
      'main',
    ]);
    expect(userText(server.requests[1]!)).toBe('go');
    expect(server.problems).toEqual(['main request #3 arrived but the script has 2 turn(s)']);
  });
});

describe('real claude -p', () => {
  it('writes the result file through its Write tool against a scripted Messages API', async () => {
    const repo = await tempDir('repo');
    const home = await tempDir('home');
    await execa('git', ['init', '-q', repo]);
    const resultPath = join(repo, '.planning/dispatch/t1-RESULT.md');
    const server = await scripted(writeTurn(resultPath, RESULT), textTurn('Wrote the result file.'));
    const prompt = '# Dispatch Task\n\nTask t1-smoke-7f3a: write the result file.\n';

    const run = await execa(CLAUDE, [...CLAUDE_HEADLESS_ARGS, '--model', 'claude-sonnet-4-5'], {
      cwd: repo,
      env: claudeEnv({ home, baseUrl: server.url, apiKey: 'test-key' }),
      extendEnv: false,
      input: prompt,
      timeout: 90_000,
      reject: false,
    });

    expect(run.exitCode, `stdout: ${run.stdout}\nstderr: ${run.stderr}`).toBe(0);
    expect(await readFile(resultPath, 'utf8')).toBe(RESULT);
    const output = JSON.parse(run.stdout);
    expect(output).toMatchObject({
      type: 'result',
      is_error: false,
      num_turns: 2,
      result: 'Wrote the result file.',
    });
    expect(output.total_cost_usd).toEqual(expect.any(Number));
    expect(output.usage).toMatchObject({
      input_tokens: expect.any(Number),
      output_tokens: expect.any(Number),
    });

    expect(server.problems).toEqual([]);
    const main = server.requests.filter((request) => request.kind === 'main');
    expect(main).toHaveLength(2);
    expect(userText(main[0]!)).toContain('Task t1-smoke-7f3a: write the result file.');
    expect(main[0]!.headers['x-api-key']).toBe('test-key');
    expect(main[0]!.body).toMatchObject({ model: 'claude-sonnet-4-5', stream: true });
    expect(JSON.stringify(main[1]!.body)).toContain('"type":"tool_result"');
    // The CLI kept its state in the private HOME, not in the real ~/.claude.
    expect(existsSync(join(home, '.claude.json'))).toBe(true);
  });

  it.each([
    ['text', []],
    ['json', ['--output-format', 'json']],
  ])('fails fast with its own message when it has no credentials (%s output)', async (_mode, format) => {
    const cwd = await tempDir('cwd');
    const home = await tempDir('empty-home');
    const started = Date.now();

    const run = await execa(CLAUDE, ['-p', ...format, 'Say hello.'], {
      cwd,
      env: claudeEnv({ home }),
      extendEnv: false,
      stdin: 'ignore',
      timeout: 60_000,
      reject: false,
    });

    expect(Date.now() - started).toBeLessThan(20_000);
    expect(run.timedOut).toBe(false);
    expect(run.exitCode).toBe(1);
    expect(`${run.stdout}\n${run.stderr}`).toContain(NOT_LOGGED_IN);
  });

  it.each([
    [401, 'authentication_error', 'invalid x-api-key', 'Invalid API key · Fix external API key'],
    [
      429,
      'rate_limit_error',
      'rate limit exceeded',
      'API Error: Request rejected (429) · rate limit exceeded',
    ],
  ])(
    'reports an API %i on stdout and exits 1 when retries are off',
    async (status, type, message, expected) => {
      const cwd = await tempDir('cwd');
      const home = await tempDir('home');
      const server = await scripted(errorTurn(status, type, message));

      const run = await execa(CLAUDE, ['-p', 'Say hello.'], {
        cwd,
        env: claudeEnv({ home, baseUrl: server.url, apiKey: 'test-key', maxRetries: 0 }),
        extendEnv: false,
        stdin: 'ignore',
        timeout: 60_000,
        reject: false,
      });

      expect(run.exitCode).toBe(1);
      expect(run.stdout).toBe(expected);
      expect(server.requests.filter((request) => request.kind === 'main')).toHaveLength(1);
    },
  );
});
