import { afterEach, describe, expect, it, vi } from 'vitest';
import { keepFromChildren, redisUrlSecrets } from '../../../src/workers/agent/private-env.js';
import { childEnv } from '../../../src/workers/agent/spawn.js';

describe('childEnv', () => {
  afterEach(() => vi.unstubAllEnvs());

  it.each([
    'REDIS_URL',
    'REDISCLI_AUTH',
    'REDIS_PASSWORD',
    'FLOTILLA_SECRET',
    'FLOTILLA_SIGNING_KEY',
    'FLOTILLA_BOARD_PASSWORD',
    'FLOTILLA_BOARD_USER',
    'FLOTILLA_API_TOKEN',
    'FLOTILLA_HOME',
  ])('keeps %s from agent CLIs and exit criteria', (name) => {
    vi.stubEnv(name, 'private');
    vi.stubEnv('SOME_TOOL_SETTING', 'kept');
    const env = childEnv(undefined, '/tmp');
    expect(env[name]).toBeUndefined();
    expect(env.SOME_TOOL_SETTING).toBe('kept');
  });

  it('drops any variable that carries a value the host holds, under whatever name', () => {
    keepFromChildren([...redisUrlSecrets('redis://:s3cr%2Ft-pw@10.0.0.5:6380/0'), 'job-secret-value']);
    vi.stubEnv('MY_CACHE_URL', 'redis://:s3cr%2Ft-pw@10.0.0.5:6380/0');
    vi.stubEnv('WRAPPER_PASS', 's3cr/t-pw');
    vi.stubEnv('RAW_PASS', 's3cr%2Ft-pw');
    vi.stubEnv('SIGNED_WITH', 'key=job-secret-value;');
    vi.stubEnv('SOME_TOOL_SETTING', 'kept');
    const env = childEnv(undefined, '/tmp');
    for (const name of ['MY_CACHE_URL', 'WRAPPER_PASS', 'RAW_PASS', 'SIGNED_WITH'])
      expect(env[name]).toBeUndefined();
    expect(env.SOME_TOOL_SETTING).toBe('kept');
  });

  it('takes the password out of a Redis URL, as written and decoded', () => {
    expect(redisUrlSecrets('redis://user:p%40ss@h:1')).toEqual(['redis://user:p%40ss@h:1', 'p%40ss', 'p@ss']);
    expect(redisUrlSecrets('redis://:pw@h:1')).toEqual(['redis://:pw@h:1', 'pw']);
    expect(redisUrlSecrets('redis+cluster://h:1,h:2')).toEqual(['redis+cluster://h:1,h:2']);
    expect(redisUrlSecrets(undefined)).toEqual([]);
  });
});
