import type { KeyObject } from 'node:crypto';
import type { Adapter } from '../../shared/adapter.js';
import type { Config } from '../../shared/config.js';
import type { Logger } from '../../shared/logger.js';
import type { QueueSet } from '../../shared/queue/queues.js';
import type { Semaphore } from '../../shared/semaphore.js';
import type { MissionRecord, MissionStore } from '../../shared/store/mission-store.js';
import type { CliGroups } from '../agent/cli-groups.js';
import type { Sandbox } from '../agent/sandbox.js';

/** A CLI this host detected, with what detection said. */
export interface HostCli {
  readonly adapter: Adapter;
  readonly version?: string;
}

/** Everything a job processor on this host needs, built once by createHost(). */
export interface HostContext {
  readonly hostId: string;
  readonly config: Config;
  /** config.secret, named for the enqueue functions: every job a host adds is signed with it. */
  readonly secret: string | undefined;
  readonly logger: Logger;
  readonly store: MissionStore;
  readonly queues: QueueSet;
  /** Detected CLIs in adapter file order. */
  readonly clis: readonly HostCli[];
  /** The adapter that serves dispatch.internal on this host, if configured. */
  readonly internalCli?: string;
  readonly slots: Semaphore;
  readonly cliSlots: ReadonlyMap<string, Semaphore>;
  readonly cacheDir: string;
  /** The process groups of the CLIs (and criteria) running on this host, recorded on disk. */
  readonly cliGroups: CliGroups;
  readonly workRoot: string;
  /** This host's warm checkouts, one pool per repo cache below it. */
  readonly checkoutRoot: string;
  /** CLIs this host stopped advertising, with the CLI's own message. */
  readonly disabled: Map<string, string>;
  /** CLIs cooling down after a rate limit, until a time in ms. */
  readonly coolingUntil: Map<string, number>;
  /** Called when what the host advertises changed (a CLI disabled or cooling down). */
  readonly onAdvertisedChange: () => Promise<void>;
  /** Signs mission receipts at finalize (FLOTILLA_SIGNING_KEY); without it receipts are unsigned. */
  readonly signingKey?: KeyObject;
  /** The machine this host runs on, as detected (platform, arch); recorded with each run. */
  readonly platform?: string;
  /** Specs are immutable once submitted, so a host reads each mission's once. */
  readonly missions: Map<string, MissionRecord>;
  /** `flotilla worker --sandbox`: every agent CLI runs under bwrap. */
  readonly sandbox?: Sandbox;
  /** Stops this host fetching from a queue until the returned function is called (host/pools.ts). */
  readonly holdFetching?: (queue: string) => Promise<() => void>;
}

/**
 * A host keeps at most this many mission specs; the oldest goes first. Finished missions are
 * dropped at once (the `finished` control message); the bound covers a host that missed one.
 */
export const MISSION_CACHE_MAX = 200;

export async function missionRecord(ctx: HostContext, missionId: string): Promise<MissionRecord> {
  const cached = ctx.missions.get(missionId);
  if (cached) return cached;
  const record = await ctx.store.getMission(missionId);
  ctx.missions.set(missionId, record);
  for (const oldest of ctx.missions.keys()) {
    if (ctx.missions.size <= MISSION_CACHE_MAX) break;
    ctx.missions.delete(oldest);
  }
  return record;
}

/**
 * Drops the cached specs of missions that ended (done, failed, cancelled): the host that
 * finalizes a mission forgets it at once, every other host here, on its periodic sweep, so a
 * long-lived host does not keep every mission it ever served. A missing mission goes too.
 */
export async function forgetEndedMissions(ctx: HostContext): Promise<string[]> {
  const forgotten: string[] = [];
  for (const id of [...ctx.missions.keys()]) {
    const status = await ctx.store.getMetaField(id, 'status');
    if (status !== 'running') {
      ctx.missions.delete(id);
      forgotten.push(id);
    }
  }
  return forgotten;
}

/** The CLIs usable right now: detected, not disabled, not cooling down. */
export function usableClis(ctx: HostContext, now = Date.now()): HostCli[] {
  return ctx.clis.filter(
    (c) => !ctx.disabled.has(c.adapter.cli) && (ctx.coolingUntil.get(c.adapter.cli) ?? 0) <= now,
  );
}
