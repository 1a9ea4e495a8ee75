import type { ControlMode } from '../capabilities.js';
import { dispatchQueue, QUEUES } from '../contracts.js';
import {
  formatTool,
  type HostFacts,
  noHostSatisfies,
  type Requirements,
  requirementQueue,
  requirementsKey,
  unmet,
} from '../host-facts.js';
import type { TaskSpec } from '../mission.js';
import { type CliOffer, findAffinity, isImplementation, matchOffers, splitCapabilities } from './match.js';

/**
 * Release-time routing: which queue a task's attempt goes to, decided over the union of the CLIs
 * that live hosts advertise, with the same priorities a single host uses (queue/match.ts). A
 * task nobody can serve yet is `waiting`, with a reason a person can act on, instead of sitting
 * silently in a queue no host consumes.
 */

export interface LiveHost {
  readonly hostId: string;
  readonly clis: readonly {
    readonly cli: string;
    readonly capabilities: readonly string[];
    readonly order: number;
  }[];
  /** True when the host is configured with an internal adapter and so serves dispatch.internal. */
  readonly internal: boolean;
  /** Its platform, toolchains and labels; a host that advertises none satisfies no `requires`. */
  readonly facts?: HostFacts;
}

export interface Route {
  /**
   * `dispatchQueue(capability)`, so a run job's `capability` names its queue; for a task with
   * `requires`, that queue's variant for its requirement key (requirementQueue).
   */
  readonly queue: string;
  /** The key of the task's `requires`: its verify and critic jobs go to that key's queues too. */
  readonly requirementsKey?: string;
  readonly capability: string;
  readonly how: 'exact' | 'affinity' | 'internal' | 'pinned' | 'waiting';
  readonly reason: string;
  /** The pinned CLI, for the run job: a host without it must not run the task. */
  readonly cli?: string;
}

type ClusterOffer = CliOffer & { readonly hosts: readonly string[] };

export function routeTask(task: TaskSpec, hosts: readonly LiveHost[]): Route {
  if (!task.requires) return routeOver(task, hosts);
  const requires = task.requires;
  const key = requirementsKey(requires);
  const able = hosts.filter((host) => host.facts && unmet(host.facts, requires).length === 0);
  const route = routeOver(task, able);
  const keyed = { ...route, queue: requirementQueue(route.queue, key), requirementsKey: key };
  if (able.length > 0)
    return { ...keyed, reason: `${route.reason}; requires ${describeRequirements(requires)}` };
  const known = hosts.map((host) => ({
    hostId: host.hostId,
    facts: host.facts ?? { os: 'unknown', arch: 'unknown', tools: {}, labels: {} },
  }));
  return { ...keyed, how: 'waiting', reason: noHostSatisfies(known, requires) ?? route.reason };
}

/** `os linux, tools docker, node>=20, labels region=eu`. */
export function describeRequirements(requires: Requirements): string {
  return [
    requires.os?.length ? `os ${requires.os.join(' or ')}` : '',
    requires.arch?.length ? `arch ${requires.arch.join(' or ')}` : '',
    requires.tools?.length ? `tools ${requires.tools.map(formatTool).join(', ')}` : '',
    Object.keys(requires.labels ?? {}).length
      ? `labels ${Object.entries(requires.labels ?? {})
          .map(([k, v]) => `${k}=${v}`)
          .join(', ')}`
      : '',
  ]
    .filter(Boolean)
    .join('; ');
}

function routeOver(task: TaskSpec, hosts: readonly LiveHost[]): Route {
  const offers = unionOffers(hosts);
  const wanted = splitCapabilities(task.capability);
  const first = wanted[0] ?? 'internal';
  const taskType = task.capability.trim();

  if (task.cli) {
    const offer = offers.find((candidate) => candidate.cli === task.cli);
    if (!offer) {
      const live = offers.map((candidate) => candidate.cli).join(', ') || 'none';
      return {
        queue: dispatchQueue(first),
        capability: first,
        how: 'waiting',
        reason: `pinned CLI '${task.cli}' is on no live host (live CLIs: ${live})`,
        cli: task.cli,
      };
    }
    // A pinned CLI that does not list the task's capability still runs it: the pin is the user's
    // explicit choice, so it goes to a queue that CLI's hosts consume.
    const capability =
      wanted.find((candidate) => offer.capabilities.includes(candidate)) ?? offer.capabilities[0] ?? first;
    const unlisted = wanted.includes(capability)
      ? ''
      : `; ${task.cli} does not list '${taskType}', so it takes the ${capability} queue`;
    return {
      queue: dispatchQueue(capability),
      capability,
      how: 'pinned',
      reason: `pinned to ${task.cli} (${onHosts(offer)})${unlisted}`,
      cli: task.cli,
    };
  }

  const match = matchOffers(
    { capability: task.capability, division: task.division, controlMode: task.controlMode },
    offers,
  );
  if (match.offer) {
    const capability = match.matched[0] ?? first;
    return {
      queue: dispatchQueue(capability),
      capability,
      how: match.how,
      reason: `${match.note} (${onHosts(match.offer)})`,
    };
  }

  const internalHosts = hosts.filter((host) => host.internal).map((host) => host.hostId);
  if (internalHosts.length > 0) {
    return {
      queue: QUEUES.internal,
      capability: 'internal',
      how: 'internal',
      reason: `${match.log} (on ${plural(internalHosts.length, 'host')} ${internalHosts.join(', ')})`,
    };
  }

  if (match.why === 'surgical') {
    return {
      queue: QUEUES.internal,
      capability: 'internal',
      how: 'waiting',
      reason: `control mode surgical keeps ${wanted.filter(isImplementation).join(', ')} with the internal agent and no live host serves ${QUEUES.internal}`,
    };
  }
  return {
    queue: dispatchQueue(first),
    capability: first,
    how: 'waiting',
    reason: `no live host serves ${describeWanted(wanted, task.division, task.controlMode)} and none serves ${QUEUES.internal}`,
  };
}

/** The cluster's CLIs, one entry per CLI: capabilities joined over hosts, file order the lowest seen. */
function unionOffers(hosts: readonly LiveHost[]): ClusterOffer[] {
  const byCli = new Map<string, { cli: string; order: number; capabilities: Set<string>; hosts: string[] }>();
  for (const host of hosts) {
    for (const entry of host.clis) {
      const known = byCli.get(entry.cli);
      if (known) {
        known.order = Math.min(known.order, entry.order);
        for (const capability of entry.capabilities) known.capabilities.add(capability);
        if (!known.hosts.includes(host.hostId)) known.hosts.push(host.hostId);
      } else {
        byCli.set(entry.cli, {
          cli: entry.cli,
          order: entry.order,
          capabilities: new Set(entry.capabilities),
          hosts: [host.hostId],
        });
      }
    }
  }
  return [...byCli.values()].map((entry) => ({ ...entry, capabilities: [...entry.capabilities] }));
}

function describeWanted(wanted: readonly string[], division: string | undefined, mode: ControlMode): string {
  const names = wanted.length > 0 ? wanted.join(' or ') : 'its task type';
  const affinity = findAffinity(division);
  return affinity && (mode !== 'surgical' || affinity.capabilities.some((c) => !isImplementation(c)))
    ? `${names} (or ${affinity.division} affinity)`
    : names;
}

function onHosts(offer: ClusterOffer): string {
  return `on ${plural(offer.hosts.length, 'host')} ${offer.hosts.join(', ')}`;
}

function plural(count: number, word: string): string {
  return count === 1 ? word : `${word}s`;
}
