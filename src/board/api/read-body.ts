import express, { type Request, type Response } from 'express';
import { API_ERROR_CODES, ApiError } from './errors.js';

/**
 * A request body, at most MAX_BODY_BYTES: a mission file is a few kilobytes and a 1,000-task
 * mission about 300 KB, so a mebibyte holds any real mission and bounds what one request can make
 * the board hold in memory.
 */
export const MAX_BODY_BYTES = 1024 * 1024;

export const JSON_TYPES = ['application/json'] as const;
/** application/yaml is RFC 9512's; the others are what tools sent before it. */
export const YAML_TYPES = ['application/yaml', 'application/x-yaml', 'text/yaml', 'text/x-yaml'] as const;

export type BodyKind = 'json' | 'yaml';

function mediaType(req: Request): { type: string; charset?: string } {
  const [type = '', ...params] = (req.headers['content-type'] ?? '').split(';');
  const charset = params
    .map((param) => /^\s*charset\s*=\s*"?([^";\s]+)"?\s*$/i.exec(param)?.[1])
    .find((value) => value !== undefined);
  return { type: type.trim().toLowerCase(), ...(charset ? { charset: charset.toLowerCase() } : {}) };
}

function kindOf(type: string, accepted: readonly BodyKind[]): BodyKind | undefined {
  if (accepted.includes('json') && (JSON_TYPES as readonly string[]).includes(type)) return 'json';
  if (accepted.includes('yaml') && (YAML_TYPES as readonly string[]).includes(type)) return 'yaml';
  return undefined;
}

const raw = express.raw({ type: () => true, limit: MAX_BODY_BYTES });

/**
 * The body's text, read only once its content type is one of `accepted` (415 otherwise), at most
 * MAX_BODY_BYTES (413 beyond), decoded as UTF-8 (400 if it is not).
 */
export function readBody(
  req: Request,
  res: Response,
  accepted: readonly BodyKind[],
): Promise<{ kind: BodyKind; text: string }> {
  const { type, charset } = mediaType(req);
  const kind = kindOf(type, accepted);
  if (!kind || (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8')) {
    const names = [
      ...(accepted.includes('json') ? JSON_TYPES : []),
      ...(accepted.includes('yaml') ? YAML_TYPES : []),
    ];
    const got = type ? `${type}${charset ? `; charset=${charset}` : ''}` : 'no Content-Type';
    const message = `expected Content-Type ${names.join(', ')} (UTF-8), got ${got}`;
    return Promise.reject(new ApiError(415, API_ERROR_CODES.unsupportedType, message));
  }
  return new Promise((resolve, reject) => {
    raw(req, res, (error?: unknown) => {
      if (error) {
        reject(error);
        return;
      }
      const bytes: unknown = req.body;
      try {
        const text = Buffer.isBuffer(bytes) ? new TextDecoder('utf-8', { fatal: true }).decode(bytes) : '';
        resolve({ kind, text });
      } catch {
        reject(new ApiError(400, API_ERROR_CODES.badRequest, 'the body is not valid UTF-8'));
      }
    });
  });
}

/** JSON.parse with a 400 in the API's words; the parser's own message says where it stopped. */
export function parseJsonBody(text: string): unknown {
  if (text.trim() === '')
    throw new ApiError(400, API_ERROR_CODES.malformedJson, 'the body is empty (expected JSON)');
  try {
    return JSON.parse(text);
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    throw new ApiError(400, API_ERROR_CODES.malformedJson, `the body is not JSON: ${why}`);
  }
}
