import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/shared/config.js';
import { isFlotillaError } from '../../src/shared/errors.js';

describe('lock settings (docs/RECOVERY.md)', () => {
  it.each([
    [
      'defaults: recovery in 7.5–12.5 s',
      {},
      { lockMs: 10_000, lockRenewMs: 2_500, stalledIntervalMs: 2_500 },
    ],
    [
      'a longer lock scales renewal and checks',
      { FLOTILLA_LOCK_MS: '30000' },
      { lockMs: 30_000, lockRenewMs: 7_500, stalledIntervalMs: 7_500 },
    ],
    [
      'each can be set',
      { FLOTILLA_LOCK_MS: '30000', FLOTILLA_LOCK_RENEW_MS: '15000', FLOTILLA_STALLED_INTERVAL_MS: '30000' },
      { lockMs: 30_000, lockRenewMs: 15_000, stalledIntervalMs: 30_000 },
    ],
  ])('%s', (_name, env, expected) => {
    expect(loadConfig(env)).toMatchObject(expected);
  });

  it('refuses a renewal that does not come before the lock expires', () => {
    let caught: unknown;
    try {
      loadConfig({ FLOTILLA_LOCK_MS: '5000', FLOTILLA_LOCK_RENEW_MS: '5000' });
    } catch (error) {
      caught = error;
    }
    expect(isFlotillaError(caught) && caught.code).toBe('usage');
    expect(String((caught as Error).message)).toMatch(
      /FLOTILLA_LOCK_RENEW_MS \(5000\) must be less than FLOTILLA_LOCK_MS \(5000\)/,
    );
  });
});

describe('FLOTILLA_MONITOR', () => {
  it.each(['auto', 'inotify', 'watchman', 'off'])('takes %s', (value) => {
    expect(() => loadConfig({ FLOTILLA_MONITOR: value })).not.toThrow();
  });

  it('refuses a monitor it does not know, naming the variable', () => {
    let caught: unknown;
    try {
      loadConfig({ FLOTILLA_MONITOR: 'fswatch' });
    } catch (error) {
      caught = error;
    }
    expect(isFlotillaError(caught) && caught.code).toBe('usage');
    expect(String((caught as Error).message)).toMatch(/FLOTILLA_MONITOR/);
  });
});

describe('FLOTILLA_MAX_OUTPUT', () => {
  it.each([
    ['unset: no cap', undefined, undefined],
    ['500MB', '500MB', 500 * 1024 ** 2],
    ['2GB', '2GB', 2 * 1024 ** 3],
    ['a number of bytes', '1048576', 1024 ** 2],
    ['1.5 GiB, spaced', '1.5 GiB', 1.5 * 1024 ** 3],
    ['lower case, no B', '64m', 64 * 1024 ** 2],
  ])('%s', (_name, value, bytes) => {
    const config = loadConfig(value === undefined ? {} : { FLOTILLA_MAX_OUTPUT: value });
    expect(config.maxOutputBytes).toBe(bytes);
  });

  it.each(['lots', '0', '-5MB', '5 PB', ''])('refuses %j, naming the variable and the form', (value) => {
    let caught: unknown;
    try {
      loadConfig({ FLOTILLA_MAX_OUTPUT: value });
    } catch (error) {
      caught = error;
    }
    expect(isFlotillaError(caught) && caught.code).toBe('usage');
    expect(String((caught as Error).message)).toMatch(
      /FLOTILLA_MAX_OUTPUT: expected a size such as 500MB, 2GB or a number of bytes/,
    );
  });
});
