import { createHash } from 'node:crypto';

/**
 * Canonical JSON: object keys sorted by code unit, no white space, `undefined` members left out
 * (as JSON.stringify does), so the same value always gives the same bytes and the same hash
 * whichever process wrote it. Numbers must be finite; a NaN would silently become `null`.
 */
export function canonicalJson(value: unknown): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return JSON.stringify(value);
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(`canonical JSON: ${value} is not a finite number`);
      return JSON.stringify(value);
    case 'object': {
      if (Array.isArray(value)) {
        return `[${value.map((item) => (item === undefined ? 'null' : canonicalJson(item))).join(',')}]`;
      }
      const record = value as Record<string, unknown>;
      const members = Object.keys(record)
        .filter((key) => record[key] !== undefined)
        .sort()
        .map((key) => `${JSON.stringify(key)}:${canonicalJson(record[key])}`);
      return `{${members.join(',')}}`;
    }
    default:
      throw new TypeError(`canonical JSON: cannot encode a ${typeof value}`);
  }
}

/** SHA-256 of a string's UTF-8 bytes, as 64 lower-case hex digits. */
export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** The content hash of any JSON value: SHA-256 of its canonical form. */
export function hashJson(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}
