import type { NextFunction, Request, Response } from 'express';
import { isFlotillaError, type Problem } from '../../shared/errors.js';
import { describeLostRedis, isRedisConnectionError } from '../../shared/redis-lost.js';

/**
 * The API's errors: one JSON shape, `{ error: { code, message, problems? } }`, and one table from
 * what went wrong to the HTTP status. `code` is a FlotillaError code (mission/invalid,
 * redis/unreachable, …) or one of the API's own below; clients branch on it, people read `message`.
 */
export const API_ERROR_CODES = {
  badRequest: 'api/bad-request',
  malformedJson: 'api/malformed-json',
  unauthorized: 'api/unauthorized',
  disabled: 'api/disabled',
  foreignHost: 'api/foreign-host',
  crossSite: 'api/cross-site',
  tooLarge: 'api/body-too-large',
  unsupportedType: 'api/unsupported-media-type',
  notFound: 'api/not-found',
  missionFinished: 'mission/finished',
  taskNotFound: 'task/not-found',
  taskNotWaiting: 'task/not-waiting',
} as const;

/** What a handler throws to answer with a given status; anything else goes through toApiError(). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly problems?: readonly Problem[],
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** A problem as the API shows it: no file (a request has none), its place in the body when known. */
function apiProblem(problem: Problem) {
  return {
    path: problem.path,
    ...(problem.line === undefined ? {} : { line: problem.line }),
    ...(problem.column === undefined ? {} : { column: problem.column }),
    message: problem.message,
  };
}

/** Statuses for the FlotillaError codes a request can meet; unlisted codes are the board's fault (500). */
const STATUS_OF_CODE: Readonly<Record<string, number>> = {
  'mission/invalid': 422,
  'mission/not-found': 404,
  'redis/unreachable': 503,
  // Preparing the workspace failed: a URL that cannot be cloned, a folder git cannot use.
  'git/failed': 422,
  'git/unsupported': 422,
  'git/missing': 503,
};

export function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  if (isFlotillaError(error) && STATUS_OF_CODE[error.code] !== undefined) {
    const problems = error.problems.length > 0 ? error.problems : undefined;
    // The message of mission/invalid lists every problem on lines of its own; `problems` has them.
    const message =
      error.code === 'mission/invalid' ? (error.message.split('\n')[0] ?? error.message) : error.message;
    return new ApiError(STATUS_OF_CODE[error.code] ?? 500, error.code, message, problems);
  }
  if (isRedisConnectionError(error)) return new ApiError(503, 'redis/unreachable', describeLostRedis(error));
  return new ApiError(500, 'internal', error instanceof Error ? error.message : String(error));
}

export function sendError(res: Response, error: ApiError): void {
  for (const [name, value] of Object.entries(error.headers)) res.setHeader(name, value);
  res.setHeader('Cache-Control', 'no-store');
  res.status(error.status).json({
    error: {
      code: error.code,
      message: error.message,
      ...(error.problems ? { problems: error.problems.map(apiProblem) } : {}),
    },
  });
}

/** The router's last middleware: every error as JSON; only the board's own faults reach `onError`. */
export function apiErrorHandler(onError?: (error: unknown) => void) {
  return (error: unknown, _req: Request, res: Response, _next: NextFunction): void => {
    const api = toApiError(bodyParserError(error) ?? error);
    if (api.status >= 500 && api.code === 'internal') onError?.(error);
    if (res.headersSent) {
      res.end();
      return;
    }
    sendError(res, api);
  };
}

/** express.raw()'s own errors (a body past the limit, a broken compressed body) in the API's words. */
function bodyParserError(error: unknown): ApiError | undefined {
  if (typeof error !== 'object' || error === null || !('type' in error)) return undefined;
  if (error.type === 'entity.too.large') {
    const limit = 'limit' in error && typeof error.limit === 'number' ? error.limit : undefined;
    return new ApiError(
      413,
      API_ERROR_CODES.tooLarge,
      `the body is larger than ${limit ?? 'the limit of'} bytes; split the mission or send less`,
    );
  }
  if (typeof error.type === 'string' && error.type.startsWith('encoding.')) {
    return new ApiError(415, API_ERROR_CODES.unsupportedType, `unsupported content encoding or charset`);
  }
  if (error.type === 'request.aborted' || error.type === 'request.size.invalid') {
    return new ApiError(400, API_ERROR_CODES.badRequest, 'the body ended before its announced length');
  }
  return undefined;
}
