import { describe, expect, it } from 'vitest';
import {
  AUTH_GIVE_BACK_MS,
  DEFAULT_COOLDOWN_MS,
  decideReply,
  RATE_LIMIT_GIVE_BACK_MS,
} from '../../../src/workers/stages/reply.js';

describe('decideReply', () => {
  const cliName = 'Claude Code';
  it.each([
    {
      name: 'an ordinary reply',
      reply: null,
      other: false,
      cooldownMs: undefined,
      expected: { action: 'none' },
    },
    {
      name: 'a rate limit, the adapter naming no cooldown',
      reply: { kind: 'rate-limit', message: '429' },
      other: false,
      cooldownMs: undefined,
      expected: { action: 'cool-down', cooldownMs: DEFAULT_COOLDOWN_MS, giveBackMs: RATE_LIMIT_GIVE_BACK_MS },
    },
    {
      name: 'a rate limit with a short cooldown comes back when the CLI has rested',
      reply: { kind: 'rate-limit', message: '429' },
      other: true,
      cooldownMs: 2_000,
      expected: { action: 'cool-down', cooldownMs: 2_000, giveBackMs: 2_000 },
    },
    {
      name: 'a login problem while another CLI can take the job',
      reply: { kind: 'auth', message: 'Please run /login' },
      other: true,
      cooldownMs: undefined,
      expected: { action: 'hand-over', giveBackMs: AUTH_GIVE_BACK_MS },
    },
    {
      name: 'a login problem and nobody else',
      reply: { kind: 'auth', message: 'Please run /login' },
      other: false,
      cooldownMs: undefined,
      expected: { action: 'fail', error: 'Claude Code: Please run /login' },
    },
  ] as const)('$name', ({ reply, other, cooldownMs, expected }) => {
    expect(
      decideReply(reply, { cliName, otherHostCanServe: other, ...(cooldownMs ? { cooldownMs } : {}) }),
    ).toEqual(expected);
  });
});
