/**
 * Cost and token usage from a CLI's machine-readable stdout, for the mission's budget and report.
 * Each CLI prints its own shape and changes it between versions, so every reader takes what it
 * recognises and gives null rather than throwing on anything else.
 */

export type UsageFormat = 'claude-json' | 'codex-jsonl' | 'gemini-json' | 'opencode-jsonl';

export interface Usage {
  readonly costUsd?: number;
  readonly inputTokens?: number;
  readonly outputTokens?: number;
  /** The agent's final answer, which is what stdout means once the JSON wrapper is taken off. */
  readonly resultText?: string;
  /** The CLI itself reported the run as an error. */
  readonly isError?: boolean;
}

type Json = Record<string, unknown>;

/**
 * Usage read as stdout comes: `line` takes each line (JSON lines are read then and forgotten),
 * `finish` gives the usage of the whole output. `kept` is what the caller kept of stdout (all of
 * it when it was short, else its end): the formats that print one JSON document, which may span
 * lines, are read from it.
 */
export interface UsageReader {
  line(text: string): void;
  finish(kept: string): Usage | null;
}

export function usageReader(format: UsageFormat): UsageReader {
  switch (format) {
    case 'claude-json':
      return claudeReader();
    case 'codex-jsonl':
      return codexReader();
    case 'gemini-json':
      return geminiReader();
    case 'opencode-jsonl':
      return opencodeReader();
  }
}

/** The usage in a whole stdout at once. */
export function parseUsage(format: UsageFormat, stdout: string): Usage | null {
  const reader = usageReader(format);
  for (const line of stdout.split('\n')) reader.line(line);
  return reader.finish(stdout);
}

/**
 * Claude Code's `--output-format json` prints one result object; with `--verbose` it prints an
 * array of messages ending with it, and `stream-json` prints one per line. The result message is
 * the one with `type: "result"`.
 */
function claudeReader(): UsageReader {
  const document = documentReader(
    [(value) => value.type === 'result', (value) => 'total_cost_usd' in value || 'result' in value],
    { flattenArrays: true },
  );
  return {
    line: document.line,
    finish(kept) {
      const result = document.finish(kept);
      if (!result) return null;
      const usage = isObject(result.usage) ? result.usage : {};
      return compact({
        costUsd: count(result.total_cost_usd) ?? count(result.cost_usd),
        inputTokens: count(usage.input_tokens),
        outputTokens: count(usage.output_tokens),
        resultText: typeof result.result === 'string' ? result.result : undefined,
        isError: typeof result.is_error === 'boolean' ? result.is_error : undefined,
      });
    },
  };
}

/**
 * `codex exec --json` prints events: `turn.completed` carries the turn's `usage`, `item.completed`
 * with an `agent_message` item carries the answer. Older versions wrapped events in `msg`
 * (`token_count`, `agent_message`); both are read.
 */
function codexReader(): UsageReader {
  let inputTokens: number | undefined;
  let outputTokens: number | undefined;
  let resultText: string | undefined;
  let isError: boolean | undefined;
  const add = (total: number | undefined, value: unknown): number | undefined => {
    const n = count(value);
    return n === undefined ? total : (total ?? 0) + n;
  };
  return {
    line(text) {
      const event = jsonLine(text);
      if (!event) return;
      const msg = isObject(event.msg) ? event.msg : undefined;
      const item = isObject(event.item) ? event.item : undefined;
      if (event.type === 'turn.completed' && isObject(event.usage)) {
        inputTokens = add(inputTokens, event.usage.input_tokens);
        outputTokens = add(outputTokens, event.usage.output_tokens);
      } else if (event.type === 'item.completed' && item && isAgentMessage(item.type ?? item.item_type)) {
        if (typeof item.text === 'string') resultText = item.text;
      } else if (event.type === 'turn.failed' || event.type === 'error') {
        isError = true;
      } else if (msg?.type === 'token_count') {
        // Old events report the running total, so the last one counts.
        const info =
          isObject(msg.info) && isObject(msg.info.total_token_usage) ? msg.info.total_token_usage : msg;
        inputTokens = count(info.input_tokens) ?? inputTokens;
        outputTokens = count(info.output_tokens) ?? outputTokens;
      } else if (msg?.type === 'agent_message' && typeof msg.message === 'string') {
        resultText = msg.message;
      }
    },
    finish: () => compact({ inputTokens, outputTokens, resultText, isError }),
  };
}

/**
 * `gemini --output-format json` prints `{ response, stats, error? }`, with tokens per model under
 * `stats.models.<name>.tokens` (`prompt`, `candidates`); some versions print flat
 * `stats.inputTokens/outputTokens`. A line such as "Loaded cached credentials." may come first.
 */
function geminiReader(): UsageReader {
  const document = documentReader([(value) => 'response' in value || 'stats' in value], {
    flattenArrays: false,
  });
  return { line: document.line, finish: (kept) => geminiUsage(document.finish(kept)) };
}

