import type { ServerResponse } from 'node:http';

/** What every protocol module needs from the HTTP side: JSON replies, SSE frames, split text. */

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { ...headers, 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

export function openStream(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
}

/** One SSE frame; `event` is left out for protocols that only send `data:` lines. */
export function sendEvent(res: ServerResponse, data: unknown, event?: string): void {
  res.write(
    `${event ? `event: ${event}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`,
  );
}

/** A text in two pieces, so a client has to reassemble deltas as it does with a real API. */
export function halves(text: string): string[] {
  const middle = Math.ceil(text.length / 2);
  return text.length < 2 ? [text] : [text.slice(0, middle), text.slice(middle)];
}

export type Json = Record<string, unknown>;

/** Tokens a turn reports when its script gives none. */
export const DEFAULT_USAGE = { input_tokens: 100, output_tokens: 20 } as const;

export function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function asArray(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  enum?: unknown[];
}

const SAMPLES: Record<string, unknown> = { number: 0, integer: 0, boolean: false, array: [], object: {} };

/**
 * A side request that asks for structured output (a session title, Gemini's next-speaker check)
 * gets an object that satisfies its schema; `text` fills the string fields.
 */
export function sampleFor(schema: unknown, text: string): string {
  const s = isObject(schema) ? (schema as JsonSchema) : undefined;
  if (!s?.properties) return text;
  const sample: Record<string, unknown> = {};
  for (const [key, property] of Object.entries(s.properties)) {
    const type = Array.isArray(property.type) ? property.type[0] : property.type;
    if (property.enum?.length) sample[key] = property.enum[0];
    else sample[key] = type && type in SAMPLES ? SAMPLES[type] : text;
  }
  return JSON.stringify(sample);
}
