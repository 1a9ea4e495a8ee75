import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A scripted stand-in for the Anthropic Messages API, so tests can run the real `claude -p`
 * (`ANTHROPIC_BASE_URL=<url>`). Each step answers the next main-loop request, in order; side
 * requests (session title, token counting, the connectivity HEAD) get generic answers and do
 * not consume the script. What the CLI sends is described in docs/TESTING.md; `claude-cli.ts`
 * has the flags and environment to run it with.
 */
export type Turn =
  | { type: 'text'; text: string; usage?: TurnUsage }
  | {
      type: 'tool_use';
      name: string;
      input: Record<string, unknown>;
      /** Defaults to `toolu_scripted_<n>`. */
      id?: string;
      /** Optional text block before the tool call. */
      text?: string;
      usage?: TurnUsage;
    }
  /** An API error reply (401 authentication_error, 429 rate_limit_error, 529 overloaded_error, …). */
  | { type: 'error'; status: number; errorType: string; message: string };

/**
 * A script step: a fixed turn, or one computed from the main request it answers (a path named in
 * the prompt, say). `userText(request)` gives the prompt.
 */
export type ScriptStep = Turn | ((request: CapturedRequest) => Turn);

export interface TurnUsage {
  input_tokens: number;
  output_tokens: number;
}

export interface CapturedRequest {
  method: string;
  /** Path with query, e.g. `/v1/messages?beta=true`. */
  path: string;
  headers: IncomingMessage['headers'];
  /** Parsed JSON body; the raw text when it is not JSON; undefined when empty. */
  body: unknown;
  /** `main` answered from the script; `side` a generic Messages reply; the rest are other endpoints. */
  kind: 'main' | 'side' | 'count_tokens' | 'other';
  /** Index of the script turn that answered a main request. */
  turn?: number;
}

export interface ScriptedAnthropic {
  url: string;
  /** Every request, in arrival order. */
  requests: CapturedRequest[];
  /** What went wrong on the server side: the script ran out, a body was not JSON. */
  problems: string[];
  stop(): Promise<void>;
}

export interface ScriptedAnthropicOptions {
  /** Tells a main-loop request from a side request; default: it offers at least one tool. */
  isMainRequest?: (body: MessagesBody) => boolean;
}

export interface MessagesBody {
  model?: string;
  stream?: boolean;
  tools?: { name: string }[];
  messages?: { role: string; content: unknown }[];
  output_config?: { format?: { type?: string; schema?: JsonSchema } };
}

interface JsonSchema {
  type?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
}

export const textTurn = (text: string): Turn => ({ type: 'text', text });
export const toolUseTurn = (name: string, input: Record<string, unknown>): Turn => ({
  type: 'tool_use',
  name,
  input,
});
export const errorTurn = (status: number, errorType: string, message: string): Turn => ({
  type: 'error',
  status,
  errorType,
  message,
});
/** Claude Code's `Write` tool; `filePath` must be absolute. */
export const writeTurn = (filePath: string, content: string): Turn =>
  toolUseTurn('Write', { file_path: filePath, content });

const DEFAULT_USAGE: TurnUsage = { input_tokens: 100, output_tokens: 20 };

export async function startScriptedAnthropic(
  script: ScriptStep[],
  options: ScriptedAnthropicOptions = {},
): Promise<ScriptedAnthropic> {
  const isMain = options.isMainRequest ?? ((body) => (body.tools?.length ?? 0) > 0);
  const requests: CapturedRequest[] = [];
  const problems: string[] = [];
  let next = 0;
  let messageCount = 0;

  const handle = (req: IncomingMessage, res: ServerResponse, raw: string) => {
    const body = parseBody(raw, problems);
    const path = req.url ?? '/';
    const pathname = path.split('?')[0];
    const captured: CapturedRequest = {
      method: req.method ?? '',
      path,
      headers: req.headers,
      body,
      kind: 'other',
    };
    requests.push(captured);

    if (req.method === 'POST' && pathname === '/v1/messages/count_tokens') {
      captured.kind = 'count_tokens';
      return sendJson(res, 200, { input_tokens: Math.max(1, Math.ceil(raw.length / 4)) });
    }
    if (req.method === 'POST' && pathname === '/v1/messages' && isMessagesBody(body)) {
      messageCount++;
      let turn: Turn;
      if (isMain(body)) {
        captured.kind = 'main';
        captured.turn = next;
        const step = script[next++];
        if (!step) problems.push(`main request #${next} arrived but the script has ${script.length} turn(s)`);
        const scripted = typeof step === 'function' ? step(captured) : step;
        turn = scripted ?? textTurn('scripted-anthropic: the script is exhausted');
      } else {
        captured.kind = 'side';
        turn = textTurn(sideReply(body));
      }
      if (turn.type === 'error') {
        const error = { type: 'error', error: { type: turn.errorType, message: turn.message } };
        return sendJson(res, turn.status, error);
      }
      const message = { n: messageCount, model: body.model ?? 'claude-scripted', turn };
      return body.stream ? sendStream(res, message) : sendJson(res, 200, toMessage(message));
    }
    // Claude Code probes the base URL with `HEAD /` before its first request.
    if (req.method === 'HEAD' || (req.method === 'GET' && pathname === '/')) return sendJson(res, 200, {});
    if (req.method === 'GET' && pathname === '/v1/models') {
      return sendJson(res, 200, { data: [], has_more: false, first_id: null, last_id: null });
    }
    sendJson(res, 404, { type: 'error', error: { type: 'not_found_error', message: `no route ${path}` } });
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => handle(req, res, Buffer.concat(chunks).toString('utf8')));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  let stopping: Promise<void> | undefined;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    problems,
    stop() {
      stopping ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return stopping;
    },
  };
}

