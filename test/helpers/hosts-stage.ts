import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { FlotillaClient } from '../../src/client.js';
import { loadConfig } from '../../src/shared/config.js';
import type { AuditEntry, MissionEvent, MissionStatusJson } from '../../src/shared/contracts.js';
import { indent, sim } from './flotilla.js';
import { type RedisHandle, startRedis, uniquePrefix } from './redis-server.js';
import { type Cluster, runFlotilla, stopAllWorkers } from './worker-process.js';

/**
 * The stage of a hosts test file: its own redis-server, a prefix, a temp folder holding one
 * FLOTILLA_HOME per simulated machine and one folder per mission, and an in-process client that
 * reads mission state and the audit trail. Hosts are separate processes (worker-process.ts).
 */
export interface Stage {
  readonly redis: RedisHandle;
  readonly cluster: Cluster;
  readonly dir: string;
  readonly client: FlotillaClient;
  /** The FLOTILLA_HOME of one host: its own "machine". */
  home(hostId: string): string;
  /** Writes a mission (workspace `./ws` beside it) and returns the file's path. */
  writeMission(yaml: string): Promise<{ file: string; ws: string }>;
  /** `flotilla submit <file>` as a process; returns the mission id. */
  submit(file: string, env?: Record<string, string | undefined>): Promise<string>;
  /** Waits for the mission's summary (its end), or returns the status as it is after `timeoutMs`. */
  wait(id: string, timeoutMs?: number): Promise<MissionStatusJson>;
  audit(id: string): Promise<AuditEntry[]>;
  /** Task states and the audit trail in a few lines: the message of an assertion that failed. */
  explain(id: string): Promise<string>;
  events(id: string): Promise<MissionEvent[]>;
  close(): Promise<void>;
}

export async function openStage(options: { appendonly?: boolean; secret?: string } = {}): Promise<Stage> {
  const redis = await startRedis({ appendonly: options.appendonly });
  const dir = await mkdtemp(join(tmpdir(), 'flotilla-hosts-'));
  const cluster: Cluster = {
    redisUrl: redis.url,
    prefix: uniquePrefix(),
    ...(options.secret ? { secret: options.secret } : {}),
  };
  const config = loadConfig({
    REDIS_URL: redis.url,
    FLOTILLA_PREFIX: cluster.prefix,
    FLOTILLA_HOME: join(dir, 'client-home'),
    ...(options.secret ? { FLOTILLA_SECRET: options.secret } : {}),
    LOG_LEVEL: 'silent',
  });
  const client = await FlotillaClient.connect({ config });
  let missions = 0;
  const stage: Stage = {
    redis,
    cluster,
    dir,
    client,
    home: (hostId) => join(dir, 'machines', hostId),
    async writeMission(yaml) {
      const missionDir = join(dir, `mission-${++missions}`);
      const ws = join(missionDir, 'ws');
      await mkdir(ws, { recursive: true });
      const file = join(missionDir, 'mission.yaml');
      await writeFile(file, yaml);
      return { file, ws };
    },
    async submit(file, env) {
      const run = await runFlotilla(cluster, ['submit', file], { env });
      if (run.exitCode !== 0)
        throw new Error(`flotilla submit exited ${run.exitCode}:\n${run.stdout}\n${run.stderr}`);
      return run.stdout.trim().split('\n').pop() ?? '';
    },
    async wait(id, timeoutMs = 180_000) {
      return client.wait(id, { signal: AbortSignal.timeout(timeoutMs), pollMs: 250 });
    },
    audit: (id) => client.store.getAudit(id),
    async explain(id) {
      const status = await client.status(id);
      const tasks = status.tasks.map(
        (t) => `  ${t.id}: ${t.status} a${t.attempts} ${t.host ?? '-'}/${t.cli ?? '-'} ${t.error ?? ''}`,
      );
      const audit = (await client.store.getAudit(id)).map(
        (e) =>
          `  ${e.at} ${e.taskId || 'mission'} a${e.attempt} ${e.stage} ${e.host ?? ''} ${e.cli ?? ''}: ${e.message.slice(0, 300)}`,
      );
      return [`mission ${id} ${status.status}`, ...tasks, 'audit:', ...audit].join('\n');
    },
    async events(id) {
      return (await client.store.readEvents(id, '0', 0)).map((entry) => entry.event);
    },
    async close() {
      await stopAllWorkers();
      await client.close().catch(() => undefined);
      await redis.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
  return stage;
}

export interface TaskLines {
  readonly id: string;
  readonly steps: string;
  readonly capability?: string;
  readonly deps?: readonly string[];
  readonly criteria?: readonly string[];
  /** More YAML lines of the task, indented by four spaces (`critic: false`, `cli: …`). */
  readonly extra?: readonly string[];
}

export function task(t: TaskLines): string {
  const criteria = t.criteria ?? [`test -f ${t.id}.txt`];
  return [
    `  - id: ${t.id}`,
    `    title: Task ${t.id}`,
    `    capability: ${t.capability ?? 'code_implementation'}`,
    `    depends_on: [${(t.deps ?? []).join(', ')}]`,
    '    exit_criteria:',
    ...criteria.map((c) => `      - ${JSON.stringify(c)}`),
    ...(t.extra ?? []).map((line) => `    ${line}`),
    '    description: |',
    `      Do ${t.id}.`,
    '',
    indent(sim(t.steps)),
  ].join('\n');
}

export function mission(
  tasks: readonly string[],
  defaults = '{ max_attempts: 2, backoff: 500ms, timeout: 5m }',
): string {
  return ['goal: hosts test mission', 'workspace: ./ws', `defaults: ${defaults}`, 'tasks:', ...tasks].join(
    '\n',
  );
}

/** A sim step list that writes `<id>.txt`. */
export function writes(id: string, before = ''): string {
  return `${before}${before ? '\n' : ''}- write: {path: ${id}.txt, content: "${id} done"}`;
}

/** The merge commits on the mission's integration branch, oldest first (one per approved task). */
export async function integrationMerges(ws: string, missionId: string): Promise<string[]> {
  const { stdout } = await execa('git', [
    '-C',
    ws,
    'log',
    '--merges',
    '--reverse',
    '--format=%s',
    `flotilla/${missionId}`,
  ]);
  return stdout.split('\n').filter(Boolean);
}

export function byTask(status: MissionStatusJson, id: string): MissionStatusJson['tasks'][number] {
  const found = status.tasks.find((t) => t.id === id);
  if (!found) throw new Error(`mission ${status.id} has no task ${id}`);
  return found;
}
