import { createHash, timingSafeEqual } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import { FlotillaError } from '../shared/errors.js';

export interface Credentials {
  readonly user: string;
  readonly password: string;
}

/** Loopback only: 127.0.0.0/8, ::1 and the name localhost. Everything else can be reached from outside. */
export function isLoopback(host: string): boolean {
  const h = host
    .trim()
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1');
  return h === 'localhost' || h === '::1' || h === '::ffff:127.0.0.1' || /^127(\.\d{1,3}){3}$/.test(h);
}

/**
 * Whether the board may start on `host`, and with which credentials. Exactly one of user and
 * password set is a mistake worth stopping for: it would otherwise silently mean "no auth".
 * Throws FlotillaError('usage') with the fix in the message.
 */
export function decideAuth(input: { host: string; user?: string; password?: string }): Credentials | null {
  const user = input.user || undefined;
  const password = input.password || undefined;
  if ((user === undefined) !== (password === undefined)) {
    throw new FlotillaError(
      'usage',
      `board: set both FLOTILLA_BOARD_USER and FLOTILLA_BOARD_PASSWORD, or neither (only ${user ? 'the user' : 'the password'} is set)`,
    );
  }
  if (user !== undefined && password !== undefined) return { user, password };
  if (!isLoopback(input.host)) {
    throw new FlotillaError(
      'usage',
      `board: refusing to listen on ${input.host} without authentication; set FLOTILLA_BOARD_USER and FLOTILLA_BOARD_PASSWORD, or bind to 127.0.0.1`,
    );
  }
  return null;
}

/** Hashing first gives both sides the same length, so the comparison takes the same time for any guess. */
export function sameSecret(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a).digest();
  const hb = createHash('sha256').update(b).digest();
  return timingSafeEqual(ha, hb);
}

/** Checks an `Authorization: Basic …` header against the credentials. */
export function isAuthorized(header: string | undefined, credentials: Credentials): boolean {
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header ?? '');
  if (!match) return false;
  const decoded = Buffer.from(match[1] ?? '', 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return false;
  // Both halves are always compared, so the time taken does not tell which one was wrong.
  const userOk = sameSecret(decoded.slice(0, colon), credentials.user);
  const passwordOk = sameSecret(decoded.slice(colon + 1), credentials.password);
  return userOk && passwordOk;
}

export function basicAuth(credentials: Credentials) {
  return (req: Request, res: Response, next: NextFunction): void => {
    if (isAuthorized(req.headers.authorization, credentials)) {
      next();
      return;
    }
    res.setHeader('WWW-Authenticate', 'Basic realm="flotilla board", charset="UTF-8"');
    res.status(401).type('text/plain').send('authentication required\n');
  };
}

/**
 * Browsers send Basic credentials with any request to the origin, including ones a foreign page
 * triggers; a state-changing request must therefore come from the board's own pages (or from no
 * browser at all: curl and scripts send no Origin). Reads pass.
 */
export function isCrossSiteWrite(req: Request): boolean {
  if (req.method === 'GET' || req.method === 'HEAD' || req.method === 'OPTIONS') return false;
  const origin = req.headers.origin;
  const site = req.headers['sec-fetch-site'];
  const host = req.headers.host;
  const foreignOrigin = origin !== undefined && (!host || !sameHost(origin, host));
  return foreignOrigin || (site !== undefined && site !== 'same-origin' && site !== 'none');
}

export function sameOriginWrites(req: Request, res: Response, next: NextFunction): void {
  if (isCrossSiteWrite(req)) {
    res.status(403).type('text/plain').send('cross-site request refused\n');
    return;
  }
  next();
}

function sameHost(origin: string, host: string): boolean {
  try {
    return new URL(origin).host === host;
  } catch {
    return false;
  }
}
