import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Adapter } from '../../../shared/adapter.js';
import { classifyReply } from '../reply-class.js';
import { spawnProcess } from '../spawn.js';

/**
 * `flotilla detect --check-auth`: whether each installed CLI is logged in, found with the
 * adapter's `auth_check_command` (the cheapest call that CLI allows: a status subcommand where it
 * has one, else the smallest prompt), so an operator learns it before the first mission.
 */
export type AuthState = 'logged-in' | 'not-logged-in' | 'unknown' | 'not-checked';

export interface AuthCheck {
  readonly state: AuthState;
  /** The CLI's own words (its first relevant line), or why nothing was checked. */
  readonly message: string;
}

export interface AuthReply {
  readonly exitCode: number | null;
  readonly timedOut: boolean;
  readonly output: string;
  /** The program could not start. */
  readonly spawnError?: string;
}

/** A check waits this long: the prompt-based checks start the CLI and make one model call. */
export const AUTH_CHECK_TIMEOUT_MS = 90_000;

/** Reads a check's reply: a pure function, so each case is a table row. */
export function decideAuth(adapter: Adapter, reply: AuthReply): AuthCheck {
  if (reply.spawnError) return { state: 'unknown', message: `cannot start: ${reply.spawnError}` };
  if (reply.timedOut) return { state: 'unknown', message: 'the check did not answer in time' };
  const classified = classifyReply(adapter, reply.output);
  if (classified?.kind === 'auth') return { state: 'not-logged-in', message: classified.message };
  if (reply.exitCode === 0) {
    // A rate limit proves the credentials were accepted.
    return { state: 'logged-in', message: classified?.message ?? firstLine(reply.output) };
  }
  if (classified?.kind === 'rate-limit') return { state: 'logged-in', message: classified.message };
  return {
    state: 'not-logged-in',
    message: firstLine(reply.output) || `the check exited with code ${reply.exitCode ?? 'by signal'}`,
  };
}

export async function checkAuth(
  adapter: Adapter,
  options: { readonly timeoutMs?: number } = {},
): Promise<AuthCheck> {
  const [file, ...args] = adapter.config.auth_check_command ?? [];
  if (!file) return { state: 'not-checked', message: 'the adapter has no auth_check_command' };
  // An empty folder: a prompt-based check must not read (or write) the operator's directory.
  const cwd = await mkdtemp(join(tmpdir(), 'flotilla-auth-'));
  try {
    const outcome = await spawnProcess({
      command: file,
      args,
      cwd,
      timeoutMs: options.timeoutMs ?? AUTH_CHECK_TIMEOUT_MS,
      ...(adapter.config.env ? { env: adapter.config.env } : {}),
    });
    return decideAuth(adapter, {
      exitCode: outcome.exitCode,
      timedOut: outcome.timedOut,
      output: `${outcome.stdout}\n${outcome.stderr}`,
      ...(outcome.spawnError ? { spawnError: outcome.spawnError } : {}),
    });
  } finally {
    await rm(cwd, { recursive: true, force: true });
  }
}

/** The first line that says something: CLIs print warnings (Codex about /tmp) before their answer. */
function firstLine(text: string): string {
  const lines = text.split('\n').map((line) => line.trim());
  const said = lines.find((line) => line && !/^warn(ing)?\b/i.test(line)) ?? lines.find(Boolean) ?? '';
  return said.slice(0, 300);
}
