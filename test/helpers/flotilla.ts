import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { FlotillaClient } from '../../src/client.js';
import { type Config, loadConfig } from '../../src/shared/config.js';
import type { MissionStatusJson } from '../../src/shared/contracts.js';
import { silentLogger } from '../../src/shared/logger.js';
import type { Sandbox } from '../../src/workers/agent/sandbox.js';
import { type Host, startHost } from '../../src/workers/host/host.js';
import { type RedisHandle, startRedis, uniquePrefix } from './redis-server.js';

export { ROOT } from './paths.js';

import { ROOT } from './paths.js';
export const SIM_ADAPTERS = join(ROOT, 'examples', 'adapters');
export const SIM_BIN = join(ROOT, 'examples', 'bin');

/** The stand-in agent must be on PATH for detection; test files run in their own processes. */
export function putSimOnPath(): void {
  if (!(process.env.PATH ?? '').split(delimiter).includes(SIM_BIN)) {
    process.env.PATH = `${SIM_BIN}${delimiter}${process.env.PATH ?? ''}`;
  }
}

export interface TestCluster {
  readonly redis: RedisHandle;
  readonly config: Config;
  readonly client: FlotillaClient;
  readonly hosts: Host[];
  readonly dir: string;
  addHost(options?: {
    hostId?: string;
    adaptersDir?: string;
    slots?: number;
    sweepMs?: number;
    /** Run the host's CLIs under bwrap (`flotilla worker --sandbox`). */
    sandbox?: Sandbox;
  }): Promise<Host>;
  /**
   * Writes the mission YAML (workspace `./ws`) into a fresh folder and submits it. `files` are
   * written beside it first, by path relative to that folder (`agents/<id>.md`, `ws/seed.txt`).
   */
  submit(yaml: string, files?: Readonly<Record<string, string>>): Promise<string>;
  run(yaml: string): Promise<MissionStatusJson>;
  stop(): Promise<void>;
}

/** A private redis-server, a unique prefix, and in-process worker hosts on the stand-in agent. */
export async function startCluster(
  options: { hosts?: number; slots?: number; env?: Record<string, string> } = {},
): Promise<TestCluster> {
  putSimOnPath();
  const redis = await startRedis();
  const dir = await mkdtemp(join(tmpdir(), 'flotilla-test-'));
  const config = loadConfig({
    ...process.env,
    REDIS_URL: redis.url,
    FLOTILLA_PREFIX: uniquePrefix(),
    FLOTILLA_HOME: join(dir, 'home'),
    FLOTILLA_ADAPTERS: SIM_ADAPTERS,
    LOG_LEVEL: 'silent',
    ...options.env,
  });
  const client = await FlotillaClient.connect({ config, redisUrl: redis.url });
  const hosts: Host[] = [];
  let missions = 0;
  const cluster: TestCluster = {
    redis,
    config,
    client,
    hosts,
    dir,
    async addHost(hostOptions = {}) {
      const host = await startHost({
        config,
        redisUrl: redis.url,
        adaptersDir: hostOptions.adaptersDir ?? SIM_ADAPTERS,
        hostId: hostOptions.hostId ?? `test-host-${hosts.length + 1}`,
        slots: hostOptions.slots ?? options.slots ?? 4,
        logger: silentLogger(),
        graceMs: 2_000,
        heartbeatMs: 1_000,
        ...(hostOptions.sweepMs ? { sweepMs: hostOptions.sweepMs } : {}),
        ...(hostOptions.sandbox ? { sandbox: hostOptions.sandbox } : {}),
      });
      hosts.push(host);
      return host;
    },
    async submit(yaml: string, files: Readonly<Record<string, string>> = {}) {
      const missionDir = join(dir, `mission-${++missions}`);
      await mkdir(join(missionDir, 'ws'), { recursive: true });
      for (const [path, text] of Object.entries(files)) {
        await mkdir(dirname(join(missionDir, path)), { recursive: true });
        await writeFile(join(missionDir, path), text);
      }
      const file = join(missionDir, 'mission.yaml');
      await writeFile(file, yaml);
      return (await client.submit(file)).id;
    },
    async run(yaml: string) {
      const id = await cluster.submit(yaml);
      return client.wait(id, { pollMs: 200 });
    },
    async stop() {
      await Promise.all(hosts.map((h) => h.close({ force: true })));
      await client.close();
      await redis.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
  for (let i = 0; i < (options.hosts ?? 1); i++) await cluster.addHost();
  return cluster;
}

/** A sim block inside a task description. */
export function sim(steps: string): string {
  return ['```sim', steps.trim(), '```'].join('\n');
}

/** Indents a block for embedding under `description: |` in a YAML string. */
export function indent(text: string, spaces = 6): string {
  return text
    .split('\n')
    .map((line) => (line ? ' '.repeat(spaces) + line : line))
    .join('\n');
}
