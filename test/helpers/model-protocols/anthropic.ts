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

/**
 * Anthropic Messages (`POST /v1/messages`): what `claude -p` speaks, and OpenCode's title call to
 * its small model. A stream is `message_start`, `content_block_*`, `message_delta`, `message_stop`.
 */
export const anthropic: Protocol = {
  name: 'anthropic',
  matches: (method, pathname) => method === 'POST' && pathname === '/v1/messages',
  isMain: (body) => asArray(body.tools).length > 0,
  userText: (body) =>
    asArray(body.messages)
      .filter((m): m is Json => isObject(m) && m.role === 'user')
      .flatMap((m) => (typeof m.content === 'string' ? [m.content] : textBlocks(m.content)))
      .join('\n'),
  model: (body) => (typeof body.model === 'string' ? body.model : 'claude-scripted'),
  streams: (body) => body.stream === true,
  reply: (res, reply) => (reply.stream ? sendStream(res, reply) : sendJson(res, 200, toMessage(reply))),
  error: (res, turn) =>
    sendJson(
      res,
      turn.status,
      { type: 'error', error: { type: turn.errorType, message: turn.message } },
      turn.headers,
    ),
  side: (body) => {
    const config = isObject(body.output_config) ? body.output_config : {};
    const format = isObject(config.format) ? config.format : {};
    return format.type === 'json_schema' ? sampleFor(format.schema, 'Scripted test session') : 'OK';
  },
};

function textBlocks(content: unknown): string[] {
  return asArray(content).flatMap((block) =>
    isObject(block) && block.type === 'text' && typeof block.text === 'string' ? [block.text] : [],
  );
}

function contentBlocks({ n, turn }: Reply): Json[] {
  if (turn.type === 'text') return [{ type: 'text', text: turn.text }];
  const call = { type: 'tool_use', id: turn.id ?? `toolu_scripted_${n}`, name: turn.name, input: turn.input };
  return turn.text ? [{ type: 'text', text: turn.text }, call] : [call];
}

function toMessage(reply: Reply): Json {
  return {
    id: `msg_scripted_${reply.n}`,
    type: 'message',
    role: 'assistant',
    model: reply.model,
    content: contentBlocks(reply),
    stop_reason: reply.turn.type === 'tool_use' ? 'tool_use' : 'end_turn',
    stop_sequence: null,
    usage: reply.turn.usage ?? DEFAULT_USAGE,
  };
}

function sendStream(res: ServerResponse, reply: Reply): void {
  const usage = reply.turn.usage ?? DEFAULT_USAGE;
  openStream(res);
  const send = (type: string, data: Json) => sendEvent(res, { type, ...data }, type);
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
