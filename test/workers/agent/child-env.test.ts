import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { execa } from 'execa';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { indent, ROOT, SIM_ADAPTERS, SIM_BIN, sim } from '../../helpers/flotilla.js';
import {
  type RedisClusterHandle,
  type RedisHandle,
  startRedis,
  startRedisCluster,
  uniquePrefix,
} from '../../helpers/redis-server.js';
import { startWorker, stopAllWorkers } from '../../helpers/worker-process.js';

/**
 * An agent CLI, its critic and an exit criterion each write their whole environment to a file,
 * under every way a host is configured: `flotilla run` on a Redis with a password, on a Redis
 * Cluster, on its own private Redis, and a `flotilla worker` beside a producer. None of the dumps
 * may hold a value flotilla keeps private — matched on values, not names, so a secret exported
 * under another name is caught too.
 */

const BIN = join(ROOT, 'bin', 'flotilla.js');
const token = () => randomBytes(12).toString('hex');

describe('the environment of every child of a host', () => {
  let dir: string;
  let redis: RedisHandle;
  let cluster: RedisClusterHandle;
  let password: string;
  let signingKey: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'flotilla-child-env-'));
    redis = await startRedis();
    password = token();
    const admin = new Redis(redis.url);
    await admin.config('SET', 'requirepass', password);
    admin.disconnect();
    cluster = await startRedisCluster();
    signingKey = join(dir, 'receipt-key.pem');
    const { privateKey } = generateKeyPairSync('ed25519');
    await writeFile(signingKey, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
  }, 120_000);
  afterAll(async () => {
    await stopAllWorkers();
    await redis?.stop();
    await cluster?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  /** A mission whose builder, critic and exit criterion dump their environments into `out`. */
  async function dumpingMission(name: string): Promise<{ file: string; out: string }> {
    const folder = join(dir, name);
    const out = join(folder, 'dumps');
    await mkdir(join(folder, 'ws'), { recursive: true });
    await mkdir(out, { recursive: true });
    const steps = [
      `- run: [bash, -c, ${JSON.stringify(`env > ${join(out, 'agent.env')}`)}]`,
      `- {run: [bash, -c, ${JSON.stringify(`env > ${join(out, 'critic.env')}`)}], role: reviewer}`,
      '- review: {score: 9}',
    ].join('\n');
    const yaml = [
      'goal: dump the environment',
      'workspace: ./ws',
      'tasks:',
      '  - id: dump',
      '    title: dump',
      '    critic: true',
      `    exit_criteria: [${JSON.stringify(`env > ${join(out, 'criterion.env')}`)}]`,
      '    description: |',
      indent(sim(steps)),
    ].join('\n');
    const file = join(folder, 'mission.yaml');
    await writeFile(file, yaml);
    return { file, out };
  }

  /** The variables every configuration sets, secrets under their own names and under others. */
  function secretEnv(redisUrl: string | undefined, home: string) {
    const secret = token();
    const boardUser = `board-${token()}`;
    const boardPassword = token();
    const apiToken = token();
    const forge = { any: token(), github: token(), gitlab: token(), gitea: token() };
    const env: Record<string, string | undefined> = {
      PATH: `${SIM_BIN}${delimiter}${process.env.PATH ?? ''}`,
      FLOTILLA_HOME: home,
      FLOTILLA_ADAPTERS: SIM_ADAPTERS,
      FLOTILLA_PREFIX: uniquePrefix(),
      FLOTILLA_SIM_STATE_DIR: join(home, 'sim-state'),
      FLOTILLA_SECRET: secret,
      FLOTILLA_SIGNING_KEY: signingKey,
      FLOTILLA_BOARD_USER: boardUser,
      FLOTILLA_BOARD_PASSWORD: boardPassword,
      FLOTILLA_API_TOKEN: apiToken,
      // The tokens delivery opens pull requests with.
      FLOTILLA_FORGE_TOKEN: forge.any,
      GITHUB_TOKEN: forge.github,
      GITLAB_TOKEN: forge.gitlab,
      GITEA_TOKEN: forge.gitea,
      REDISCLI_AUTH: password,
      LOG_LEVEL: 'silent',
      REDIS_URL: redisUrl,
      // The same secrets under names flotilla does not know.
      DEPLOY_REDIS: redisUrl ?? 'unset',
      WRAPPER_SECRET_COPY: secret,
      BOARD_LOGIN: `${boardUser}:${boardPassword}`,
      CI_BEARER: `Bearer ${apiToken}`,
      FORGE_TOKEN_COPY: forge.any,
    };
    const values = [
      secret,
      signingKey,
      boardUser,
      boardPassword,
      apiToken,
      password,
      ...Object.values(forge),
    ];
    if (redisUrl) values.push(redisUrl);
    return { env, values };
  }

  async function dumps(out: string): Promise<Record<string, string>> {
    const found: Record<string, string> = {};
    for (const name of ['agent.env', 'critic.env', 'criterion.env']) {
      const path = join(out, name);
      expect(existsSync(path), `${name} was written`).toBe(true);
      found[name] = await readFile(path, 'utf8');
    }
    return found;
  }

  function expectNoneOf(found: Record<string, string>, values: readonly string[]) {
    for (const [name, text] of Object.entries(found)) {
      for (const value of values) {
        const line = text.split('\n').find((l) => l.includes(value));
        expect(line, `${name} holds a private value`).toBeUndefined();
      }
      expect(text).toMatch(/^PATH=/m);
    }
  }

  async function runWith(name: string, redisUrl: string | undefined) {
    const { file, out } = await dumpingMission(name);
    const home = join(dir, name, 'home');
    const { env, values } = secretEnv(redisUrl, home);
    const result = await execa('node', [BIN, 'run', file, '--json'], {
      env,
      extendEnv: false,
      reject: false,
      timeout: 240_000,
    });
    expect(result.exitCode, result.stderr).toBe(0);
    return { found: await dumps(out), values };
  }

  it('flotilla run on a Redis with a password', async () => {
    const url = `redis://:${password}@127.0.0.1:${redis.port}`;
    const { found, values } = await runWith('password', url);
    expectNoneOf(found, [...values, `:${redis.port}`]);
  }, 300_000);

  it('flotilla run on a Redis Cluster', async () => {
    const url = `redis+cluster://${cluster.nodes.map((n) => `${n.host}:${n.port}`).join(',')}`;
    const { found, values } = await runWith('cluster', url);
    expectNoneOf(found, [...values, ...cluster.nodes.map((n) => `:${n.port}`)]);
  }, 300_000);

  it('flotilla run on its private Redis', async () => {
    const { found, values } = await runWith('private', undefined);
    expectNoneOf(found, values);
  }, 300_000);

  it('a flotilla worker beside a producer', async () => {
    const { file, out } = await dumpingMission('worker');
    const home = join(dir, 'worker', 'home');
    const url = `redis://:${password}@127.0.0.1:${redis.port}`;
    const { env, values } = secretEnv(url, home);
    const clean = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined)) as Record<
      string,
      string
    >;
    const worker = await startWorker(
      { redisUrl: url, prefix: clean.FLOTILLA_PREFIX ?? '', secret: clean.FLOTILLA_SECRET },
      {
        hostId: 'dumper',
        home,
        path: [SIM_BIN],
        adaptersDir: SIM_ADAPTERS,
        env: { ...clean, LOG_LEVEL: 'info' },
      },
    );
    await worker.waitForLog(/serving \d+ CLI/, 60_000);
    const submitted = await execa('node', [BIN, 'submit', file, '--wait'], {
      env: clean,
      extendEnv: false,
      reject: false,
      timeout: 240_000,
    });
    expect(submitted.exitCode, submitted.stderr).toBe(0);
    expectNoneOf(await dumps(out), [...values, `:${redis.port}`]);
    await worker.stop();
  }, 300_000);
});
