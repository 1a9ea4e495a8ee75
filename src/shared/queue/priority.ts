import { type DagTask, dependentsOf, topologicalOrder } from '../dag.js';

/**
 * Run-job priorities from the task graph, so ready tasks start longest-chain-first instead of in
 * the order the gates released them (docs/ARCHITECTURE.md, "Order among ready tasks").
 *
 * BullMQ serves a queue's prioritized jobs by priority, lowest number first, FIFO within a
 * number; 0 means "no priority" and is served before every prioritized job, so every run job
 * gets at least 1. The scale is relative to the mission's own longest chain, in a few levels:
 * every mission's critical path is level 1, whatever its depth, so a deep mission and a flat one
 * meet at level 1 on a shared queue and take turns there in release order; depth buys a task
 * precedence only over its own mission's shorter chains and over other missions' side tasks.
 * Aging (`PRIORITY_AGE_MS`, applied by the hosts) bounds how long another mission can overtake a
 * side task.
 */

/** BullMQ's prioritized set scores a job `priority × 2³² + counter` (getPriorityScore.lua). */
export const PRIORITY_SCORE_SCALE = 0x1_0000_0000;

/** Levels of the scale: enough to order a mission of depth 8 exactly, few enough to age cheaply. */
export const PRIORITY_LEVELS = 8;

/** The top level: a mission's critical path, and a job that waited `PRIORITY_AGE_MS` behind another mission's. */
export const TOP_PRIORITY = 1;

/**
 * How long a run job may wait at a lower level before a host lifts it to the top. Long enough
 * that the critical path wins in the usual case (ready tasks of a busy mission wait seconds to a
 * minute for a slot), short enough that no task waits behind other missions' work for long.
 */
export const PRIORITY_AGE_MS = 120_000;

/**
 * For each task, the number of tasks on its longest chain of dependents, itself included: 1 for a
 * task nothing depends on, n for the head of a chain of n. Iterative, over a validated graph
 * (topologicalOrder throws on a cycle).
 */
export function chainLengths(tasks: readonly DagTask[]): Map<string, number> {
  const dependents = dependentsOf(tasks);
  const chain = new Map<string, number>();
  for (const id of topologicalOrder(tasks).reverse()) {
    const below = dependents.get(id) ?? [];
    chain.set(id, 1 + below.reduce((longest, d) => Math.max(longest, chain.get(d) ?? 0), 0));
  }
  return chain;
}

/**
 * The BullMQ priority of each task's run jobs: `TOP_PRIORITY` for the tasks on the mission's
 * longest chain, down to `PRIORITY_LEVELS` for the shortest chains, in proportion to the longest.
 */
export function runPriorities(tasks: readonly DagTask[]): Map<string, number> {
  const chain = chainLengths(tasks);
  const longest = Math.max(1, ...chain.values());
  const priorities = new Map<string, number>();
  for (const [id, length] of chain) {
    const level = TOP_PRIORITY + Math.floor(((longest - length) * PRIORITY_LEVELS) / longest);
    priorities.set(id, Math.min(PRIORITY_LEVELS, level));
  }
  return priorities;
}