/** The text of the request's user messages (string or text blocks), for "did the prompt arrive" checks. */
export function userText(request: CapturedRequest): string {
  if (!isMessagesBody(request.body)) return '';
  return (request.body.messages ?? [])
    .filter((message) => message.role === 'user')
    .flatMap((message) =>
      typeof message.content === 'string' ? [message.content] : blockTexts(message.content),
    )
    .join('\n');
}

function blockTexts(content: unknown): string[] {
  if (!Array.isArray(content)) return [];
  return content.flatMap((block: { type?: string; text?: unknown }) =>
    block.type === 'text' && typeof block.text === 'string' ? [block.text] : [],
  );
}

const SAMPLES: Record<string, unknown> = { number: 0, integer: 0, boolean: false, array: [], object: {} };

/** A structured side request (the session title) gets an object that satisfies its schema. */
function sideReply(body: MessagesBody): string {
  const schema =
    body.output_config?.format?.type === 'json_schema' ? body.output_config.format.schema : undefined;
  if (!schema?.properties) return 'OK';
  const sample: Record<string, unknown> = {};
  for (const [key, property] of Object.entries(schema.properties)) {
    sample[key] =
      property.type && property.type in SAMPLES ? SAMPLES[property.type] : 'Scripted test session';
  }
  return JSON.stringify(sample);
}

interface Reply {
  /** Counts Messages requests, so message and tool ids are unique per server. */
  n: number;
  model: string;
  turn: Exclude<Turn, { type: 'error' }>;
}

function contentBlocks({ n, turn }: Reply): Record<string, unknown>[] {
  if (turn.type === 'text') return [{ type: 'text', text: turn.text }];
  const call = { type: 'tool_use', id: turn.id ?? `toolu_scripted_${n}`, name: turn.name, input: turn.input };
  return turn.text ? [{ type: 'text', text: turn.text }, call] : [call];
}

function toMessage(reply: Reply): Record<string, unknown> {
  const usage = reply.turn.usage ?? DEFAULT_USAGE;
  return {
    id: `msg_scripted_${reply.n}`,
    type: 'message',
    role: 'assistant',
    model: reply.model,
    content: contentBlocks(reply),
    stop_reason: reply.turn.type === 'tool_use' ? 'tool_use' : 'end_turn',
    stop_sequence: null,
    usage,
  };
}

function sendStream(res: ServerResponse, reply: Reply): void {
  const usage = reply.turn.usage ?? DEFAULT_USAGE;
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const send = (type: string, data: Record<string, unknown>) =>
    res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  const message = {
    ...toMessage(reply),
    content: [],
    stop_reason: null,
    usage: { ...usage, output_tokens: 1 },
  };
  send('message_start', { message });
  contentBlocks(reply).forEach((block, index) => {
    if (block.type === 'text') {
      send('content_block_start', { index, content_block: { type: 'text', text: '' } });
      for (const text of halves(String(block.text))) {
        send('content_block_delta', { index, delta: { type: 'text_delta', text } });
      }
    } else {
      send('content_block_start', { index, content_block: { ...block, input: {} } });
      // Split the JSON so the client has to reassemble partial input, as it does with the real API.
      for (const partial_json of halves(JSON.stringify(block.input))) {
        send('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json } });
      }
    }
    send('content_block_stop', { index });
  });
  const stop_reason = reply.turn.type === 'tool_use' ? 'tool_use' : 'end_turn';
  send('message_delta', {
    delta: { stop_reason, stop_sequence: null },
    usage: { output_tokens: usage.output_tokens },
  });
  send('message_stop', {});
  res.end();
}

function halves(text: string): string[] {
  const middle = Math.ceil(text.length / 2);
  return text.length < 2 ? [text] : [text.slice(0, middle), text.slice(middle)];
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

function parseBody(raw: string, problems: string[]): unknown {
  if (raw === '') return undefined;
  try {
    return JSON.parse(raw);
  } catch {
    problems.push(`request body is not JSON: ${raw.slice(0, 200)}`);
    return raw;
  }
}

function isMessagesBody(body: unknown): body is MessagesBody {
  return typeof body === 'object' && body !== null && !Array.isArray(body);
}
