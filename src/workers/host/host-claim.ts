import { mkdir, readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { FlotillaError } from '../../shared/errors.js';
import { type ProcessId, processRuns, thisProcess } from '../agent/cli-groups.js';
import { takeLock } from '../workspace/checkout-root.js';

/**
 * A host's claim on its id on this machine, for one cluster: `hosts/<host-id>/claim-<cluster>.lock`
 * under FLOTILLA_HOME, naming the process that holds it (pid and start time, so a pid the kernel
 * gave to another program since does not hold it). Two live hosts of one cluster with one id would
 * share one registry entry, one folder of CLI records and one set of job names, so the second is
 * refused; a host with the same id for another cluster (another Redis, another prefix) is another
 * host and starts beside it. A claim whose holder is dead is taken over (checkout-root.ts takeLock).
 */
export interface HostClaim {
  release(): Promise<void>;
}

export function claimFile(home: string, hostId: string, cluster: string): string {
  return join(home, 'hosts', hostId, `claim-${cluster}.lock`);
}

export async function claimHostId(home: string, hostId: string, cluster: string): Promise<HostClaim> {
  const file = claimFile(home, hostId, cluster);
  await mkdir(join(home, 'hosts', hostId), { recursive: true });
  const me = thisProcess();
  const taken = await takeLock(file, JSON.stringify(me), (text) => {
    const holder = parseHolder(text);
    return holder !== null && processRuns(holder);
  });
  if (!taken) {
    const holder = await holderOf(file);
    const by = holder ? `process ${holder.pid}` : 'another process';
    throw new FlotillaError(
      'host/id-in-use',
      `host id ${hostId} is already in use on this machine by ${by} for this cluster; stop that host or start this one with another --host-id`,
    );
  }
  return {
    async release() {
      const now = await holderOf(file);
      if (now?.pid === me.pid && now.startTime === me.startTime) await unlink(file).catch(() => undefined);
    },
  };
}

async function holderOf(file: string): Promise<ProcessId | null> {
  return parseHolder(await readFile(file, 'utf8').catch(() => ''));
}

function parseHolder(text: string): ProcessId | null {
  try {
    const parsed = JSON.parse(text) as Partial<ProcessId>;
    return typeof parsed.pid === 'number' ? { pid: parsed.pid, startTime: parsed.startTime ?? null } : null;
  } catch {
    return null;
  }
}
