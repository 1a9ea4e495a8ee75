import type { Adapter } from '../../shared/adapter.js';

/**
 * A CLI's reply that is not the agent's fault: a rate limit or quota (the attempt does not count,
 * the CLI cools down) or a login/configuration problem (the host stops advertising the CLI).
 * Adapters list their CLI's own messages; these defaults catch the common HTTP-level ones.
 */
const DEFAULT_RATE_LIMIT = [
  '\\b429\\b',
  'rate[ _-]?limit',
  'quota (exceeded|exhausted)',
  'too many requests',
  'overloaded_error',
];
const DEFAULT_AUTH = [
  'invalid api key',
  'please run /login',
  'not logged in',
  '\\b401\\b',
  'authentication_error',
  'unauthorized',
];

export type ReplyClass = { kind: 'rate-limit' | 'auth'; message: string } | null;

export function classifyReply(adapter: Adapter, text: string, spawnError?: string): ReplyClass {
  if (spawnError)
    return { kind: 'auth', message: `cannot start ${adapter.config.invoke_command}: ${spawnError}` };
  const rate = [...(adapter.config.rate_limit_patterns ?? []), ...DEFAULT_RATE_LIMIT];
  const auth = [...(adapter.config.auth_error_patterns ?? []), ...DEFAULT_AUTH];
  const auth1 = firstMatchingLine(text, auth);
  if (auth1) return { kind: 'auth', message: auth1 };
  const rate1 = firstMatchingLine(text, rate);
  if (rate1) return { kind: 'rate-limit', message: rate1 };
  return null;
}

function firstMatchingLine(text: string, patterns: readonly string[]): string | null {
  const regexes = patterns.flatMap((p) => {
    try {
      return [new RegExp(p, 'i')];
    } catch {
      return [];
    }
  });
  for (const line of text.split('\n')) {
    const trimmed = line.trim();
    if (trimmed && regexes.some((re) => re.test(trimmed))) return trimmed.slice(0, 500);
  }
  return null;
}
