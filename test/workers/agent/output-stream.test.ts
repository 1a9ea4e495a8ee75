/**
 * A CLI's output read as it comes (src/workers/agent/spawn.ts, invoke.ts), on real processes that
 * print far more than the 16 MB flotilla once buffered: the usage and the answer in the JSON line
 * at the end, a rate limit or a login line anywhere in either stream, the tail kept for the audit,
 * and the operator's cap stopping the CLI with its own message.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DispatchConfigInput } from '../../../src/shared/adapter.js';
import { dispatchPaths, invokeAgent } from '../../../src/workers/agent/invoke.js';
import { KEPT_OUTPUT_BYTES } from '../../../src/workers/agent/spawn.js';
import { adapter } from '../../helpers/factories.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'flotilla-output-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const MB = 1024 * 1024;
/** `yes` is the quickest loud process there is: 40 MB of log lines in well under a second. */
const noise = (mb: number, to: 'stdout' | 'stderr' = 'stdout') =>
  `yes 'a line of a loud agent: building, testing, logging' | head -c ${mb * MB}${to === 'stderr' ? ' >&2' : ''}`;

let scripts = 0;
const run = async (script: string, config: Partial<DispatchConfigInput> = {}, maxOutputBytes?: number) => {
  // A script file: the adapter's invoke_command is split on spaces, so JSON stays out of it.
  const file = join(dir, `cli-${++scripts}.sh`);
  await writeFile(file, `${script}\n`);
  const cli = adapter({ config: { invoke_command: `bash ${file}`, timeout_ms: 60_000, ...config } });
  return invokeAgent({
    adapter: cli,
    cwd: dir,
    paths: dispatchPaths(cli, 't-a1'),
    prompt: 'p',
    timeoutMs: 60_000,
    ...(maxOutputBytes !== undefined ? { maxOutputBytes } : {}),
  });
};

const claudeLine = JSON.stringify({
  type: 'result',
  is_error: false,
  result: 'All done: wrote src/stats.js.',
  total_cost_usd: 0.0375,
  usage: { input_tokens: 1200, output_tokens: 300 },
});

describe('a CLI that prints 40 MB', () => {
  it('on stdout, then its JSON result line: usage and answer are read, the tail kept', async () => {
    const done = await run(`cat > /dev/null; ${noise(40)}; echo; echo '${claudeLine}'`, {
      usage_format: 'claude-json',
    });
    expect(done.outcome.exitCode).toBe(0);
    expect(done.outcome.spawnError).toBeUndefined();
    expect(done.usage).toEqual({
      costUsd: 0.0375,
      inputTokens: 1200,
      outputTokens: 300,
      resultText: 'All done: wrote src/stats.js.',
      isError: false,
    });
    expect(done.answer).toBe('All done: wrote src/stats.js.');
    expect(done.outcome.printed.stdout).toBeGreaterThan(40 * MB);
    expect(Buffer.byteLength(done.outcome.stdout)).toBeLessThanOrEqual(KEPT_OUTPUT_BYTES.stdout);
    expect(done.outcome.stdout.trimEnd().endsWith(claudeLine)).toBe(true);
  });

  it('on stdout, Codex events: token counts at the start and the end are both counted', async () => {
    const turn = (n: number) =>
      JSON.stringify({ type: 'turn.completed', usage: { input_tokens: n, output_tokens: 1 } });
    const answer = JSON.stringify({ type: 'item.completed', item: { type: 'agent_message', text: 'fixed' } });
    const done = await run(
      `cat > /dev/null; echo '${turn(100)}'; ${noise(40)}; echo; echo '${answer}'; echo '${turn(23)}'`,
      { usage_format: 'codex-jsonl' },
    );
    expect(done.usage).toEqual({ inputTokens: 123, outputTokens: 2, resultText: 'fixed' });
  });

  it('on stderr, ending in a rate limit: the reply is a rate limit, the last line kept', async () => {
    const done = await run(
      `cat > /dev/null; ${noise(40, 'stderr')}; echo >&2; echo 'Error: 429 Too Many Requests' >&2; exit 1`,
    );
    expect(done.outcome.exitCode).toBe(1);
    expect(done.replyClass).toEqual({ kind: 'rate-limit', message: 'Error: 429 Too Many Requests' });
    expect(done.outcome.printed.stderr).toBeGreaterThan(40 * MB);
    expect(Buffer.byteLength(done.outcome.stderr)).toBeLessThanOrEqual(KEPT_OUTPUT_BYTES.stderr);
    expect(done.outcome.stderr.trimEnd().split('\n').at(-1)).toBe('Error: 429 Too Many Requests');
  });

  it('on stdout after a login error: the first line is found though it is long gone from the tail', async () => {
    const done = await run(
      `cat > /dev/null; echo 'Invalid API key · Please run /login'; ${noise(40)}; exit 1`,
    );
    expect(done.outcome.stdout).not.toContain('Invalid API key');
    expect(done.replyClass).toEqual({ kind: 'auth', message: 'Invalid API key · Please run /login' });
  });

  it('as one line without a newline: skipped for patterns, its end kept, the run unharmed', async () => {
    const done = await run(
      `cat > /dev/null; head -c ${40 * MB} /dev/zero | tr '\\0' x; echo; echo tail-line`,
    );
    expect(done.outcome.exitCode).toBe(0);
    expect(done.outcome.stdout.endsWith('tail-line\n')).toBe(true);
  });
});

describe('the operator cap (maxOutputBytes)', () => {
  it('stops a CLI that prints without end, and says so', async () => {
    const done = await run('cat > /dev/null; yes flood', {}, 5 * MB);
    expect(done.outcome.outputCapped).toBe(5 * MB);
    expect(done.outcome.exitCode).toBeNull();
    expect(done.outcome.timedOut).toBe(false);
    expect(done.outcome.spawnError).toBeUndefined();
    expect(done.outcome.printed.stdout).toBeGreaterThan(5 * MB);
    expect(done.replyClass).toBeNull();
  });

  it('counts stdout and stderr together and leaves a CLI under it alone', async () => {
    const under = await run(`cat > /dev/null; ${noise(2)}; ${noise(2, 'stderr')}`, {}, 5 * MB);
    expect(under.outcome.outputCapped).toBeUndefined();
    expect(under.outcome.exitCode).toBe(0);
    const over = await run(`cat > /dev/null; ${noise(3)}; ${noise(3, 'stderr')}; sleep 30`, {}, 5 * MB);
    expect(over.outcome.outputCapped).toBe(5 * MB);
  });
});
