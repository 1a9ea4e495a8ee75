/**
 * The library's client: the producer's client (producer/client.ts) with the workers' git to make a
 * submitted mission's workspace ready. Scripts and the CLI use this one.
 */

import {
  type ClientOptions,
  FlotillaClient as ProducerClient,
  type SubmitOptions,
} from './producer/client.js';
import type { MissionEvent } from './shared/contracts.js';
import type { MissionInput } from './shared/mission.js';
import { prepareWorkspace } from './workers/workspace/prepare-workspace.js';

export type { ClientOptions, SubmitOptions, SubmittedMission } from './producer/client.js';

export class FlotillaClient extends ProducerClient {
  protected static override readonly prepareWorkspace = prepareWorkspace;
}

async function withClient<T>(options: ClientOptions, fn: (client: FlotillaClient) => Promise<T>): Promise<T> {
  const client = await FlotillaClient.connect(options);
  try {
    return await fn(client);
  } finally {
    await client.close();
  }
}

/** A path, or an object with the mission file's fields (see FlotillaClient.submit). */
export function submitMission(mission: string | MissionInput, options: ClientOptions & SubmitOptions = {}) {
  return withClient(options, (client) => client.submit(mission, options));
}

export function getMissionStatus(id: string, options: ClientOptions = {}) {
  return withClient(options, (client) => client.status(id));
}

export function waitForMission(
  id: string,
  options: ClientOptions & {
    onEvent?: (event: MissionEvent) => void;
    signal?: AbortSignal;
    timeoutMs?: number;
  } = {},
) {
  return withClient(options, (client) => client.wait(id, options));
}

export function cancelMission(id: string, options: ClientOptions = {}) {
  return withClient(options, (client) => client.cancel(id));
}
