import { randomBytes } from 'node:crypto';
import type { HostFacts } from '../host-facts.js';
import type { RedisClient } from '../redis.js';
import { clusterIdKey, hostKey, hostsKey } from './keys.js';

/** What a worker host advertises; `flotilla hosts` prints it and release-time routing reads it. */
export interface HostInfo {
  hostId: string;
  hostname: string;
  pid: number;
  startedAt: string;
  heartbeatAt: string;
  slots: number;
  running: number;
  internal: boolean;
  clis: Array<{
    cli: string;
    displayName: string;
    version?: string;
    vendor?: string;
    capabilities: string[];
    order: number;
  }>;
  /** CLIs this host stopped advertising (not logged in, misconfigured) and why. */
  disabled: Array<{ cli: string; reason: string }>;
  /** CLIs cooling down after a rate-limit reply, until the given time. */
  coolingDown: Array<{ cli: string; until: string }>;
  /** Platform, probed toolchains and operator labels (workers/host/facts.ts); absent from older hosts. */
  facts?: HostFacts;
}

/** A host is live while its key exists; the key expires when heartbeats stop (a crash, a cut). */
export async function publishHost(
  redis: RedisClient,
  prefix: string,
  info: HostInfo,
  ttlMs: number,
): Promise<void> {
  await redis
    .multi()
    .set(hostKey(prefix, info.hostId), JSON.stringify(info), 'PX', ttlMs)
    .sadd(hostsKey(prefix), info.hostId)
    .exec();
}

export async function removeHost(redis: RedisClient, prefix: string, hostId: string): Promise<void> {
  await redis.multi().del(hostKey(prefix, hostId)).srem(hostsKey(prefix), hostId).exec();
}

export async function listHosts(redis: RedisClient, prefix: string): Promise<HostInfo[]> {
  const ids = await redis.smembers(hostsKey(prefix));
  if (ids.length === 0) return [];
  const values = await Promise.all(ids.map((id) => redis.get(hostKey(prefix, id))));
  const live: HostInfo[] = [];
  const gone: string[] = [];
  ids.forEach((id, i) => {
    const raw = values[i];
    if (raw) live.push(JSON.parse(raw) as HostInfo);
    else gone.push(id);
  });
  if (gone.length > 0) await redis.srem(hostsKey(prefix), ...gone);
  return live.sort((a, b) => a.hostId.localeCompare(b.hostId));
}

/** The routing view of the registry: live, advertised, not cooling down. */
export interface RoutableHost {
  readonly hostId: string;
  readonly internal: HostInfo['internal'];
  readonly clis: HostInfo['clis'];
  readonly facts?: HostFacts;
  /** Slots not running a job at its last heartbeat: a hint, as old as the heartbeat. */
  readonly freeSlots: number;
}

export function routableHosts(hosts: readonly HostInfo[], now = Date.now()): RoutableHost[] {
  return hosts.map((host) => ({
    hostId: host.hostId,
    internal: host.internal,
    freeSlots: Math.max(0, host.slots - host.running),
    ...(host.facts ? { facts: host.facts } : {}),
    clis: host.clis.filter(
      (c) =>
        !host.disabled.some((d) => d.cli === c.cli) &&
        !host.coolingDown.some((cd) => cd.cli === c.cli && Date.parse(cd.until) > now),
    ),
  }));
}

/**
 * The cluster's id: made by the first host that asks (set if absent) and read by every other, so
 * it is one per Redis and prefix however each host spells the Redis URL.
 */
export async function clusterId(redis: RedisClient, prefix: string): Promise<string> {
  const key = clusterIdKey(prefix);
  await redis.set(key, randomBytes(8).toString('hex'), 'NX');
  return (await redis.get(key)) ?? '';
}
