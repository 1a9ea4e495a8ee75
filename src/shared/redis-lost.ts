/**
 * A Redis that goes away mid-command surfaces as whatever ioredis was doing at that moment. These
 * say whether an error is that, and turn it into one sentence in flotilla's words (exit 3), never
 * ioredis's ("Reached the max retries per request limit (which is 1)…") and never a stack trace.
 */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENOTFOUND',
]);
const CONNECTION_MESSAGES =
  /ECONNREFUSED|ECONNRESET|Connection is closed|max retries per request|Stream isn't writeable|connect ETIMEDOUT/i;

export function isRedisConnectionError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as NodeJS.ErrnoException).code;
  if (code && CONNECTION_CODES.has(code)) return true;
  return error.name === 'MaxRetriesPerRequestError' || CONNECTION_MESSAGES.test(error.message);
}

export function describeLostRedis(error: unknown, where?: string): string {
  const at = where ? ` at ${where}` : '';
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const why =
    code === 'ECONNREFUSED' || /ECONNREFUSED/.test(message)
      ? 'connection refused'
      : /max retries per request|Connection is closed|Stream isn't writeable/i.test(message)
        ? 'it stopped answering'
        : (code ?? message);
  return `lost the connection to Redis${at} (${why})`;
}
