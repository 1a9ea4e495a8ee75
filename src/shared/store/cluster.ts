import { canonicalJson } from '../canonical-json.js';
import type { Requirements } from '../host-facts.js';
import type { RedisClient } from '../redis.js';
import { controlChannel, handbackKey, lockKey, requirementSetsKey } from './keys.js';
import { type HostInfo, listHosts, type RoutableHost, routableHosts } from './registry.js';

/**
 * A message to every host about a mission: `cancel` kills its running CLIs, `finished` drops its
 * spec, `unpark` frees the checkout a host parked for an attempt whose next stage runs elsewhere.
 */
export interface ControlMessage {
  /** `requirements`: a new requirement set was named; hosts re-read them (missionId empty). */
  type: 'cancel' | 'finished' | 'unpark' | 'requirements';
  missionId: string;
  /** For `unpark`: the attempt (`<mission>/<task>/<attempt>`) whose parked checkout is free. */
  key?: string;
}

/** A critic job is handed back for seconds, not hours; its counter outlives it by far. */
const HANDBACK_TTL_MS = 3_600_000;

/**
 * What the hosts share beside missions: the registry as they read it, the control channel, named
 * locks, critic hand-back counts and the probes for BullMQ jobs the sweep looks for.
 */
export class Cluster {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  /** Every live host's registry entry, as `flotilla hosts` and the board show them. */
  async hosts(): Promise<HostInfo[]> {
    return listHosts(this.redis, this.prefix);
  }

  /** The live hosts' routing view (advertised CLIs less disabled and cooling ones). */
  async liveHosts(): Promise<RoutableHost[]> {
    return routableHosts(await listHosts(this.redis, this.prefix));
  }

  /**
   * Records requirement sets by key (idempotent); when one is new, tells every host, so a host
   * that satisfies it starts serving its queues before the first job waits long.
   */
  async registerRequirements(sets: ReadonlyMap<string, Requirements>): Promise<void> {
    if (sets.size === 0) return;
    const fields = [...sets].flatMap(([key, requires]) => [key, canonicalJson(requires)]);
    const added = await this.redis.hset(requirementSetsKey(this.prefix), ...fields);
    if (added > 0) await this.publishControl({ type: 'requirements', missionId: '' });
  }

  /** Every requirement set named so far, by key; an entry that does not parse is left out. */
  async requirementSets(): Promise<Map<string, Requirements>> {
    const raw = await this.redis.hgetall(requirementSetsKey(this.prefix));
    const sets = new Map<string, Requirements>();
    for (const [key, text] of Object.entries(raw)) {
      try {
        sets.set(key, JSON.parse(text) as Requirements);
      } catch {
        // Written only by registerRequirements; a hand-edited field is skipped, not fatal.
      }
    }
    return sets;
  }

  async publishControl(message: ControlMessage): Promise<void> {
    await this.redis.publish(controlChannel(this.prefix), JSON.stringify(message));
  }

  /** Takes a named lock for `ms` if nobody holds it (the sweep: one host at a time). */
  async tryLock(name: string, owner: string, ms: number): Promise<boolean> {
    return (await this.redis.set(lockKey(this.prefix, name), owner, 'PX', ms, 'NX')) === 'OK';
  }

  /**
   * Counts one more hand-back of a critic job, beside the job (not in its signed data); the
   * count expires after HANDBACK_TTL_MS so a forgotten one costs nothing.
   */
  async countHandback(jobId: string): Promise<number> {
    const key = handbackKey(this.prefix, jobId);
    const [[, count] = [null, 0]] = ((await this.redis
      .multi()
      .incr(key)
      .pexpire(key, HANDBACK_TTL_MS)
      .exec()) ?? []) as [Error | null, number][];
    return Number(count);
  }

  /** Which of these BullMQ job hashes exist, in one round trip (the sweep's lost-job probe). */
  async jobsExist(jobKeys: readonly string[]): Promise<boolean[]> {
    if (jobKeys.length === 0) return [];
    const probe = this.redis.pipeline();
    for (const key of jobKeys) probe.exists(key);
    const replies = (await probe.exec()) ?? [];
    return jobKeys.map((_, i) => replies[i]?.[1] === 1);
  }

  /**
   * Which of these BullMQ job ids are in a queue's failed set (`failedKey`, a sorted set), in one
   * round trip (the sweep's probe for gate jobs that failed for good).
   */
  async jobsFailed(failedKey: string, jobIds: readonly string[]): Promise<boolean[]> {
    if (jobIds.length === 0) return [];
    const probe = this.redis.pipeline();
    for (const id of jobIds) probe.zscore(failedKey, id);
    const replies = (await probe.exec()) ?? [];
    return jobIds.map((_, i) => replies[i]?.[1] !== null && replies[i]?.[1] !== undefined);
  }
}
