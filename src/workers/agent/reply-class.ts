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
  const watch = new ReplyWatch(adapter);
  for (const line of text.split('\n')) watch.line(line);
  return classifyWatched(adapter, [watch], spawnError);
}

/**
 * The first line that matches the adapter's login patterns and the first that matches its rate
 * limit patterns, in lines given one at a time: a CLI's output is read as it comes and not kept.
 */
export class ReplyWatch {
  private readonly auth: readonly RegExp[];
  private readonly rate: readonly RegExp[];
  authLine: string | null = null;
  rateLine: string | null = null;

  constructor(adapter: Adapter) {
    this.auth = compile([...(adapter.config.auth_error_patterns ?? []), ...DEFAULT_AUTH]);
    this.rate = compile([...(adapter.config.rate_limit_patterns ?? []), ...DEFAULT_RATE_LIMIT]);
  }

  line(text: string): void {
    if (this.authLine !== null && this.rateLine !== null) return;
    const trimmed = text.trim();
    if (!trimmed) return;
    if (this.authLine === null && this.auth.some((re) => re.test(trimmed)))
      this.authLine = trimmed.slice(0, 500);
    if (this.rateLine === null && this.rate.some((re) => re.test(trimmed)))
      this.rateLine = trimmed.slice(0, 500);
  }
}

/**
 * The class of a reply watched in parts, taken in order as if they were one text (the answer, then
 * stderr): a login problem anywhere first, then a rate limit.
 */
export function classifyWatched(
  adapter: Adapter,
  watches: readonly ReplyWatch[],
  spawnError?: string,
): ReplyClass {
  if (spawnError)
    return { kind: 'auth', message: `cannot start ${adapter.config.invoke_command}: ${spawnError}` };
  const auth = watches.find((watch) => watch.authLine !== null)?.authLine;
  if (auth) return { kind: 'auth', message: auth };
  const rate = watches.find((watch) => watch.rateLine !== null)?.rateLine;
  if (rate) return { kind: 'rate-limit', message: rate };
  return null;
}

function compile(patterns: readonly string[]): RegExp[] {
  return patterns.flatMap((p) => {
    try {
      return [new RegExp(p, 'i')];
    } catch {
      return [];
    }
  });
}
