/**
 * One JSON request to a forge's REST API, with the failure told apart by whether another try can
 * help: a forge that is down (a 5xx, a refused connection, a timeout) or rate limiting (429, or a
 * 403 that says so) may answer later; a bad token (401), missing rights (403), an unknown project
 * (404) or a refused request (422) will not. The token never appears in an error.
 */

/** A forge answers well inside this; one that does not is treated as down, and tried again later. */
const REQUEST_TIMEOUT_MS = 30_000;
/** How much of a forge's error reply is worth quoting. */
const MESSAGE_CHARS = 300;

export class ForgeError extends Error {
  constructor(
    message: string,
    /** The HTTP status, or null when no reply came. */
    readonly status: number | null,
    readonly retryable: boolean,
  ) {
    super(message);
    this.name = 'ForgeError';
  }
}

export interface ForgeRequest {
  readonly method: 'GET' | 'POST' | 'PATCH' | 'PUT';
  /** Below the API root, starting with `/`, query included. */
  readonly path: string;
  readonly body?: unknown;
}

export interface ForgeHttp {
  /** The forge's name for messages (`GitHub`). */
  readonly name: string;
  readonly apiUrl: string;
  readonly token: string;
  /** The request's auth and media-type headers, as the forge documents them. */
  readonly headers: Readonly<Record<string, string>>;
  /** Injected for tests; the global fetch by default. */
  readonly fetch?: typeof fetch;
}

export async function forgeRequest<T>(http: ForgeHttp, request: ForgeRequest): Promise<T> {
  const where = `${http.name} ${request.method} ${request.path.replace(/\?.*$/, '')}`;
  let response: Response;
  try {
    response = await (http.fetch ?? fetch)(`${http.apiUrl}${request.path}`, {
      method: request.method,
      headers: {
        'User-Agent': 'flotilla',
        ...(request.body === undefined ? {} : { 'Content-Type': 'application/json' }),
        ...http.headers,
      },
      ...(request.body === undefined ? {} : { body: JSON.stringify(request.body) }),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message;
    throw new ForgeError(
      redact(`${where}: no answer from ${http.apiUrl} (${cause})`, http.token),
      null,
      true,
    );
  }
  const text = await response.text();
  if (!response.ok) {
    const message = redact(`${where}: ${response.status} ${replyMessage(text)}`, http.token);
    throw new ForgeError(message, response.status, isRetryable(response.status, text));
  }
  try {
    return (text ? JSON.parse(text) : null) as T;
  } catch {
    throw new ForgeError(`${where}: the reply is not JSON (${text.slice(0, 80)})`, response.status, true);
  }
}

function isRetryable(status: number, text: string): boolean {
  if (status >= 500 || status === 429 || status === 408) return true;
  return status === 403 && /rate limit/i.test(text);
}

/** The message a forge put in its error reply (`message` on GitHub and Gitea, `message`/`error` on GitLab). */
function replyMessage(text: string): string {
  try {
    const reply = JSON.parse(text) as { message?: unknown; error?: unknown; errors?: unknown };
    const parts = [reply.message, reply.error, reply.errors]
      .filter((part) => part !== undefined && part !== null)
      .map((part) => (typeof part === 'string' ? part : JSON.stringify(part)));
    if (parts.length > 0) return parts.join('; ').slice(0, MESSAGE_CHARS);
  } catch {
    // not JSON: quote the text
  }
  return text.trim().slice(0, MESSAGE_CHARS) || '(empty reply)';
}

function redact(text: string, token: string): string {
  return token ? text.split(token).join('***') : text;
}
