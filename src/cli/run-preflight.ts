import { join, resolve } from 'node:path';
import { PACKAGE_ROOT } from '../shared/config.js';
import type { MissionSpec } from '../shared/mission.js';
import { type LiveHost, routeTask } from '../shared/queue/route.js';
import { detectClis } from '../workers/agent/adapters/detect.js';
import { loadAdapters } from '../workers/agent/adapters/load-adapters.js';

/**
 * What `run` and `validate` check before a mission is submitted, so a new user hears at once what
 * is wrong instead of watching a mission wait in silence. Pure where it can be (the messages).
 */

/** Capability terms the adapters in `dir` offer; an unreadable folder adds none (the hosts say why). */
export async function adapterCapabilities(dir: string): Promise<string[]> {
  try {
    const { adapters } = await loadAdapters(dir);
    return [...new Set(adapters.flatMap((adapter) => adapter.config.capabilities))];
  } catch {
    return [];
  }
}

/**
 * Tasks no live host can serve right now, with the router's own reason. `run` knows its hosts, so
 * such a task would wait for ever; it is refused before anything is enqueued.
 */
export function unservableTasks(
  mission: MissionSpec,
  hosts: readonly LiveHost[],
): { id: string; capability: string; reason: string }[] {
  return mission.tasks.flatMap((task) => {
    const route = routeTask(task, hosts);
    return route.how === 'waiting'
      ? [{ id: task.id, capability: task.capability, reason: route.reason }]
      : [];
  });
}

export function formatUnservable(
  file: string,
  tasks: readonly { id: string; capability: string; reason: string }[],
  hosts: readonly LiveHost[],
): string {
  const served = [...new Set(hosts.flatMap((host) => host.clis.flatMap((cli) => cli.capabilities)))].sort();
  const lines = tasks.map((task) => `  task '${task.id}' (capability ${task.capability}): ${task.reason}`);
  return [
    `${file}: ${tasks.length === 1 ? 'a task' : `${tasks.length} tasks`} cannot run on these hosts, so the mission was not submitted:`,
    ...lines,
    `  the hosts serve: ${served.join(', ') || 'nothing'}`,
  ].join('\n');
}

/** The stand-in agent that ships with flotilla, by absolute path, so the hint works from any folder. */
export const STAND_IN = {
  adapters: join(PACKAGE_ROOT, 'examples', 'adapters'),
  bin: join(PACKAGE_ROOT, 'examples', 'bin'),
} as const;

/**
 * Why no agent CLI was found, with each adapter's own reason (`flotilla-sim: command not found`)
 * and what to do next, by absolute path. The `--adapters` hint is given only to someone who did
 * not pass it.
 */
export async function noCliMessage(dir: string, adaptersGiven: boolean): Promise<string> {
  const folder = resolve(dir);
  let reasons: string[] = [];
  try {
    const { adapters } = await loadAdapters(folder);
    reasons = (await detectClis(adapters)).map(
      (cli) => `${cli.adapter.cli}: ${cli.reason ?? 'not available'}`,
    );
  } catch (error) {
    reasons = [error instanceof Error ? error.message : String(error)];
  }
  const usesStandIn = folder === STAND_IN.adapters;
  const next = usesStandIn
    ? `put the stand-in on PATH: PATH="${STAND_IN.bin}:$PATH"`
    : adaptersGiven
      ? 'install and log in to one of these CLIs (flotilla detect shows what this machine has)'
      : `install and log in to one of these CLIs, or try the stand-in agent: PATH="${STAND_IN.bin}:$PATH" flotilla run <mission.yaml> --adapters ${STAND_IN.adapters}`;
  const why = reasons.length > 0 ? reasons.join('; ') : 'the folder holds no available adapter';
  return `no agent CLI detected from ${folder} (${why}); ${next}`;
}
