import { describeApiAccess } from '../../board/api/access.js';
import { decideAuth } from '../../board/auth.js';
import { createBoardServer } from '../../board/server.js';
import { FlotillaClient } from '../../client.js';
import type { Config } from '../../shared/config.js';
import { chooseRedis } from '../../shared/home-redis.js';
import { createLogger } from '../../shared/logger.js';
import { connectOrFail } from '../../shared/redis.js';
import { redactUrlCredentials } from '../../shared/url-credentials.js';
import type { Io } from '../io.js';
import { adapterCapabilities } from '../run-preflight.js';

/**
 * `flotilla board`: Bull Board for every flotilla queue plus the mission view and the HTTP API,
 * until SIGINT or SIGTERM. Beyond loopback it starts only with FLOTILLA_BOARD_USER and
 * FLOTILLA_BOARD_PASSWORD set (createBoardServer checks before anything listens); its API answers
 * there only with FLOTILLA_API_TOKEN set.
 */
export async function board(args: { port: number; host: string }, given: Config, io: Io): Promise<number> {
  const logger = createLogger({ level: given.logLevel });
  // Decide about auth before connecting, so a refused bind says why even when Redis is down.
  decideAuth({ host: args.host, user: given.boardUser, password: given.boardPassword });
  const { config, home } = await chooseRedis(given);
  const redisUrl = config.redisUrl ?? '';
  const redis = await connectOrFail(redisUrl).catch(async (error: unknown) => {
    await home?.release();
    throw error;
  });
  // The API submits as `flotilla submit` does: the library's client, signing with FLOTILLA_SECRET.
  const client = await FlotillaClient.connect({ config, redisUrl, logger }).catch(async (error: unknown) => {
    await redis.quit().catch(() => redis.disconnect());
    await home?.release();
    throw error;
  });
  try {
    const server = await createBoardServer({
      redis,
      prefix: config.prefix,
      user: config.boardUser,
      password: config.boardPassword,
      host: args.host,
      port: args.port,
      verdicts: { secret: config.secret },
      onError: (error) => logger.error({ err: error }, 'board request failed'),
      api: {
        client,
        token: config.apiToken,
        agentsDir: config.agentsDir,
        adapterCapabilities: await adapterCapabilities(config.adaptersDir),
      },
    });
    io.out(
      `flotilla board: ${server.url}/ (missions), ${server.url}/queues (Bull Board), ${server.url}/metrics, ${server.url}/api/v1 (API)`,
    );
    io.out(
      `Redis ${redactUrlCredentials(redisUrl)}, prefix ${config.prefix}; ${server.authRequired ? 'HTTP Basic auth required' : 'no auth (loopback only)'}`,
    );
    if (server.api) io.out(`API: ${describeApiAccess(server.api)}`);
    await new Promise<void>((resolve) => {
      const stop = (signal: NodeJS.Signals) => {
        process.off('SIGINT', stop);
        process.off('SIGTERM', stop);
        logger.info(`${signal}: closing the board`);
        resolve();
      };
      process.on('SIGINT', stop);
      process.on('SIGTERM', stop);
    });
    await server.close();
    return 0;
  } finally {
    await client.close();
    await redis.quit().catch(() => redis.disconnect());
    await home?.release();
  }
}
