import { afterEach, describe, expect, it, vi } from 'vitest';
import { childEnv } from '../../../src/workers/agent/spawn.js';

describe('childEnv', () => {
  afterEach(() => vi.unstubAllEnvs());

  it.each(['FLOTILLA_SECRET', 'FLOTILLA_SIGNING_KEY', 'FLOTILLA_BOARD_PASSWORD', 'FLOTILLA_BOARD_USER'])(
    'keeps %s from agent CLIs and exit criteria',
    (name) => {
      vi.stubEnv(name, 'private');
      vi.stubEnv('SOME_TOOL_SETTING', 'kept');
      const env = childEnv(undefined, '/tmp');
      expect(env[name]).toBeUndefined();
      expect(env.SOME_TOOL_SETTING).toBe('kept');
    },
  );
});
