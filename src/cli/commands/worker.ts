import type { Config } from '../../shared/config.js';
import { chooseRedis } from '../../shared/home-redis.js';
import { createLogger } from '../../shared/logger.js';
import { connectOrFail } from '../../shared/redis.js';
import type { FactsOptions } from '../../workers/agent/host-facts.js';
import { type CloseOutcome, startHost } from '../../workers/host/host.js';
import { describeStop } from '../../workers/host/shutdown.js';
import { assertGitVersion } from '../../workers/workspace/git.js';
import type { Io } from '../io.js';

interface WorkerArgs {
  adaptersDir?: string;
  hostId?: string;
  slots: number;
  internalCli?: string;
  graceMs: number;
  /** Every agent CLI under bwrap, writable only in its checkout (`--sandbox`). */
  sandbox?: boolean;
  /** `--tool`, `--label`, `--facts`. */
  facts?: FactsOptions;
}

/**
 * A worker host until signalled: the first SIGTERM/SIGINT stops taking jobs and gives running
 * CLIs the grace period; the second kills them at once so their jobs move to another host.
 * Without REDIS_URL it serves the home's own Redis and holds its lease until it stops.
 */
export async function worker(args: WorkerArgs, given: Config, io: Io): Promise<number> {
  // Before Redis: a host whose git cannot merge without a checkout must not start at all.
  await assertGitVersion();
  const { config, home } = await chooseRedis(given);
  try {
    return await serve(args, config, io);
  } finally {
    await home?.release();
  }
}

async function serve(args: WorkerArgs, config: Config, io: Io): Promise<number> {
  const redisUrl = config.redisUrl ?? '';
  const probe = await connectOrFail(redisUrl);
  probe.disconnect();
  const logger = createLogger({ level: config.logLevel });
  // Listening before the host starts: a signal that comes while it starts (or right after its
  // "serving" line, before the handlers below) is kept and acted on once it has started, instead
  // of killing the process with nothing drained; a second one exits at once.
  const early: string[] = [];
  const keep = (signal: string) => {
    early.push(signal);
    // A second one while it still starts: the person means now.
    if (early.length > 1) process.exit(signal === 'SIGINT' ? 130 : 143);
  };
  process.on('SIGTERM', keep);
  process.on('SIGINT', keep);
  const stopKeeping = () => {
    process.off('SIGTERM', keep);
    process.off('SIGINT', keep);
  };
  const host = await startHost({
    config,
    redisUrl,
    adaptersDir: args.adaptersDir,
    hostId: args.hostId,
    slots: args.slots,
    internalCli: args.internalCli,
    logger,
    graceMs: args.graceMs,
    pruneCaches: true,
    ...(args.sandbox ? { sandbox: { bwrap: 'bwrap' } } : {}),
    ...(args.facts ? { facts: args.facts } : {}),
  }).catch((error: unknown) => {
    stopKeeping();
    throw error;
  });
  if (host.clis.length === 0) {
    logger.warn('no agent CLI detected on this host: it serves verify, critic and mission only');
  }
  return new Promise<number>((resolve) => {
    let signals = 0;
    // The signal that forced the stop, if a second one came: it decides the exit code.
    let forcedBy: string | undefined;
    // The host is closed; BullMQ's blocking connections retrying a Redis that is gone may still
    // hold the event loop: bin/flotilla.js ends every returned command after a short linger.
    const leave = (code: number) => resolve(code);
    const onSignal = (signal: string) => {
      signals++;
      if (signals === 1) {
        logger.info(
          `${signal}: draining (up to ${Math.round(args.graceMs / 1000)}s); send again to stop at once`,
        );
        // Both calls share one close; whichever signal came last decides the exit code.
        void host.close().then((outcome) => leave(exitFor(outcome, forcedBy, io)));
      } else {
        logger.warn(`${signal} again: stopping running CLIs now`);
        forcedBy = signal;
        void host.close({ force: true });
      }
    };
    process.on('SIGTERM', () => onSignal('SIGTERM'));
    process.on('SIGINT', () => onSignal('SIGINT'));
    stopKeeping();
    for (const signal of early) onSignal(signal);
  });
}

/**
 * The line (if any) and the exit code: Redis out of reach is 3 whatever else happened; a stop
 * forced by a second signal cut running work off, so it is the shell's 128 + signal number.
 */
function exitFor(outcome: CloseOutcome, forcedBy: string | undefined, io: Io): number {
  const said = describeStop(outcome, forcedBy !== undefined);
  if (said.line) io.err(said.line);
  if (said.code === 0 && forcedBy) return forcedBy === 'SIGINT' ? 130 : 143;
  return said.code;
}
