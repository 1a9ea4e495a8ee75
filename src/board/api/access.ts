import type { NextFunction, Request, Response } from 'express';
import { isLoopback, sameSecret } from '../auth.js';
import { API_ERROR_CODES, ApiError, sendError } from './errors.js';
import type { ApiAccess } from './options.js';

export type { ApiAccess } from './options.js';

/**
 * Who may use the API. It submits missions that run agent CLIs, so it is never less protected than
 * the board's pages: with FLOTILLA_API_TOKEN every request needs `Authorization: Bearer <token>`;
 * without one it answers only where the board itself needs no credentials (loopback, no board
 * user), and otherwise refuses every request, as the board refuses to listen beyond loopback.
 */

export function decideApiAccess(input: {
  host: string;
  token?: string;
  boardCredentials: boolean;
}): ApiAccess {
  if (input.token) return { kind: 'token', token: input.token };
  if (isLoopback(input.host) && !input.boardCredentials) return { kind: 'open' };
  const where = isLoopback(input.host)
    ? 'the board requires FLOTILLA_BOARD_USER and FLOTILLA_BOARD_PASSWORD'
    : `the board listens on ${input.host}, beyond loopback,`;
  return {
    kind: 'off',
    reason: `the API is off: ${where} and FLOTILLA_API_TOKEN is not set; set it on the board and send Authorization: Bearer <token>`,
  };
}

/** One line for the board's start-up message; never the token. */
export function describeApiAccess(access: ApiAccess): string {
  if (access.kind === 'token') return 'bearer token (FLOTILLA_API_TOKEN) required';
  if (access.kind === 'open') return 'no token (loopback only)';
  return access.reason;
}

const REALM = 'Bearer realm="flotilla"';

function bearerToken(header: string | undefined): string | undefined {
  return /^Bearer\s+(\S+)\s*$/i.exec(header ?? '')?.[1];
}

/**
 * Loopback without a token trusts whoever can reach 127.0.0.1, which includes a web page whose
 * name an attacker re-points at 127.0.0.1 (DNS rebinding): its requests carry the attacker's name
 * in Host, so only requests addressed to a loopback name are answered.
 */
function addressedToLoopback(req: Request): boolean {
  const host = req.headers.host ?? '';
  const name = host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.replace(/:\d*$/, '');
  return isLoopback(name);
}

function refusal(access: ApiAccess, req: Request): ApiError | undefined {
  if (access.kind === 'off') return new ApiError(403, API_ERROR_CODES.disabled, access.reason);
  if (access.kind === 'open') {
    if (addressedToLoopback(req)) return undefined;
    return new ApiError(
      403,
      API_ERROR_CODES.foreignHost,
      'without FLOTILLA_API_TOKEN the API answers only requests addressed to a loopback name (Host: 127.0.0.1, localhost or [::1])',
    );
  }
  const given = bearerToken(req.headers.authorization);
  if (given !== undefined && sameSecret(given, access.token)) return undefined;
  const message =
    given === undefined
      ? 'a bearer token is required: send Authorization: Bearer <FLOTILLA_API_TOKEN>'
      : 'the bearer token is wrong';
  const challenge = given === undefined ? REALM : `${REALM}, error="invalid_token"`;
  return new ApiError(401, API_ERROR_CODES.unauthorized, message, undefined, {
    'WWW-Authenticate': challenge,
  });
}

export function apiAccess(access: ApiAccess) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const refused = refusal(access, req);
    if (refused) sendError(res, refused);
    else next();
  };
}
