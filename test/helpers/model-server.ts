import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { anthropic } from './model-protocols/anthropic.js';
import { gemini } from './model-protocols/gemini.js';
import { chatCompletions, responses } from './model-protocols/openai.js';
import { type Json, sendJson } from './model-protocols/wire.js';

/**
 * A scripted stand-in for the model APIs the agent CLIs speak, so tests can run the real CLIs
 * offline: Anthropic Messages (`claude`, OpenCode's title call), OpenAI Responses (`codex`),
 * Gemini streamGenerateContent (`gemini`) and OpenAI Chat Completions (OpenCode's
 * openai-compatible provider). One script serves whichever protocol a request uses: each step
 * answers the next main-loop request, in order; side requests (a session title, Gemini's routing
 * and next-speaker checks, token counting, a connectivity HEAD) get generic answers and do not
 * consume the script. It listens on 127.0.0.1 only and logs every request. What each CLI sends is
 * described in docs/TESTING.md; `agent-clis.ts` has the environment and config to run them with.
 */
export type Turn =
  | { type: 'text'; text: string; usage?: TurnUsage }
  | {
      type: 'tool_use';
      name: string;
      /** JSON arguments; a string is a freeform (custom) tool's input, as Codex's `exec` takes. */
      input: Record<string, unknown> | string;
      /** Defaults to `toolu_scripted_<n>`. */
      id?: string;
      /** Optional text before the tool call. */
      text?: string;
      usage?: TurnUsage;
    }
  /**
   * An API error reply (401, 429, …) in the protocol's own error shape. Sticky: once reached it
   * answers every later main request too, because the CLIs retry on their own and a script cannot
   * know how often. Never use a 5xx: all the CLIs retry those for minutes.
   */
  | {
      type: 'error';
      status: number;
      errorType: string;
      message: string;
      /** Gemini's `error.details` (QuotaFailure, RetryInfo); other protocols ignore it. */
      details?: unknown[];
      /** Reply headers, e.g. `retry-after-ms` so a CLI's own backoff does not take minutes. */
      headers?: Record<string, string>;
    };

/**
 * A script step: a fixed turn, or one computed from the main request it answers (a path named in
 * the prompt, say). `userText(request)` gives the prompt.
 */
export type ScriptStep = Turn | ((request: CapturedRequest) => Turn);

export interface TurnUsage {
  input_tokens: number;
  output_tokens: number;
}

export type ProtocolName = 'anthropic' | 'responses' | 'gemini' | 'chat';

export interface CapturedRequest {
  method: string;
  /** Path with query, e.g. `/v1/messages?beta=true`. */
  path: string;
  headers: IncomingMessage['headers'];
  /** Parsed JSON body; the raw text when it is not JSON; undefined when empty. */
  body: unknown;
  /** The API the request was for; undefined for other endpoints. */
  protocol?: ProtocolName;
  /** `main` answered from the script; `side` a generic reply; the rest are other endpoints. */
  kind: 'main' | 'side' | 'count_tokens' | 'other';
  /** Index of the script turn that answered a main request. */
  turn?: number;
}

/** How one protocol reads requests and writes replies. */
export interface Protocol {
  readonly name: ProtocolName;
  matches(method: string, pathname: string): boolean;
  /** A main-loop request (it offers tools), as opposed to a side request. */
  isMain(body: Json, pathname: string): boolean;
  userText(body: Json): string;
  /** The model name the request asks for. */
  model(body: Json, pathname: string): string;
  /** Whether to answer as a stream. */
  streams(body: Json, pathname: string): boolean;
  reply(res: ServerResponse, reply: Reply): void;
  error(res: ServerResponse, turn: Extract<Turn, { type: 'error' }>): void;
  /** The generic answer to a side request. */
  side(body: Json): string;
}

export interface Reply {
  /** Counts model requests, so message and tool ids are unique per server. */
  n: number;
  model: string;
  stream: boolean;
  turn: Exclude<Turn, { type: 'error' }>;
}

export interface ScriptedModelServer {
  /** `http://127.0.0.1:<port>`; Codex and OpenCode want `${url}/v1`. */
  url: string;
  /** Every request, in arrival order. */
  requests: CapturedRequest[];
  /** What went wrong on the server side: the script ran out, a body was not JSON. */
  problems: string[];
  /** The main requests so far. */
  main(): CapturedRequest[];
  stop(): Promise<void>;
}

