import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Job payloads and mission specs are signed with FLOTILLA_SECRET so a host runs only what a
 * producer holding the secret enqueued: anyone who can write to Redis could otherwise make hosts
 * run commands. The signature covers the canonical JSON of everything but `sig` itself.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([key, v]) => key !== 'sig' && v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([key, v]) => `${JSON.stringify(key)}:${canonicalJson(v)}`).join(',')}}`;
}

export function signPayload(payload: unknown, secret: string): string {
  return createHmac('sha256', secret).update(canonicalJson(payload)).digest('hex');
}

export function withSignature<T extends object>(
  payload: T,
  secret: string | undefined,
): T & { sig?: string } {
  return secret ? { ...payload, sig: signPayload(payload, secret) } : { ...payload };
}

/** True when the secret is unset (signing off) or the signature matches. */
export function verifyPayload(payload: object, secret: string | undefined): boolean {
  if (!secret) return true;
  const sig = (payload as { sig?: unknown }).sig;
  if (typeof sig !== 'string') return false;
  const expected = Buffer.from(signPayload(payload, secret), 'hex');
  const given = Buffer.from(sig, 'hex');
  return expected.length === given.length && timingSafeEqual(expected, given);
}
