import { describe, expect, it } from 'vitest';
import {
  defaultApiUrl,
  forgeOfHost,
  parseRemoteUrl,
  withoutCredentials,
} from '../../../../src/workers/stages/deliver/remote-url.js';

describe('parseRemoteUrl', () => {
  it.each([
    ['https://github.com/acme/calc.git', { scheme: 'https', host: 'github.com', path: 'acme/calc' }],
    [
      'https://x-access-token:tok@github.com/acme/calc',
      { scheme: 'https', host: 'github.com', path: 'acme/calc' },
    ],
    ['git@github.com:acme/calc.git', { scheme: 'ssh', host: 'github.com', path: 'acme/calc' }],
    [
      'ssh://git@gitlab.example.com:2222/group/sub/calc.git',
      { scheme: 'ssh', host: 'gitlab.example.com', path: 'group/sub/calc' },
    ],
    ['http://127.0.0.1:8080/acme/calc.git/', { scheme: 'http', host: '127.0.0.1:8080', path: 'acme/calc' }],
    ['/srv/git/calc.git', null],
    ['../calc.git', null],
    ['file:///srv/git/calc.git', null],
  ])('%s', (url, expected) => {
    expect(parseRemoteUrl(url)).toEqual(expected);
  });
});

describe('the forge of a host and its API', () => {
  it.each([
    ['github.com', 'github', 'https://api.github.com'],
    ['gitlab.com', 'gitlab', 'https://gitlab.com/api/v4'],
    ['codeberg.org', 'gitea', 'https://codeberg.org/api/v1'],
    ['gitea.example.com', 'gitea', 'https://gitea.example.com/api/v1'],
    ['git.example.com', null, null],
  ])('%s', (host, forge, api) => {
    expect(forgeOfHost(host)).toBe(forge);
    if (forge)
      expect(
        defaultApiUrl(forge as 'github' | 'gitlab' | 'gitea', { scheme: 'ssh', host, path: 'a/b' }),
      ).toBe(api);
  });

  it('puts a GitHub Enterprise Server API under /api/v3 on its own host and scheme', () => {
    expect(defaultApiUrl('github', { scheme: 'http', host: 'ghe.local:8080', path: 'a/b' })).toBe(
      'http://ghe.local:8080/api/v3',
    );
  });
});

it('takes credentials out of every URL in a message', () => {
  expect(withoutCredentials('git push https://u:secret@h/a.git: rejected; see https://tok@h/b')).toBe(
    'git push https://h/a.git: rejected; see https://h/b',
  );
});
