import type { ServerResponse } from 'node:http';
import type { Protocol, Reply } from '../model-server.js';
import {
  asArray,
  DEFAULT_USAGE,
  halves,
  isObject,
  type Json,
  openStream,
  sampleFor,
  sendEvent,
  sendJson,
} from './wire.js';

/** OpenAI's error shape, used by both of its APIs: `{ error: { message, type, code } }`. */
const openAiError: Protocol['error'] = (res, turn) =>
  sendJson(
    res,
    turn.status,
    { error: { message: turn.message, type: turn.errorType, code: turn.errorType, param: null } },
    turn.headers,
  );

/**
 * OpenAI Responses (`POST /v1/responses`, SSE): what `codex exec` speaks through a custom
 * provider with `wire_api = "responses"`. Every request is a turn of the agent loop. A JSON
 * `input` becomes a `function_call` item, a string one a `custom_tool_call` (Codex's freeform
 * `exec` and `apply_patch` tools).
 */
export const responses: Protocol = {
  name: 'responses',
  matches: (method, pathname) => method === 'POST' && pathname === '/v1/responses',
  isMain: () => true,
  userText: (body) =>
    asArray(body.input)
      .filter((item): item is Json => isObject(item) && item.type === 'message' && item.role === 'user')
      .flatMap((item) =>
        typeof item.content === 'string'
          ? [item.content]
          : asArray(item.content).flatMap((part) =>
              isObject(part) && typeof part.text === 'string' ? [part.text] : [],
            ),
      )
      .join('\n'),
  model: (body) => (typeof body.model === 'string' ? body.model : 'gpt-scripted'),
  streams: (body) => body.stream === true,
  reply: sendResponse,
  error: openAiError,
  side: () => 'OK',
};

function responseItem(reply: Reply): Json {
  const { n, turn } = reply;
  if (turn.type === 'text') {
    return {
      type: 'message',
      id: `msg_scripted_${n}`,
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_text', text: turn.text, annotations: [] }],
    };
  }
  const callId = turn.id ?? `call_scripted_${n}`;
  return typeof turn.input === 'string'
    ? {
        type: 'custom_tool_call',
        id: `ctc_scripted_${n}`,
        call_id: callId,
        name: turn.name,
        input: turn.input,
        status: 'completed',
      }
    : {
        type: 'function_call',
        id: `fc_scripted_${n}`,
        call_id: callId,
        name: turn.name,
        arguments: JSON.stringify(turn.input),
        status: 'completed',
      };
}

function sendResponse(res: ServerResponse, reply: Reply): void {
  const usage = reply.turn.usage ?? DEFAULT_USAGE;
  const item = responseItem(reply);
  const response = {
    id: `resp_scripted_${reply.n}`,
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    model: reply.model,
    status: 'completed',
    output: [item],
    usage: {
      input_tokens: usage.input_tokens,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: usage.output_tokens,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: usage.input_tokens + usage.output_tokens,
    },
  };
  if (!reply.stream) {
    sendJson(res, 200, response);
    return;
  }
  openStream(res);
  const send = (type: string, data: Json) => sendEvent(res, { type, ...data }, type);
  send('response.created', { response: { ...response, status: 'in_progress', output: [], usage: null } });
  if (item.type === 'message' && reply.turn.type === 'text') {
    send('response.output_item.added', {
      output_index: 0,
      item: { ...item, status: 'in_progress', content: [] },
    });
    for (const delta of halves(reply.turn.text)) {
      send('response.output_text.delta', { item_id: item.id, output_index: 0, content_index: 0, delta });
    }
  } else {
    send('response.output_item.added', { output_index: 0, item: { ...item, status: 'in_progress' } });
  }
  send('response.output_item.done', { output_index: 0, item });
  send('response.completed', { response });
  res.end();
}

/**
 * OpenAI Chat Completions (`POST /v1/chat/completions`, SSE): what OpenCode speaks through an
 * `@ai-sdk/openai-compatible` provider. A request with tools is a main-loop turn.
 */
export const chatCompletions: Protocol = {
  name: 'chat',
  matches: (method, pathname) => method === 'POST' && pathname === '/v1/chat/completions',
  isMain: (body) => asArray(body.tools).length > 0,
  userText: (body) =>
    asArray(body.messages)
      .filter((m): m is Json => isObject(m) && m.role === 'user')
      .flatMap((m) =>
        typeof m.content === 'string'
          ? [m.content]
          : asArray(m.content).flatMap((part) =>
              isObject(part) && typeof part.text === 'string' ? [part.text] : [],
            ),
      )
      .join('\n'),
  model: (body) => (typeof body.model === 'string' ? body.model : 'chat-scripted'),
  streams: (body) => body.stream === true,
  reply: sendChat,
  error: openAiError,
  side: (body) => {
    const format = isObject(body.response_format) ? body.response_format : {};
    const schema = isObject(format.json_schema) ? format.json_schema.schema : undefined;
    return schema ? sampleFor(schema, 'Scripted test session') : 'Scripted test session';
  },
};

function sendChat(res: ServerResponse, reply: Reply): void {
  const { n, turn } = reply;
  const usage = turn.usage ?? DEFAULT_USAGE;
  const chatUsage = {
    prompt_tokens: usage.input_tokens,
    completion_tokens: usage.output_tokens,
    total_tokens: usage.input_tokens + usage.output_tokens,
  };
  const base = { id: `chatcmpl_scripted_${n}`, created: Math.floor(Date.now() / 1000), model: reply.model };
  const call =
    turn.type === 'tool_use'
      ? {
          id: turn.id ?? `call_scripted_${n}`,
          type: 'function',
          function: {
            name: turn.name,
            arguments: typeof turn.input === 'string' ? turn.input : JSON.stringify(turn.input),
          },
        }
      : undefined;
  const text = turn.type === 'text' ? turn.text : (turn.text ?? '');
  const finish = call ? 'tool_calls' : 'stop';
  if (!reply.stream) {
    sendJson(res, 200, {
      ...base,
      object: 'chat.completion',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: text || null, ...(call ? { tool_calls: [call] } : {}) },
          finish_reason: finish,
        },
      ],
      usage: chatUsage,
    });
    return;
  }
  openStream(res);
  const chunk = (delta: Json, finish_reason: string | null = null) =>
    sendEvent(res, {
      ...base,
      object: 'chat.completion.chunk',
      choices: [{ index: 0, delta, finish_reason }],
    });
  chunk({ role: 'assistant', content: '' });
  if (text) for (const piece of halves(text)) chunk({ content: piece });
  if (call) {
    const [first = '', second = ''] = halves(call.function.arguments);
    chunk({
      tool_calls: [
        { index: 0, id: call.id, type: 'function', function: { name: call.function.name, arguments: first } },
      ],
    });
    if (second) chunk({ tool_calls: [{ index: 0, function: { arguments: second } }] });
  }
  chunk({}, finish);
  sendEvent(res, { ...base, object: 'chat.completion.chunk', choices: [], usage: chatUsage });
  sendEvent(res, '[DONE]');
  res.end();
}
