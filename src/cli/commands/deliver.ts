import { join } from 'node:path';
import type { Config } from '../../shared/config.js';
import { FlotillaError } from '../../shared/errors.js';
import { createLogger } from '../../shared/logger.js';
import { connectOrFail } from '../../shared/redis.js';
import { MissionStore } from '../../shared/store/mission-store.js';
import { tryDelivery } from '../../workers/stages/deliver/try-delivery.js';
import { formatDeliveryLines } from '../../workers/stages/finalize/summary.js';
import type { Io } from '../io.js';

/**
 * `flotilla deliver <id>`: one more delivery try of a finished mission, here and now, with this
 * machine's git credentials and forge token (FLOTILLA_FORGE_TOKEN, or the forge's own variable).
 * It pushes the branch again and updates the pull request a failed or earlier try opened, or opens
 * it; the status JSON, the audit trail and the summary record it as the hosts' tries are. Exit 0
 * when delivered, 1 when this try failed too.
 */
export async function deliver(args: { id: string; json: boolean }, config: Config, io: Io): Promise<number> {
  const redis = await connectOrFail(config.redisUrl ?? 'redis://127.0.0.1:6379');
  try {
    const store = new MissionStore(redis, config.prefix, config.secret);
    if (!(await store.missionExists(args.id))) {
      throw new FlotillaError('mission/not-found', `no mission '${args.id}'`);
    }
    const { meta, spec } = await store.getMission(args.id);
    if (!spec.deliver) {
      throw new FlotillaError(
        'usage',
        `mission ${args.id} has no deliver: section; nothing says where its branch goes`,
      );
    }
    if (meta.status === 'running') {
      throw new FlotillaError(
        'usage',
        `mission ${args.id} is still running; it delivers itself when it ends`,
      );
    }
    const delivery = await tryDelivery(
      {
        store,
        cacheDir: join(config.home, 'repos'),
        tokens: config.forgeTokens,
        logger: createLogger({ level: config.logLevel === 'info' ? 'warn' : config.logLevel }),
        host: 'cli',
      },
      args.id,
      { lastTry: true },
    );
    if (args.json) io.out(JSON.stringify(delivery));
    else
      for (const line of formatDeliveryLines(delivery, { missionId: args.id, repo: meta.repo })) io.out(line);
    return delivery.state === 'delivered' ? 0 : 1;
  } finally {
    redis.disconnect();
  }
}