function geminiUsage(doc: Json | undefined): Usage | null {
  if (!doc) return null;
  const stats = isObject(doc.stats) ? doc.stats : {};
  let inputTokens = count(stats.inputTokens);
  let outputTokens = count(stats.outputTokens);
  if (isObject(stats.models)) {
    for (const model of Object.values(stats.models)) {
      const tokens = isObject(model) && isObject(model.tokens) ? model.tokens : undefined;
      if (!tokens) continue;
      const prompt = count(tokens.prompt);
      const candidates = count(tokens.candidates);
      if (prompt !== undefined) inputTokens = (inputTokens ?? 0) + prompt;
      if (candidates !== undefined) outputTokens = (outputTokens ?? 0) + candidates;
    }
  }
  return compact({
    inputTokens,
    outputTokens,
    resultText: typeof doc.response === 'string' ? doc.response : undefined,
    isError: doc.error ? true : undefined,
  });
}

/**
 * `opencode run --format json` prints one event a line: each `step_finish` part carries that
 * step's `tokens` (`input`, `output`) and `cost`; `text` parts are the answer, the last one being
 * the final message; an `error` event carries the provider's message.
 */
function opencodeReader(): UsageReader {
  let inputTokens: number | undefined;
  let outputTokens: number | undefined;
  let costUsd: number | undefined;
  let resultText: string | undefined;
  let errorText: string | undefined;
  const add = (total: number | undefined, value: unknown) => {
    const n = count(value);
    return n === undefined ? total : (total ?? 0) + n;
  };
  return {
    line(text) {
      const event = jsonLine(text);
      if (!event) return;
      const part = isObject(event.part) ? event.part : {};
      if (event.type === 'step_finish') {
        const tokens = isObject(part.tokens) ? part.tokens : {};
        inputTokens = add(inputTokens, tokens.input);
        outputTokens = add(outputTokens, tokens.output);
        costUsd = add(costUsd, part.cost);
      } else if (event.type === 'text' && typeof part.text === 'string') {
        resultText = part.text;
      } else if (event.type === 'error') {
        errorText = errorMessage(event.error) ?? JSON.stringify(event.error ?? event);
      }
    },
    finish: () =>
      compact({
        costUsd,
        inputTokens,
        outputTokens,
        resultText: resultText ?? errorText,
        isError: errorText === undefined ? undefined : true,
      }),
  };
}

/** `{ name, data: { message } }` (OpenCode's errors) or `{ message }`. */
function errorMessage(error: unknown): string | undefined {
  if (!isObject(error)) return undefined;
  if (isObject(error.data) && typeof error.data.message === 'string') return error.data.message;
  return typeof error.message === 'string' ? error.message : undefined;
}

/**
 * The formats that print one JSON document: the last object that a pick matches (the first pick
 * that matches any wins) among, in this order, the whole kept stdout as one JSON value; else every
 * line of the stream that is a JSON object, read as it came; else the kept text from its first
 * line that opens a `{` or `[` to its end (a warning line before a pretty-printed document).
 * `flattenArrays` reads a top-level array's objects (Claude Code's `--verbose` messages).
 */
function documentReader(
  picks: readonly ((value: Json) => boolean)[],
  options: { readonly flattenArrays: boolean },
): { line(text: string): void; finish(kept: string): Json | undefined } {
  const lastOf: (Json | undefined)[] = picks.map(() => undefined);
  let sawLine = false;
  const objects = (value: unknown): Json[] =>
    options.flattenArrays && Array.isArray(value) ? value.filter(isObject) : isObject(value) ? [value] : [];
  const pick = (values: readonly Json[]): Json | undefined => {
    for (const matches of picks) {
      const found = values.findLast(matches);
      if (found) return found;
    }
    return undefined;
  };
  return {
    line(text) {
      const value = jsonLine(text);
      if (!value) return;
      sawLine = true;
      picks.forEach((matches, i) => {
        if (matches(value)) lastOf[i] = value;
      });
    },
    finish(kept) {
      const whole = tryParse(kept.trim());
      if (whole !== undefined) return pick(objects(whole));
      if (sawLine) return lastOf.find((value) => value !== undefined);
      const start = kept.search(/^[ \t]*[{[]/m);
      const rest = start >= 0 ? tryParse(kept.slice(start).trim()) : undefined;
      return rest === undefined ? undefined : pick(objects(rest));
    },
  };
}

/** A line that is one JSON object, else undefined. */
function jsonLine(text: string): Json | undefined {
  const trimmed = text.trim();
  if (trimmed.charCodeAt(0) !== 0x7b) return undefined;
  const value = tryParse(trimmed);
  return isObject(value) ? value : undefined;
}

function tryParse(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isAgentMessage(type: unknown): boolean {
  return type === 'agent_message' || type === 'assistant_message';
}

function count(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined;
}

/** Drops undefined fields; nothing recognised at all is null. */
function compact(usage: { [K in keyof Usage]: Usage[K] | undefined }): Usage | null {
  const entries = Object.entries(usage).filter(([, value]) => value !== undefined);
  return entries.length > 0 ? (Object.fromEntries(entries) as Usage) : null;
}
