import type { ServerResponse } from 'node:http';
import type { Protocol, Reply } from '../model-server.js';
import {
  asArray,
  DEFAULT_USAGE,
  isObject,
  type Json,
  openStream,
  sampleFor,
  sendEvent,
  sendJson,
} from './wire.js';

const GEMINI_PATH = /^\/v1(beta|alpha)?\/models\/([^/:]+):(streamGenerateContent|generateContent)$/;

const STATUS_NAMES: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  429: 'RESOURCE_EXHAUSTED',
};

/**
 * Gemini (`POST /v1beta/models/<m>:streamGenerateContent?alt=sse`): what `gemini` speaks with
 * `GOOGLE_GEMINI_BASE_URL`. A streamed request with tools is a main-loop turn; the non-streamed
 * `:generateContent` calls (model routing, the next-speaker check) are side requests, answered
 * with JSON that fits their schema.
 */
export const gemini: Protocol = {
  name: 'gemini',
  matches: (method, pathname) => method === 'POST' && GEMINI_PATH.test(pathname),
  isMain: (body, pathname) => pathname.endsWith(':streamGenerateContent') && asArray(body.tools).length > 0,
  userText: (body) =>
    asArray(body.contents)
      .filter((c): c is Json => isObject(c) && c.role === 'user')
      .flatMap((c) =>
        asArray(c.parts).flatMap((p) => (isObject(p) && typeof p.text === 'string' ? [p.text] : [])),
      )
      .join('\n'),
  model: (_body, pathname) => GEMINI_PATH.exec(pathname)?.[2] ?? 'gemini-scripted',
  streams: (_body, pathname) => pathname.endsWith(':streamGenerateContent'),
  reply: sendGemini,
  error: (res, turn) =>
    sendJson(
      res,
      turn.status,
      {
        error: {
          code: turn.status,
          message: turn.message,
          status: STATUS_NAMES[turn.status] ?? turn.errorType,
          details: turn.details ?? [],
        },
      },
      turn.headers,
    ),
  side: (body) => {
    const config = isObject(body.generationConfig) ? body.generationConfig : {};
    const schema = config.responseJsonSchema ?? config.responseSchema;
    // The next-speaker check asks who talks next; the first enum value, "user", ends the turn.
    return schema ? sampleFor(schema, 'scripted') : 'OK';
  },
};

function sendGemini(res: ServerResponse, reply: Reply): void {
  const { turn } = reply;
  const usage = turn.usage ?? DEFAULT_USAGE;
  const parts: Json[] = [];
  if (turn.type === 'text') parts.push({ text: turn.text });
  else {
    if (turn.text) parts.push({ text: turn.text });
    parts.push({
      functionCall: {
        name: turn.name,
        args: typeof turn.input === 'string' ? { input: turn.input } : turn.input,
      },
    });
  }
  const response = {
    candidates: [{ content: { role: 'model', parts }, finishReason: 'STOP', index: 0 }],
    usageMetadata: {
      promptTokenCount: usage.input_tokens,
      candidatesTokenCount: usage.output_tokens,
      totalTokenCount: usage.input_tokens + usage.output_tokens,
    },
    modelVersion: reply.model,
    responseId: `resp_scripted_${reply.n}`,
  };
  if (!reply.stream) {
    sendJson(res, 200, response);
    return;
  }
  openStream(res);
  sendEvent(res, response);
  res.end();
}
