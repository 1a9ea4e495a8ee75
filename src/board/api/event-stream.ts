import type { Request, Response } from 'express';
import type { FlotillaClient } from '../../producer/client.js';
import type { MissionEvent } from '../../shared/contracts.js';
import { API_ERROR_CODES, ApiError, toApiError } from './errors.js';

/**
 * GET /missions/:id/events as Server-Sent Events (the WHATWG HTML "server-sent events" format):
 * each of the mission's events is one message whose `id` is its Redis stream id, `event` its type
 * and `data` its JSON. A client that reconnects with `Last-Event-ID` (or `?after=`) gets what came
 * after that id; the stream ends after the mission's final event once its summary is written, and
 * a reconnect after that end gets 204, which tells an EventSource to stop reconnecting.
 */

/** A comment line this often keeps proxies and load balancers from closing a quiet stream. */
export const SSE_KEEPALIVE_MS = 15_000;

/** Redis stream ids: `<ms>-<seq>`, or `0` for the beginning. */
const STREAM_ID = /^(0|\d{1,20}-\d{1,20})$/;

function resumeFrom(req: Request): string | undefined {
  const header = req.headers['last-event-id'];
  const query = typeof req.query.after === 'string' ? req.query.after : undefined;
  const given = (typeof header === 'string' ? header : undefined) ?? query;
  if (given === undefined || given.trim() === '') return undefined;
  if (!STREAM_ID.test(given.trim())) {
    throw new ApiError(
      400,
      API_ERROR_CODES.badRequest,
      `Last-Event-ID must be an event id this stream sent (like 1765111111111-0), got '${given}'`,
    );
  }
  return given.trim();
}

function message(entryId: string, event: MissionEvent): string {
  // JSON.stringify escapes newlines, so the data is always one line.
  return `id: ${entryId}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
}

export async function streamEvents(
  req: Request,
  res: Response,
  client: FlotillaClient,
  id: string,
  options: { pollMs?: number; keepAliveMs?: number } = {},
): Promise<void> {
  const after = resumeFrom(req);
  if (!(await client.store.missionExists(id)))
    throw new ApiError(404, 'mission/not-found', `no mission '${id}'`);
  if (after !== undefined) {
    const [summary, last] = await Promise.all([client.summary(id), client.store.lastEventId(id)]);
    if (summary !== null && last === after) {
      res.status(204).end();
      return;
    }
  }
  res.writeHead(200, {
    'Content-Type': 'text/event-stream; charset=utf-8',
    'Cache-Control': 'no-store',
    Connection: 'keep-alive',
    // nginx buffers responses unless told otherwise; events must arrive as they happen.
    'X-Accel-Buffering': 'no',
  });
  res.write(`: events of mission ${id}\n\n`);
  const gone = new AbortController();
  res.on('close', () => gone.abort());
  const keepAlive = setInterval(() => res.write(': keep-alive\n\n'), options.keepAliveMs ?? SSE_KEEPALIVE_MS);
  keepAlive.unref();
  try {
    const entries = client.eventEntries(id, { signal: gone.signal, pollMs: options.pollMs, after });
    for await (const { id: entryId, event } of entries) res.write(message(entryId, event));
  } catch (error) {
    // The status line has gone; the failure travels as the stream's last message.
    const failure = toApiError(error);
    const body = { error: { code: failure.code, message: failure.message } };
    if (!gone.signal.aborted) res.write(`event: error\ndata: ${JSON.stringify(body)}\n\n`);
  } finally {
    clearInterval(keepAlive);
    res.end();
  }
}
