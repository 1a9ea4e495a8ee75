import { FlotillaClient } from '../../client.js';
import { loadMission } from '../../producer/load.js';
import type { Config } from '../../shared/config.js';
import type { MissionStatusJson } from '../../shared/contracts.js';
import { FlotillaError, formatProblem, isFlotillaError } from '../../shared/errors.js';
import { chooseRedis, type HomeRedis } from '../../shared/home-redis.js';
import { describeLostRedis, isRedisConnectionError } from '../../shared/redis-lost.js';
import { listHosts, routableHosts } from '../../shared/store/registry.js';
import { redactUrlCredentials } from '../../shared/url-credentials.js';
import { type Host, startHost } from '../../workers/host/host.js';
import { exitCodeForStatus, followMission } from '../follow.js';
import { createHumanLogger } from '../human-log.js';
import type { Io } from '../io.js';
import { adapterCapabilities, formatUnservable, noCliMessage, unservableTasks } from '../run-preflight.js';

export interface RunArgs {
  file: string;
  adaptersDir?: string;
  workers: number;
  slots: number;
  json: boolean;
  internalCli?: string;
}

/** How long closing may take once Redis is gone: nothing left to drain, only connections to drop. */
const CLOSE_WITHOUT_REDIS_MS = 3_000;

/**
 * One machine, one command: validate, Redis (REDIS_URL or the home's own redis-server, whose data
 * stays for `status`, `report` and `receipt`), local worker hosts, submit, follow, summary, clean up.
 * On the home's Redis every job is signed (with FLOTILLA_SECRET or the home's secret), so its hosts
 * have no unsigned mode to warn about. Ctrl-C cancels the mission and still prints the
 * summary; a second Ctrl-C exits at once. Losing Redis ends the run with one line and exit 3.
 */
export async function run(args: RunArgs, config: Config, io: Io): Promise<number> {
  const adaptersDir = args.adaptersDir ?? config.adaptersDir;
  const { mission, problems, warnings } = await loadMission(args.file, {
    adapterCapabilities: await adapterCapabilities(adaptersDir),
  });
  for (const warning of warnings) io.err(`warning: ${formatProblem(warning)}`);
  if (!mission) {
    for (const problem of problems) io.err(formatProblem(problem));
    return 2;
  }
  const say = args.json ? io.err : io.out;
  let home: HomeRedis | undefined;
  const hosts: Host[] = [];
  let client: FlotillaClient | undefined;
  const controller = new AbortController();
  let interrupts = 0;
  let missionId: string | undefined;
  let lostReason: string | undefined;
  let muteLogs = () => {};
  let shuttingDown = false;
  const onSignal = () => {
    interrupts++;
    if (interrupts === 1 && !shuttingDown && client && missionId) {
      io.err('cancelling the mission (Ctrl-C again to exit at once)…');
      void client.cancel(missionId).catch(() => controller.abort());
    } else {
      // The home's Redis stays up without this lease; the next command to leave it last stops it.
      process.exit(130);
    }
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    const chosen = await chooseRedis(config);
    home = chosen.home;
    const used = chosen.config;
    const redisUrl = used.redisUrl ?? '';
    const redisLost = new Promise<never>((_, reject) => {
      void home?.lost.then((reason) => {
        if (!reason) return;
        lostReason = reason;
        controller.abort();
        reject(new FlotillaError('redis/unreachable', `${reason}; the mission cannot go on`));
      });
    });
    redisLost.catch(() => undefined);
    client = await FlotillaClient.connect({ config: used });
    // Progress lines already say what happens; logs below a warning would only repeat them.
    const human = createHumanLogger(io.err, process.env.LOG_LEVEL ?? 'warn');
    muteLogs = human.mute;
    const logger = human.logger;
    // Runs at once on one machine share its Redis: a local-N another run holds is skipped.
    let next = 1;
    while (hosts.length < args.workers) {
      const host = await startHost({
        config: used,
        redisUrl,
        adaptersDir: args.adaptersDir,
        hostId: `local-${next++}`,
        slots: args.slots,
        internalCli: args.internalCli,
        logger,
        graceMs: 5_000,
        warnUnsigned: home === undefined,
        pruneCaches: hosts.length === 0,
      }).catch((error: unknown) => {
        if (isFlotillaError(error, 'host/id-in-use')) return undefined;
        throw error;
      });
      if (host) hosts.push(host);
    }
    for (const host of hosts) {
      say(
        `host ${host.hostId}: ${host.clis.map((c) => `${c.adapter.displayName}${c.version ? ` (${c.version})` : ''}`).join(', ') || 'no agent CLI'}`,
      );
    }
    if (hosts.every((h) => h.clis.length === 0)) {
      throw new FlotillaError(
        'cli/not-found',
        await noCliMessage(adaptersDir, args.adaptersDir !== undefined),
      );
    }
    const live = routableHosts(await listHosts(client.redis, config.prefix));
    const unservable = unservableTasks(mission, live);
    if (unservable.length > 0) {
      throw new FlotillaError('mission/invalid', formatUnservable(args.file, unservable, live));
    }
    const submitted = await client.submitSpec(mission);
    missionId = submitted.id;
    for (const warning of submitted.warnings) io.err(`warning: ${warning}`);
    for (const note of submitted.notes) say(note);
    say(`mission ${submitted.id} submitted (${mission.tasks.length} tasks, ${hosts.length} local host(s))`);
    const followed = followMission(client, submitted.id, io, { json: args.json, signal: controller.signal });
    const final: MissionStatusJson = await Promise.race([followed, redisLost]);
    if (args.json) io.out(JSON.stringify(final));
    return exitCodeForStatus(final.status);
  } catch (error) {
    if (lostReason) throw new FlotillaError('redis/unreachable', `${lostReason}; the mission cannot go on`);
    if (isRedisConnectionError(error)) {
      lostReason = describeLostRedis(
        error,
        config.redisUrl ? redactUrlCredentials(config.redisUrl) : undefined,
      );
      throw new FlotillaError('redis/unreachable', `${lostReason}; the mission cannot go on`);
    }
    throw error;
  } finally {
    // A signal while the hosts close exits at once, through process.exit(), so the exit hooks
    // (the private Redis, the monitor's cookie folder) still run; a default SIGINT would skip them.
    shuttingDown = true;
    if (lostReason) muteLogs();
    const closing = (async () => {
      await Promise.all(hosts.map((h) => h.close(lostReason ? { force: true } : {})));
      await client?.close();
    })();
    if (lostReason) await Promise.race([closing, sleep(CLOSE_WITHOUT_REDIS_MS)]);
    else await closing;
    await home?.release();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
