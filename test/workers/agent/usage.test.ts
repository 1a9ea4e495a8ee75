import { describe, expect, it } from 'vitest';
import { LineScanner } from '../../../src/workers/agent/line-scanner.js';
import { parseUsage, usageReader } from '../../../src/workers/agent/usage.js';

const CLAUDE_RESULT = {
  type: 'result',
  subtype: 'success',
  is_error: false,
  duration_ms: 5123,
  num_turns: 3,
  result: 'Wrote the result file.',
  session_id: 'abc',
  total_cost_usd: 0.0421,
  usage: {
    input_tokens: 1200,
    cache_creation_input_tokens: 300,
    cache_read_input_tokens: 5000,
    output_tokens: 450,
  },
};

describe('parseUsage claude-json', () => {
  it.each([
    ['one result object', JSON.stringify(CLAUDE_RESULT)],
    ['pretty-printed, with a trailing newline', `${JSON.stringify(CLAUDE_RESULT, null, 2)}\n`],
    [
      'the --verbose array of messages',
      JSON.stringify([{ type: 'system', subtype: 'init' }, { type: 'assistant' }, CLAUDE_RESULT]),
    ],
    [
      'stream-json lines',
      [{ type: 'system' }, { type: 'assistant' }, CLAUDE_RESULT].map((m) => JSON.stringify(m)).join('\n'),
    ],
    ['a warning line before the object', `Warning: something\n${JSON.stringify(CLAUDE_RESULT, null, 2)}`],
  ])('%s', (_name, stdout) => {
    expect(parseUsage('claude-json', stdout)).toEqual({
      costUsd: 0.0421,
      inputTokens: 1200,
      outputTokens: 450,
      resultText: 'Wrote the result file.',
      isError: false,
    });
  });

  it('reports an error result', () => {
    const stdout = JSON.stringify({
      type: 'result',
      subtype: 'error_during_execution',
      is_error: true,
      total_cost_usd: 0,
      usage: {},
    });
    expect(parseUsage('claude-json', stdout)).toEqual({ costUsd: 0, isError: true });
  });
});

describe('parseUsage codex-jsonl', () => {
  it('reads turn usage and the last agent message', () => {
    const stdout = [
      { type: 'thread.started', thread_id: 't1' },
      { type: 'turn.started' },
      { type: 'item.completed', item: { id: 'item_0', type: 'reasoning', text: 'thinking' } },
      {
        type: 'item.completed',
        item: { id: 'item_1', type: 'command_execution', command: 'ls', exit_code: 0 },
      },
      {
        type: 'item.completed',
        item: { id: 'item_2', type: 'agent_message', text: 'Done: wrote src/stats.ts.' },
      },
      {
        type: 'turn.completed',
        usage: { input_tokens: 26549, cached_input_tokens: 22272, output_tokens: 1590 },
      },
    ]
      .map((e) => JSON.stringify(e))
      .join('\n');
    expect(parseUsage('codex-jsonl', stdout)).toEqual({
      inputTokens: 26549,
      outputTokens: 1590,
      resultText: 'Done: wrote src/stats.ts.',
    });
  });

  it('sums several turns and notes a failed one', () => {
    const stdout = [
      '{"type":"turn.completed","usage":{"input_tokens":10,"output_tokens":1}}',
      'not json',
      '{"type":"turn.completed","usage":{"input_tokens":5,"output_tokens":2}}',
      '{"type":"turn.failed","error":{"message":"stream error"}}',
    ].join('\n');
    expect(parseUsage('codex-jsonl', stdout)).toEqual({ inputTokens: 15, outputTokens: 3, isError: true });
  });

  it('reads the older msg-wrapped events', () => {
    const stdout = [
      '{"id":"0","msg":{"type":"token_count","input_tokens":100,"output_tokens":20}}',
      '{"id":"0","msg":{"type":"agent_message","message":"All done."}}',
      '{"id":"0","msg":{"type":"token_count","info":{"total_token_usage":{"input_tokens":150,"output_tokens":40}}}}',
    ].join('\n');
    expect(parseUsage('codex-jsonl', stdout)).toEqual({
      inputTokens: 150,
      outputTokens: 40,
      resultText: 'All done.',
    });
  });
});

describe('parseUsage gemini-json', () => {
  const GEMINI = {
    response: 'The analysis is in the result file.',
    stats: {
      models: {
        'gemini-2.5-pro': {
          api: { totalRequests: 2, totalErrors: 0, totalLatencyMs: 5053 },
          tokens: { prompt: 24939, candidates: 20, total: 25113, cached: 21263, thoughts: 154, tool: 0 },
        },
        'gemini-2.5-flash': { tokens: { prompt: 100, candidates: 5 } },
      },
      tools: { totalCalls: 1 },
    },
  };

  it('sums tokens over models', () => {
    expect(parseUsage('gemini-json', JSON.stringify(GEMINI, null, 2))).toEqual({
      inputTokens: 25039,
      outputTokens: 25,
      resultText: 'The analysis is in the result file.',
    });
  });

  it('skips a line printed before the JSON', () => {
    expect(
      parseUsage('gemini-json', `Loaded cached credentials.\n${JSON.stringify(GEMINI, null, 2)}`)
        ?.inputTokens,
    ).toBe(25039);
  });

  it('reads the flat stats shape and an error', () => {
    const stdout = JSON.stringify({
      response: '',
      stats: { inputTokens: 12, outputTokens: 8 },
      error: { type: 'ApiError' },
    });
    expect(parseUsage('gemini-json', stdout)).toEqual({
      inputTokens: 12,
      outputTokens: 8,
      resultText: '',
      isError: true,
    });
  });
});