export interface ScriptedModelServerOptions {
  /** Tells a main-loop request from a side request; default: the protocol's own rule. */
  isMainRequest?: (body: Json, protocol: ProtocolName) => boolean;
}

export const textTurn = (text: string, usage?: TurnUsage): Turn => ({
  type: 'text',
  text,
  ...(usage ? { usage } : {}),
});
export const toolUseTurn = (name: string, input: Record<string, unknown> | string): Turn => ({
  type: 'tool_use',
  name,
  input,
});
export const errorTurn = (
  status: number,
  errorType: string,
  message: string,
  extra: { details?: unknown[]; headers?: Record<string, string> } = {},
): Turn => ({ type: 'error', status, errorType, message, ...extra });
/** Claude Code's `Write` tool; `filePath` must be absolute. */
export const writeTurn = (filePath: string, content: string): Turn =>
  toolUseTurn('Write', { file_path: filePath, content });

const PROTOCOLS: readonly Protocol[] = [anthropic, responses, chatCompletions, gemini];

export async function startModelServer(
  script: ScriptStep[],
  options: ScriptedModelServerOptions = {},
): Promise<ScriptedModelServer> {
  const requests: CapturedRequest[] = [];
  const problems: string[] = [];
  let next = 0;
  let modelRequests = 0;
  let sticky: Extract<Turn, { type: 'error' }> | undefined;

  const nextTurn = (captured: CapturedRequest): Turn => {
    captured.turn = next;
    if (sticky) return sticky;
    const step = script[next++];
    if (!step) problems.push(`main request #${next} arrived but the script has ${script.length} turn(s)`);
    const turn = (typeof step === 'function' ? step(captured) : step) ?? {
      type: 'text',
      text: 'scripted-model: the script is exhausted',
    };
    if (turn.type === 'error') sticky = turn;
    return turn;
  };

  const handle = (req: IncomingMessage, res: ServerResponse, raw: string) => {
    const body = parseBody(raw, problems);
    const path = req.url ?? '/';
    const pathname = path.split('?')[0] ?? '/';
    const method = req.method ?? '';
    const captured: CapturedRequest = { method, path, headers: req.headers, body, kind: 'other' };
    requests.push(captured);

    if (method === 'POST' && pathname === '/v1/messages/count_tokens') {
      captured.kind = 'count_tokens';
      return sendJson(res, 200, { input_tokens: Math.max(1, Math.ceil(raw.length / 4)) });
    }
    const protocol = PROTOCOLS.find((p) => p.matches(method, pathname));
    if (protocol && isJson(body)) {
      captured.protocol = protocol.name;
      modelRequests++;
      const main = options.isMainRequest?.(body, protocol.name) ?? protocol.isMain(body, pathname);
      captured.kind = main ? 'main' : 'side';
      const turn: Turn = main ? nextTurn(captured) : { type: 'text', text: protocol.side(body) };
      if (turn.type === 'error') return protocol.error(res, turn);
      return protocol.reply(res, {
        n: modelRequests,
        model: protocol.model(body, pathname),
        stream: protocol.streams(body, pathname),
        turn,
      });
    }
    // Claude Code probes the base URL with `HEAD /` before its first request.
    if (method === 'HEAD' || (method === 'GET' && pathname === '/')) return sendJson(res, 200, {});
    if (method === 'GET' && pathname === '/v1/models') {
      return sendJson(res, 200, { data: [], has_more: false, first_id: null, last_id: null, object: 'list' });
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
    main: () => requests.filter((request) => request.kind === 'main'),
    stop() {
      stopping ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return stopping;
    },
  };
}

/** The user's text in a request of any of the protocols, for "did the prompt arrive" checks. */
export function userText(request: CapturedRequest): string {
  const protocol = PROTOCOLS.find((p) => p.name === request.protocol);
  return protocol && isJson(request.body) ? protocol.userText(request.body) : '';
}

function isJson(body: unknown): body is Json {
  return typeof body === 'object' && body !== null && !Array.isArray(body);
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
