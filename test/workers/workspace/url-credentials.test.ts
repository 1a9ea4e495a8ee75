import { chmod, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { isFlotillaError } from '../../../src/shared/errors.js';
import { forgetCredentials, rememberCredential } from '../../../src/shared/remembered-credentials.js';
import { splitUrlCredential } from '../../../src/shared/url-credentials.js';
import { runGit } from '../../../src/workers/workspace/git.js';
import { prepareWorkspace } from '../../../src/workers/workspace/prepare-workspace.js';
import { openRepoCache } from '../../../src/workers/workspace/repo-cache.js';
import { getFreePort } from '../../helpers/free-port.js';
import { type GitHttpServer, startGitHttpServer } from '../../helpers/git-http-server.js';

/**
 * The workers' git with a workspace URL that carried a credential, against a real smart-HTTP
 * server on loopback that refuses requests without it: the credential this process remembered
 * authenticates clone, fetch and push without being in any argument, config file or message;
 * without it, a host's own credential helper or GIT_ASKPASS does; and a failure names no secret.
 */

const TOKEN = 'tok-7f3a9c2e51b84d06a1e9';
const GIVEN = (server: GitHttpServer) => server.url('repo', `deploy:${TOKEN}`);

let dir: string;
let server: GitHttpServer;
let caches = 0;
const cacheDir = () => join(dir, `cache-${++caches}`);

/** Every file under `root` whose bytes contain `needle` (a clone's config, a log, a prompt). */
async function filesContaining(root: string, needle: string): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await readdir(root, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    if ((await readFile(path)).includes(needle)) found.push(path);
  }
  return found;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'flotilla-urlcred-'));
  server = await startGitHttpServer(join(dir, 'served'), {
    credential: { username: 'deploy', password: TOKEN },
  });
  await server.createRepo('repo', { seed: { 'README.md': 'hello\n' } });
});
afterEach(() => forgetCredentials());
afterAll(async () => {
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe('a workspace URL credential kept in memory', () => {
  it('clones, fetches and pushes with it, and writes it nowhere', async () => {
    const { url, credential } = splitUrlCredential(GIVEN(server));
    expect(url).toBe(server.url('repo', 'deploy'));
    rememberCredential(url, credential ?? { username: '', password: '' });
    const where = cacheDir();
    const prepared = await prepareWorkspace({ workspace: url, missionId: 'm1', cacheDir: where });
    expect(prepared.repo).toBe(url);
    const cache = await openRepoCache({ repo: url, cacheDir: where });
    await cache.fetch(['flotilla/m1']);
    expect(await cache.remoteCommit('flotilla/m1')).toBe(prepared.baseCommit);
    // The remote now has the branch: the push authenticated too.
    const listed = await runGit(['ls-remote', 'origin', 'refs/heads/flotilla/m1'], { cwd: cache.dir });
    expect(listed.stdout).toContain(prepared.baseCommit);
    expect(server.seen).toContain(`Basic ${Buffer.from(`deploy:${TOKEN}`).toString('base64')}`);
    expect(await filesContaining(where, TOKEN)).toEqual([]);
    expect(await readFile(join(cache.dir, '.git', 'config'), 'utf8')).toContain(`url = ${url}\n`);
  });

  it('without it, fails naming what to set up and no secret', async () => {
    const url = server.url('repo', 'deploy');
    const error = await openRepoCache({ repo: url, cacheDir: cacheDir() }).catch((e: unknown) => e);
    expect(isFlotillaError(error, 'git/failed')).toBe(true);
    const message = (error as Error).message;
    expect(message).toContain(`git clone --no-checkout --no-tags --quiet -- ${url}`);
    expect(message).toContain('credential helper or GIT_ASKPASS');
    expect(message).not.toContain(TOKEN);
  });

  it('a host without it uses its own git credential helper, or GIT_ASKPASS', async () => {
    const url = server.url('repo', 'deploy');
    const store = join(dir, 'git-credentials');
    await writeFile(store, `http://deploy:${TOKEN}@127.0.0.1:${server.port}\n`, { mode: 0o600 });
    const askpass = join(dir, 'askpass.sh');
    await writeFile(askpass, `#!/bin/sh\nprintf '%s\\n' '${TOKEN}'\n`);
    await chmod(askpass, 0o700);
    const ways: Array<Record<string, string>> = [
      {
        GIT_CONFIG_COUNT: '1',
        GIT_CONFIG_KEY_0: 'credential.helper',
        GIT_CONFIG_VALUE_0: `store --file=${store}`,
      },
      { GIT_ASKPASS: askpass },
    ];
    for (const env of ways) {
      const saved = { ...process.env };
      Object.assign(process.env, env);
      try {
        const cache = await openRepoCache({ repo: url, cacheDir: cacheDir() });
        expect(await cache.remoteCommit('main')).toMatch(/^[0-9a-f]{40}$/);
      } finally {
        for (const key of Object.keys(env)) delete process.env[key];
        Object.assign(process.env, saved);
      }
    }
  });

  it('an unreachable host: the error names the command and the URL without the secret', async () => {
    const port = await getFreePort();
    const given = `http://deploy:${TOKEN}@127.0.0.1:${port}/repo.git`;
    const { url, credential } = splitUrlCredential(given);
    rememberCredential(url, credential ?? { username: '', password: '' });
    const error = await prepareWorkspace({ workspace: url, missionId: 'm2', cacheDir: cacheDir() }).catch(
      (e: unknown) => e,
    );
    expect(isFlotillaError(error, 'git/failed')).toBe(true);
    expect((error as Error).message).toContain(`-- http://deploy@127.0.0.1:${port}/repo.git`);
    expect((error as Error).message).not.toContain(TOKEN);
    // Even a caller that hands git the URL as written gets it masked in the message.
    const raw = await runGit(['clone', '--quiet', '--', given, join(dir, 'raw')]).catch((e: unknown) => e);
    expect((raw as Error).message).toContain(`http://deploy:***@127.0.0.1:${port}/repo.git`);
    expect((raw as Error).message).not.toContain(TOKEN);
    await stat(join(dir, 'raw')).then(
      () => rm(join(dir, 'raw'), { recursive: true, force: true }),
      () => undefined,
    );
  });
});
