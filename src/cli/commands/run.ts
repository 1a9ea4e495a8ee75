import { type Host, startHost } from '../../host/host.js';
import { FlotillaClient } from '../../mission/client.js';
import { loadMission } from '../../mission/load.js';
import type { Config } from '../../shared/config.js';
import { FlotillaError, formatProblem } from '../../shared/errors.js';
import { createLogger } from '../../shared/logger.js';
import { exitCodeForStatus, followMission } from '../follow.js';
import type { Io } from '../io.js';
import { type PrivateRedis, startPrivateRedis } from '../private-redis.js';

export interface RunArgs {
  file: string;
  adaptersDir?: string;
  workers: number;
  slots: number;
  json: boolean;
  internalCli?: string;
}

/**
 * One machine, one command: validate, Redis (REDIS_URL or a private redis-server), local worker
 * hosts, submit, follow, summary, clean up. Ctrl-C cancels the mission; a second Ctrl-C exits.
 */
export async function run(args: RunArgs, config: Config, io: Io): Promise<number> {
  const { mission, problems } = await loadMission(args.file);
  if (!mission) {
    for (const problem of problems) io.err(formatProblem(problem));
    return 2;
  }
  let redis: PrivateRedis | undefined;
  const hosts: Host[] = [];
  let client: FlotillaClient | undefined;
  const controller = new AbortController();
  let interrupts = 0;
  let missionId: string | undefined;
  const onSignal = () => {
    interrupts++;
    if (interrupts === 1 && client && missionId) {
      io.err('cancelling the mission (Ctrl-C again to exit at once)…');
      void client.cancel(missionId).catch(() => controller.abort());
    } else {
      process.exit(130);
    }
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    if (!config.redisUrl) redis = await startPrivateRedis();
    const redisUrl = config.redisUrl ?? redis?.url ?? '';
    client = await FlotillaClient.connect({ config, redisUrl });
    // Progress lines already say what happens; logs below a warning would only repeat them.
    const logger = createLogger({ level: process.env.LOG_LEVEL ?? 'warn' });
    for (let i = 0; i < args.workers; i++) {
      hosts.push(
        await startHost({
          config,
          redisUrl,
          adaptersDir: args.adaptersDir,
          hostId: `local-${i + 1}`,
          slots: args.slots,
          internalCli: args.internalCli,
          logger,
          graceMs: 5_000,
          warnUnsigned: redis === undefined,
        }),
      );
    }
    const say = args.json ? io.err : io.out;
    for (const host of hosts) {
      say(
        `host ${host.hostId}: ${host.clis.map((c) => `${c.adapter.displayName}${c.version ? ` (${c.version})` : ''}`).join(', ') || 'no agent CLI'}`,
      );
    }
    if (hosts.every((h) => h.clis.length === 0)) {
      throw new FlotillaError(
        'cli/not-found',
        `no agent CLI detected from ${args.adaptersDir ?? config.adaptersDir}; install one or pass --adapters examples/adapters for the stand-in`,
      );
    }
    const submitted = await client.submit(mission);
    missionId = submitted.id;
    say(`mission ${submitted.id} submitted (${mission.tasks.length} tasks, ${hosts.length} local host(s))`);
    const final = await followMission(client, submitted.id, io, {
      json: args.json,
      signal: controller.signal,
    });
    if (args.json) io.out(JSON.stringify(final));
    return exitCodeForStatus(final.status);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await Promise.all(hosts.map((h) => h.close()));
    await client?.close();
    await redis?.stop();
  }
}
