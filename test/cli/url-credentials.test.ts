import { generateKeyPairSync } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MissionStatusJson } from '../../src/shared/contracts.js';
import { indent, SIM_ADAPTERS, SIM_BIN, sim } from '../helpers/flotilla.js';
import { getFreePort } from '../helpers/free-port.js';
import { type GitHttpServer, startGitHttpServer } from '../helpers/git-http-server.js';
import { type RedisHandle, startRedis, uniquePrefix } from '../helpers/redis-server.js';
import {
  BIN_BUILDER,
  BIN_REVIEWER,
  type CliRun,
  HOST_ADAPTERS,
  lastJson,
  runFlotilla,
  startReadyWorker,
  stopAllWorkers,
} from '../helpers/worker-process.js';

/**
 * A mission whose workspace is `http://deploy:<token>@host/repo.git`, as people paste it, on a
 * real smart-HTTP git server on loopback that refuses requests without that credential. After
 * `flotilla run` (its hosts in the submitting process) the mission is done, and the token is
 * nowhere: not in any key under the mission's Redis prefix, the status JSON, the CLI's output,
 * the report (every prompt and result), the receipt, or any file of the hosts (caches, checkouts,
 * prompt files). A worker host in another process authenticates with its own credential helper.
 * The error when the repository's host cannot be reached names the URL without the token.
 */

const TOKEN = 'tok-5d1e8b7c3a9f40e2b6c4';
const BASIC = Buffer.from(`deploy:${TOKEN}`).toString('base64');

let dir: string;
let redis: RedisHandle;
let server: GitHttpServer;
let signingKey: string;

/** The environment a person's shell would give flotilla: sim agents on PATH, a home of its own. */
function env(name: string, prefix: string): Record<string, string> {
  return {
    PATH: `${SIM_BIN}:${process.env.PATH ?? ''}`,
    FLOTILLA_HOME: join(dir, name, 'home'),
    XDG_CACHE_HOME: join(dir, name, 'xdg-cache'),
    FLOTILLA_ADAPTERS: SIM_ADAPTERS,
    FLOTILLA_SIGNING_KEY: signingKey,
    FLOTILLA_PREFIX: prefix,
    // Every log line a host can write, so a leak in any of them shows in stderr.
    LOG_LEVEL: 'debug',
  };
}

function mission(workspace: string): string {
  return [
    'goal: token mission',
    `workspace: ${workspace}`,
    'defaults: { max_attempts: 3, backoff: 100ms }',
    'tasks:',
    '  - id: one',
    '    title: one',
    '    critic: true',
    // The checkout's remote as a criterion prints it: stored in the audit trail and fed back into the retry's prompt.
    '    exit_criteria: ["git remote -v && git config --get remote.origin.url && test -f a.txt"]',
    '    description: |',
    indent(sim('- fail_until_attempt: 2\n- write: {path: a.txt, content: "a\\n"}')),
  ].join('\n');
}

async function writeMission(name: string, workspace: string): Promise<string> {
  // Apart from the folders searched for the token: the mission file holds it, as the user wrote it.
  const folder = join(dir, 'missions', name);
  await mkdir(folder, { recursive: true });
  const file = join(folder, 'mission.yaml');
  await writeFile(file, mission(workspace));
  return file;
}

/** Every value under `prefix`, read by its type (GET, HGETALL, LRANGE, SMEMBERS, ZRANGE, XRANGE) and as DUMP. */
async function everythingUnder(prefix: string): Promise<{ keys: string[]; text: string }> {
  const client = new Redis(redis.url);
  try {
    const keys: string[] = [];
    let cursor = '0';
    do {
      const [next, batch] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      keys.push(...batch);
      cursor = next;
    } while (cursor !== '0');
    const parts: string[] = [];
    for (const key of keys) {
      parts.push(key);
      const type = await client.type(key);
      if (type === 'string') parts.push((await client.getBuffer(key))?.toString('latin1') ?? '');
      else if (type === 'hash') parts.push(JSON.stringify(await client.hgetall(key)));
      else if (type === 'list') parts.push(JSON.stringify(await client.lrange(key, 0, -1)));
      else if (type === 'set') parts.push(JSON.stringify(await client.smembers(key)));
      else if (type === 'zset') parts.push(JSON.stringify(await client.zrange(key, 0, -1, 'WITHSCORES')));
      else if (type === 'stream') parts.push(JSON.stringify(await client.xrange(key, '-', '+')));
      parts.push((await client.dumpBuffer(key))?.toString('latin1') ?? '');
    }
    return { keys, text: parts.join('\n') };
  } finally {
    await client.quit();
  }
}

