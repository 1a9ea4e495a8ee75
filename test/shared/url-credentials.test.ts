import { describe, expect, it } from 'vitest';
import { createHumanLogger } from '../../src/cli/human-log.js';
import { FlotillaError } from '../../src/shared/errors.js';
import {
  hasUrlCredential,
  redactUrlCredentials,
  splitUrlCredential,
} from '../../src/shared/url-credentials.js';

const TOKEN = 'ghp_0123456789abcdefABCDEF0123456789abcd';

describe('splitUrlCredential: the secret leaves a workspace URL, the rest stays', () => {
  it.each([
    // URL given → what is stored, and what git is given in memory
    [
      'https://deploy:s3cret@host/r.git',
      'https://deploy@host/r.git',
      { username: 'deploy', password: 's3cret' },
    ],
    [`https://${TOKEN}@github.com/o/r.git`, 'https://github.com/o/r.git', { username: TOKEN, password: '' }],
    [
      `https://${TOKEN}:x-oauth-basic@github.com/o/r.git`,
      'https://github.com/o/r.git',
      { username: TOKEN, password: 'x-oauth-basic' },
    ],
    [
      'https://oauth2:glpat-abcdefghij@gitlab.com/o/r.git',
      'https://oauth2@gitlab.com/o/r.git',
      { username: 'oauth2', password: 'glpat-abcdefghij' },
    ],
    ['https://:tok@host:8443/r.git', 'https://host:8443/r.git', { username: '', password: 'tok' }],
    ['http://u:p%40ss@127.0.0.1:9/r.git', 'http://u@127.0.0.1:9/r.git', { username: 'u', password: 'p@ss' }],
    // an unencoded @ in the password: the userinfo runs to the last @
    ['https://u:p@ss@host/r.git', 'https://u@host/r.git', { username: 'u', password: 'p@ss' }],
    [
      'https://a1b2c3d4e5f6a7b8c9d0e1f2@dev.example/r.git',
      'https://dev.example/r.git',
      { username: 'a1b2c3d4e5f6a7b8c9d0e1f2', password: '' },
    ],
  ])('%s → %s', (given, stored, credential) => {
    expect(splitUrlCredential(given)).toEqual({ url: stored, credential });
    expect(hasUrlCredential(stored)).toBe(false);
  });

  it.each([
    'https://deploy@host/r.git',
    'ssh://git@github.com/o/r.git',
    'git@github.com:o/r.git',
    'https://github.com/o/r.git',
    '/home/me/repo',
    'file:///srv/r.git',
    'https://x-access-token@github.com/o/r.git',
  ])('%s has no secret and stays as it is', (url) => {
    expect(splitUrlCredential(url)).toEqual({ url });
  });
});

describe('redactUrlCredentials: one function for every text flotilla shows, stores or logs', () => {
  it.each([
    [
      'git clone --no-checkout -- http://deploy:s3cret@127.0.0.1:1/r.git /tmp/x: fatal: unable to access',
      'git clone --no-checkout -- http://deploy:***@127.0.0.1:1/r.git /tmp/x: fatal: unable to access',
    ],
    [`fetch 'https://${TOKEN}@github.com/o/r.git' failed`, `fetch 'https://***@github.com/o/r.git' failed`],
    [
      'Redis is not reachable at redis://:pw@10.0.0.1:6379 (ECONNREFUSED)',
      'Redis is not reachable at redis://:***@10.0.0.1:6379 (ECONNREFUSED)',
    ],
    ['{"repo":"https://u:p@ss@host/r.git","n":1}', '{"repo":"https://u:***@host/r.git","n":1}'],
    ['two: a://x:1@h/ and b://y:2@k/', 'two: a://x:***@h/ and b://y:***@k/'],
    [
      'https://deploy@host/r.git and mail me@example.com',
      'https://deploy@host/r.git and mail me@example.com',
    ],
    ['no url here', 'no url here'],
  ])('%s', (text, shown) => {
    expect(redactUrlCredentials(text)).toBe(shown);
  });

  it('masks a FlotillaError message, whoever wrote it', () => {
    const error = new FlotillaError('git/failed', `git push https://deploy:s3cret@host/r.git: rejected`);
    expect(error.message).toBe('git push https://deploy:***@host/r.git: rejected');
  });

  it('masks a log line: message, fields and error text alike', () => {
    const lines: string[] = [];
    const { logger } = createHumanLogger((line) => lines.push(line), 'info');
    logger.warn(
      {
        repo: 'https://deploy:s3cret@host/r.git',
        err: new Error(`clone https://${TOKEN}@github.com/o/r.git`),
      },
      'cannot reach https://deploy:s3cret@host/r.git',
    );
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('https://deploy:***@host/r.git');
    expect(lines[0]).not.toContain('s3cret');
    expect(lines[0]).not.toContain(TOKEN);
  });
});
