import { join } from 'node:path';

/** The CLI installed by the `@anthropic-ai/claude-code` devDependency. */
export const CLAUDE_BIN = join(import.meta.dirname, '../../node_modules/.bin/claude');

/**
 * Arguments that make `claude` answer once and exit: print mode, the JSON result on stdout
 * (`result`, `total_cost_usd`, `usage`, `is_error`), and file edits in its cwd allowed without a
 * prompt. `--dangerously-skip-permissions` / `--permission-mode bypassPermissions` are refused
 * as root unless IS_SANDBOX=1. Add `--model <m>` and `--allowedTools Bash` as needed; the prompt
 * goes on stdin or as the last argument.
 */
export const CLAUDE_HEADLESS_ARGS: readonly string[] = [
  '-p',
  '--output-format',
  'json',
  '--permission-mode',
  'acceptEdits',
];

/**
 * A closed environment for the real CLI (use with execa `extendEnv: false`): a private HOME so
 * the real ~/.claude is neither read nor written, no telemetry, update or other side traffic.
 * Without `baseUrl`/`apiKey` the CLI has no credentials and says it is not logged in.
 */
export function claudeEnv(options: {
  home: string;
  baseUrl?: string;
  apiKey?: string;
  /** CLAUDE_CODE_MAX_RETRIES; the CLI otherwise retries a 401 or 429 for minutes. */
  maxRetries?: number;
}): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: options.home,
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_AUTOUPDATER: '1',
    DISABLE_TELEMETRY: '1',
    DISABLE_ERROR_REPORTING: '1',
    ...(options.baseUrl ? { ANTHROPIC_BASE_URL: options.baseUrl } : {}),
    ...(options.apiKey ? { ANTHROPIC_API_KEY: options.apiKey } : {}),
    ...(options.maxRetries === undefined ? {} : { CLAUDE_CODE_MAX_RETRIES: String(options.maxRetries) }),
  };
}
