import { describe, expect, it } from 'vitest';
import { type AuthReply, checkAuth, decideAuth } from '../../../../src/workers/agent/adapters/auth-check.js';
import { adapter } from '../../../helpers/factories.js';

const cli = adapter({
  cli: 'x',
  config: { auth_error_patterns: ['Please run x login'], rate_limit_patterns: ['slow down'] },
});
const reply = (exitCode: number | null, output: string, extra: Partial<AuthReply> = {}): AuthReply => ({
  exitCode,
  timedOut: false,
  output,
  ...extra,
});

describe('decideAuth', () => {
  it.each([
    [
      'exit 0: logged in, first said line',
      reply(0, 'WARNING: tmp\nAPI key: X_KEY\n'),
      'logged-in',
      'API key: X_KEY',
    ],
    [
      'exit 0 but an auth pattern matched',
      reply(0, 'Please run x login'),
      'not-logged-in',
      'Please run x login',
    ],
    [
      'exit 1 with the CLI’s own words',
      reply(1, 'Not logged in. Run x auth login.'),
      'not-logged-in',
      'Not logged in. Run x auth login.',
    ],
    ['exit 1 without a word', reply(1, ''), 'not-logged-in', 'the check exited with code 1'],
    [
      'a rate limit proves the key was accepted',
      reply(1, 'slow down please'),
      'logged-in',
      'slow down please',
    ],
    ['timed out', reply(null, '', { timedOut: true }), 'unknown', 'the check did not answer in time'],
    ['could not start', reply(null, '', { spawnError: 'ENOENT' }), 'unknown', 'cannot start: ENOENT'],
  ])('%s', (_name, input, state, message) => {
    expect(decideAuth(cli, input)).toEqual({ state, message });
  });
});

describe('checkAuth', () => {
  it('says nothing was checked when the adapter has no auth_check_command', async () => {
    expect(await checkAuth(cli)).toEqual({
      state: 'not-checked',
      message: 'the adapter has no auth_check_command',
    });
  });

  it('runs the command without a shell in an empty folder', async () => {
    const pwd = adapter({
      cli: 'p',
      config: {
        auth_check_command: [
          'node',
          '-e',
          'console.log(require("fs").readdirSync(".").length, process.env.PWD)',
        ],
      },
    });
    const check = await checkAuth(pwd);
    expect(check.state).toBe('logged-in');
    expect(check.message).toMatch(/^0 \/.*flotilla-auth-/);
  });
});
