import type { Worker } from 'bullmq';
import type { RedisClient } from '../../shared/redis.js';
import { controlChannel } from '../../shared/store/keys.js';
import { MISSION_CANCELLED } from '../stages/job-guard.js';
import { unparkEverywhere } from '../workspace/checkout-pool.js';

/** What a control message acts on in this host. */
export interface ControlTargets {
  /** The mission specs the host holds in memory (HostContext.missions). */
  readonly missions: Map<string, unknown>;
  /** The jobs running on this host, each with the worker that holds it. */
  readonly active: ReadonlyMap<string, Worker>;
  /** A new requirement set was named: the host serves its queues if it satisfies it. */
  readonly onRequirements?: () => void;
}

/**
 * Follows the control channel (MissionStore.publishControl) on a connection of its own, which the
 * host's close ends.
 */
export async function listenForControl(
  redis: RedisClient,
  prefix: string,
  targets: ControlTargets,
): Promise<RedisClient> {
  const subscriber = redis.duplicate();
  subscriber.on('error', () => {});
  await subscriber.subscribe(controlChannel(prefix));
  subscriber.on('message', (_channel: string, message: string) => obeyControl(message, targets));
  return subscriber;
}

function obeyControl(message: string, { missions, active, onRequirements }: ControlTargets): void {
  let parsed: { type?: string; missionId?: string; key?: string };
  try {
    parsed = JSON.parse(message) as typeof parsed;
  } catch {
    return;
  }
  // Every host forgets a finished mission's spec, not only the one that ran its finalize job.
  if (parsed.type === 'finished' && parsed.missionId) missions.delete(parsed.missionId);
  // The attempt's next stage took a checkout on another host: ours, parked for it, is free.
  if (parsed.type === 'unpark' && parsed.key) void unparkEverywhere(parsed.key);
  if (parsed.type === 'requirements') onRequirements?.();
  if (parsed.type === 'cancel' && parsed.missionId) {
    for (const [jobId, worker] of active) {
      if (jobId.startsWith(`${parsed.missionId}.`)) worker.cancelJob(jobId, MISSION_CANCELLED);
    }
  }
}
