import { describe, expect, it } from 'vitest';
import { decideAuth, isAuthorized, isLoopback } from '../../src/board/auth.js';
import { FlotillaError } from '../../src/shared/errors.js';

const basic = (user: string, password: string) =>
  `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

describe('isLoopback', () => {
  it.each([
    ['127.0.0.1', true],
    ['127.1.2.3', true],
    ['localhost', true],
    ['LOCALHOST', true],
    ['::1', true],
    ['[::1]', true],
    ['0.0.0.0', false],
    ['::', false],
    ['192.168.1.10', false],
    ['board.example.com', false],
    ['127.0.0.1.example.com', false],
  ])('%s → %s', (host, expected) => {
    expect(isLoopback(host)).toBe(expected);
  });
});

describe('decideAuth', () => {
  it('allows loopback without credentials', () => {
    expect(decideAuth({ host: '127.0.0.1' })).toBeNull();
    expect(decideAuth({ host: 'localhost', user: '', password: '' })).toBeNull();
  });

  it('requires credentials when they are set, on any host', () => {
    expect(decideAuth({ host: '0.0.0.0', user: 'ops', password: 's3cret' })).toEqual({
      user: 'ops',
      password: 's3cret',
    });
    expect(decideAuth({ host: '127.0.0.1', user: 'ops', password: 's3cret' })).not.toBeNull();
  });

  it('refuses a non-loopback bind without credentials, as a usage error', () => {
    const attempt = () => decideAuth({ host: '0.0.0.0' });
    expect(attempt).toThrow(FlotillaError);
    expect(attempt).toThrow(/refusing to listen on 0\.0\.0\.0 without authentication.*FLOTILLA_BOARD_USER/);
    try {
      attempt();
    } catch (error) {
      expect((error as FlotillaError).code).toBe('usage');
    }
  });

  it('refuses half-set credentials even on loopback', () => {
    expect(() => decideAuth({ host: '127.0.0.1', user: 'ops' })).toThrow(
      /both FLOTILLA_BOARD_USER and FLOTILLA_BOARD_PASSWORD/,
    );
    expect(() => decideAuth({ host: '127.0.0.1', password: 'x' })).toThrow(/only the password/);
  });
});

describe('isAuthorized', () => {
  const credentials = { user: 'ops', password: 'pa:ss wörd' };

  it.each([
    [basic('ops', 'pa:ss wörd'), true],
    [`basic ${Buffer.from('ops:pa:ss wörd').toString('base64')}`, true],
    [basic('ops', 'wrong'), false],
    [basic('other', 'pa:ss wörd'), false],
    [basic('ops', ''), false],
    ['Bearer abc', false],
    ['Basic !!!', false],
    [`Basic ${Buffer.from('no-colon').toString('base64')}`, false],
    [undefined, false],
  ])('%s → %s', (header, expected) => {
    expect(isAuthorized(header, credentials)).toBe(expected);
  });
});