/** Every file under `root` (recursively), with its bytes as text. */
async function filesUnder(root: string): Promise<Array<{ path: string; text: string }>> {
  const entries = await readdir(root, { recursive: true, withFileTypes: true }).catch(() => []);
  const files: Array<{ path: string; text: string }> = [];
  for (const entry of entries) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    files.push({ path, text: (await readFile(path)).toString('latin1') });
  }
  return files;
}

function expectNoToken(what: string, text: string): void {
  expect(text.includes(TOKEN), `${what} holds the token`).toBe(false);
  expect(text.includes(BASIC), `${what} holds the Basic credential`).toBe(false);
}

function output(run: CliRun): string {
  return `${run.stdout}\n${run.stderr}`;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'flotilla-urlcred-cli-'));
  redis = await startRedis();
  server = await startGitHttpServer(join(dir, 'served'), {
    credential: { username: 'deploy', password: TOKEN },
  });
  await server.createRepo('repo', { seed: { 'README.md': 'hello\n' } });
  signingKey = join(dir, 'signing.pem');
  const keys = generateKeyPairSync('ed25519');
  await writeFile(signingKey, keys.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
}, 60_000);

afterAll(async () => {
  await stopAllWorkers();
  await server?.stop();
  await redis?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe('a token in a workspace URL', () => {
  it('flotilla run: the mission is done on the in-memory credential and the token is nowhere', async () => {
    const prefix = uniquePrefix();
    const cluster = { redisUrl: redis.url, prefix };
    const file = await writeMission('run', server.url('repo', `deploy:${TOKEN}`));
    const run = await runFlotilla(cluster, ['run', file, '--json', '--adapters', SIM_ADAPTERS], {
      env: env('run', prefix),
      timeoutMs: 180_000,
    });
    const final = lastJson<MissionStatusJson>(run);
    expect(final.status, run.stderr).toBe('done');
    expect(final.tasks).toMatchObject([{ id: 'one', status: 'completed', attempts: 2 }]);
    // Stored and shown without the password; the username stays, for a credential helper to answer.
    expect(final.workspace).toBe(server.url('repo', 'deploy'));
    expectNoToken('run output', output(run));
    const warnings = run.stderr.split('\n').filter((line) => line.startsWith('warning: '));
    expect(warnings).toEqual([
      expect.stringMatching(
        /^warning: workspace http:\/\/deploy@127\.0\.0\.1:\d+\/repo\.git: the password in its URL was removed .* credential helper or GIT_ASKPASS/,
      ),
    ]);
    // The hosts did authenticate: every request after the first carried the credential.
    expect(server.seen).toContain(`Basic ${BASIC}`);

    const stored = await everythingUnder(prefix);
    expect(stored.keys.length).toBeGreaterThan(10);
    expect(stored.text).toContain(server.url('repo', 'deploy'));
    expectNoToken('Redis', stored.text);

    const status = await runFlotilla(cluster, ['status', final.id, '--json'], { env: env('run', prefix) });
    expect(lastJson<MissionStatusJson>(status).workspace).toBe(server.url('repo', 'deploy'));
    const reportDir = join(dir, 'run', 'report');
    const report = await runFlotilla(cluster, ['report', final.id, '--out', reportDir], {
      env: env('run', prefix),
    });
    const receipt = await runFlotilla(cluster, ['receipt', final.id], { env: env('run', prefix) });
    expect(receipt.exitCode, receipt.stderr).toBe(0);
    expect(JSON.parse(receipt.stdout).mission.repo).toBe(server.url('repo', 'deploy'));
    for (const shown of [status, report, receipt]) expectNoToken('a command’s output', output(shown));

    // The report holds every attempt's prompt (the retry's with the criteria output) and result.
    const reported = await filesUnder(reportDir);
    const prompts = reported.filter((f) => /PROMPT|prompt/.test(f.path));
    expect(prompts.length).toBeGreaterThanOrEqual(2);
    expect(reported.map((f) => f.text).join('\n')).toContain('PREVIOUS ATTEMPT FAILED');
    for (const f of reported) expectNoToken(f.path, f.text);
    // The hosts' caches, checkouts and prompt files, and the submitter's cache.
    const files = await filesUnder(join(dir, 'run'));
    expect(files.some((f) => f.path.endsWith('-PROMPT.md'))).toBe(true);
    for (const f of files) expectNoToken(f.path, f.text);
  }, 240_000);

  it('flotilla submit to a host that cannot be reached: the error names the URL without the token', async () => {
    const prefix = uniquePrefix();
    const port = await getFreePort();
    const file = await writeMission('unreachable', `http://deploy:${TOKEN}@127.0.0.1:${port}/repo.git`);
    const run = await runFlotilla({ redisUrl: redis.url, prefix }, ['submit', file], {
      env: env('unreachable', prefix),
    });
    expect(run.exitCode, output(run)).toBe(1);
    expect(run.stderr).toContain(
      `git clone --no-checkout --no-tags --quiet -- http://deploy@127.0.0.1:${port}/repo.git`,
    );
    expectNoToken('submit output', output(run));
    expect((await everythingUnder(prefix)).keys).toEqual([]);
  });

  it('flotilla submit with hosts elsewhere: a host authenticates with its own credential helper', async () => {
    const prefix = uniquePrefix();
    const cluster = { redisUrl: redis.url, prefix };
    // The host's machine: a HOME whose git config names a credential helper holding the token.
    const hostHome = join(dir, 'elsewhere', 'host-home');
    await mkdir(hostHome, { recursive: true });
    await writeFile(join(hostHome, '.git-credentials'), `http://deploy:${TOKEN}@127.0.0.1:${server.port}\n`, {
      mode: 0o600,
    });
    await writeFile(join(hostHome, '.gitconfig'), '[credential]\n\thelper = store\n');
    const worker = await startReadyWorker(cluster, {
      hostId: 'elsewhere-1',
      home: join(dir, 'elsewhere', 'flotilla-home'),
      path: [BIN_BUILDER, BIN_REVIEWER],
      adaptersDir: HOST_ADAPTERS,
      env: { HOME: hostHome, XDG_CONFIG_HOME: join(hostHome, '.config'), LOG_LEVEL: 'debug' },
    });
    const file = await writeMission('elsewhere', server.url('repo', `deploy:${TOKEN}`));
    const submitted = await runFlotilla(cluster, ['submit', file, '--wait', '--json'], {
      env: { ...env('elsewhere', prefix), FLOTILLA_ADAPTERS: HOST_ADAPTERS },
      timeoutMs: 180_000,
    });
    const final = lastJson<MissionStatusJson>(submitted);
    expect(final.status, `${submitted.stderr}\n${worker.lines.map((l) => l.raw).join('\n')}`).toBe('done');
    expect(final.workspace).toBe(server.url('repo', 'deploy'));
    expect(submitted.stderr).toMatch(
      /^warning: workspace http:\/\/deploy@127\.0\.0\.1:\d+\/repo\.git: the password/m,
    );
    expectNoToken('submit output', output(submitted));
    expectNoToken('worker log', worker.lines.map((l) => l.raw).join('\n'));
    expectNoToken('Redis', (await everythingUnder(prefix)).text);
    await worker.stop();
  }, 240_000);
});