describe('parseUsage on garbage', () => {
  it.each([
    ['claude-json', ''],
    ['claude-json', 'plain text answer'],
    ['claude-json', '{"type": "assistant"}'],
    ['claude-json', '{"type":"result", "total_cost_usd": "lots"'],
    ['codex-jsonl', 'hello\nworld'],
    ['codex-jsonl', '{"type":"turn.started"}'],
    ['gemini-json', '[1, 2, 3]'],
    ['gemini-json', '{"other": true}'],
    ['gemini-json', '{"response": 5, "stats": "n/a"}'],
  ] as const)('%s: %j → null', (format, stdout) => {
    expect(parseUsage(format, stdout)).toBeNull();
  });
});

describe('parseUsage opencode-jsonl', () => {
  // Lines as `opencode run --format json` 1.18.33 printed them (ids shortened).
  const step = (input: number, output: number, cost: number) =>
    JSON.stringify({
      type: 'step_finish',
      part: {
        type: 'step-finish',
        reason: 'stop',
        tokens: { total: input + output, input, output, reasoning: 0 },
        cost,
      },
    });
  const text = (value: string) => JSON.stringify({ type: 'text', part: { type: 'text', text: value } });

  it('sums the steps’ tokens and cost and takes the last text as the answer', () => {
    const stdout = [
      JSON.stringify({ type: 'step_start', part: { type: 'step-start' } }),
      step(100, 20, 0.0006),
      text('first thoughts'),
      step(150, 30, 0.0009),
      text('All done here.'),
    ].join('\n');
    expect(parseUsage('opencode-jsonl', stdout)).toEqual({
      inputTokens: 250,
      outputTokens: 50,
      costUsd: expect.closeTo(0.0015, 9),
      resultText: 'All done here.',
    });
  });

  it('gives the provider’s error message as the answer when the run failed', () => {
    const error = {
      type: 'error',
      error: { name: 'APIError', data: { message: 'Incorrect API key provided: k' } },
    };
    expect(parseUsage('opencode-jsonl', JSON.stringify(error))).toEqual({
      resultText: 'Incorrect API key provided: k',
      isError: true,
    });
  });
});

/** A long stdout as flotilla reads it: every line as it comes, and only `kept` (its end) kept. */
function readAsItComes(format: Parameters<typeof usageReader>[0], stdout: string, kept: string) {
  const lines: string[] = [];
  const scanner = new LineScanner((line) => lines.push(line), 1024 * 1024);
  // Chunks cut anywhere, lines and characters across them, as a pipe gives them.
  const bytes = Buffer.from(stdout);
  for (let at = 0; at < bytes.length; at += 997) scanner.push(bytes.subarray(at, at + 997));
  scanner.end();
  const reader = usageReader(format);
  for (const line of lines) reader.line(line);
  return reader.finish(kept);
}

describe('usage read as stdout comes, with only its end kept', () => {
  const noise = Array.from({ length: 2000 }, (_, i) => `building module ${i} … ok`).join('\n');

  it('claude-json: the result line at the end of the noise, stream-json events before it', () => {
    const stdout = `${JSON.stringify({ type: 'system' })}\n${noise}\n${JSON.stringify(CLAUDE_RESULT)}\n`;
    expect(readAsItComes('claude-json', stdout, `${JSON.stringify(CLAUDE_RESULT)}\n`)).toMatchObject({
      costUsd: 0.0421,
      resultText: 'Wrote the result file.',
    });
  });

  it('codex-jsonl: a turn long gone from the kept end still counts', () => {
    const turn = (n: number) =>
      JSON.stringify({ type: 'turn.completed', usage: { input_tokens: n, output_tokens: n } });
    const stdout = `${turn(10)}\n${noise}\n${turn(5)}\n`;
    expect(readAsItComes('codex-jsonl', stdout, `${turn(5)}\n`)).toEqual({
      inputTokens: 15,
      outputTokens: 15,
    });
  });

  it('opencode-jsonl: every step costs, wherever it was printed', () => {
    const step = JSON.stringify({
      type: 'step_finish',
      part: { tokens: { input: 3, output: 4 }, cost: 0.5 },
    });
    const stdout = `${step}\n${noise}\n${step}\n`;
    expect(readAsItComes('opencode-jsonl', stdout, `${step}\n`)).toEqual({
      costUsd: 1,
      inputTokens: 6,
      outputTokens: 8,
    });
  });

  it('gemini-json: a pretty-printed document after the noise, read from the kept end', () => {
    const doc = JSON.stringify(
      { response: 'Fixed it.', stats: { inputTokens: 7, outputTokens: 2 } },
      null,
      2,
    );
    const stdout = `${noise}\n${doc}\n`;
    const kept = `building module 1999 … ok\n${doc}\n`;
    expect(readAsItComes('gemini-json', stdout, kept)).toEqual({
      inputTokens: 7,
      outputTokens: 2,
      resultText: 'Fixed it.',
    });
  });

  it.each([
    ['claude one object', 'claude-json', JSON.stringify(CLAUDE_RESULT)],
    ['claude verbose array', 'claude-json', JSON.stringify([{ type: 'system' }, CLAUDE_RESULT])],
    ['claude warning first', 'claude-json', `Warning: x\n${JSON.stringify(CLAUDE_RESULT, null, 2)}`],
    ['gemini pretty', 'gemini-json', JSON.stringify({ response: 'r', stats: { inputTokens: 1 } }, null, 2)],
  ] as const)('a short stdout kept whole reads as parseUsage does: %s', (_name, format, stdout) => {
    expect(readAsItComes(format, stdout, stdout)).toEqual(parseUsage(format, stdout));
  });
});
