/**
 * What the end-to-end scale run needs besides flotilla: the mission's shape, per-window figures
 * (does any per-task cost grow as the mission goes on?) and the worker processes' RSS and CPU.
 */
import { readFile } from 'node:fs/promises';
import { taskId } from './flotilla.js';

/**
 * The tasks of an `n`-task mission of one shape:
 * - `wide`: n independent tasks (every one a root; the heaviest submit), each writing `<id>.txt`;
 * - `deep-wide`: layers of `width` tasks, ceil(n / width) deep. Task c of layer l > 0 depends on
 *   tasks c and c + 1 (mod width) of layer l − 1, so every layer is cross-linked to the one above
 *   and a task is released only when both its parents are integrated. Each writes
 *   `l<layer>/<id>.txt`, so the integration branch's tree grows by directories, as a real repo's does.
 */
export function missionTasks(shape, n, width) {
  if (shape === 'wide') return Array.from({ length: n }, (_, i) => ({ id: taskId(i + 1) }));
  if (shape !== 'deep-wide') throw new Error(`unknown --shape ${shape} (expected wide or deep-wide)`);
  const w = Math.max(1, Math.min(width, n));
  const tasks = [];
  for (let i = 0; i < n; i++) {
    const layer = Math.floor(i / w);
    const column = i % w;
    const deps = [];
    if (layer > 0) {
      const above = (layer - 1) * w;
      deps.push(taskId(above + column + 1));
      const cross = above + ((column + 1) % w);
      if (w > 1 && cross !== above + column) deps.push(taskId(cross + 1));
    }
    tasks.push({
      id: taskId(i + 1),
      deps,
      path: `l${String(layer).padStart(3, '0')}/${taskId(i + 1)}.txt`,
    });
  }
  return tasks;
}

/** The depth of a shape: how many tasks its longest chain holds. */
export function shapeDepth(shape, n, width) {
  return shape === 'deep-wide' ? Math.ceil(n / Math.max(1, Math.min(width, n))) : 1;
}

/**
 * Progress samples (`{ t, done, commands, redisCpu, memory, rss, hostCpu }`, t in seconds, counters
 * cumulative) cut into windows of `size` completed tasks: each window's tasks/s and, per task
 * completed in it, Redis commands, Redis CPU ms and host CPU ms. A window runs from the first
 * sample at or past its start to the first at or past its end, so its boundaries are the sampler's
 * (every 2 s), not exact task counts.
 */
export function windowsOf(samples, size) {
  const windows = [];
  let start = samples[0];
  if (!start) return windows;
  for (const sample of samples) {
    if (sample.done - start.done < size && sample !== samples.at(-1)) continue;
    const tasks = sample.done - start.done;
    if (tasks <= 0) continue;
    const seconds = sample.t - start.t;
    windows.push({
      from: start.done,
      to: sample.done,
      seconds,
      tasksPerS: seconds > 0 ? tasks / seconds : Number.NaN,
      commandsPerTask: (sample.commands - start.commands) / tasks,
      redisCpuMsPerTask: ((sample.redisCpu - start.redisCpu) * 1000) / tasks,
      hostCpuMsPerTask: ((sample.hostCpu - start.hostCpu) * 1000) / tasks,
      memory: sample.memory,
      rss: sample.rss,
    });
    start = sample;
  }
  return windows;
}

/**
 * Per task, from its state and audit trail: how long it waited on a queue (routed → started), and
 * the stages' wall time: `run` (started → run entry: checkout, agent, commit, push), `agent` (the
 * CLI alone), `verify` (run entry → verify entry) and `gate` (verify entry → gate entry: the
 * approval and the merge into the integration branch).
 */
export function stageTimes(state, audit) {
  const at = (stage, kind) => {
    const entry = audit.filter((e) => e.stage === stage && (!kind || e.event?.kind === kind)).at(-1);
    return entry ? Date.parse(entry.at) : Number.NaN;
  };
  const route = audit.find((e) => e.event?.kind === 'route');
  const run = audit.filter((e) => e.event?.kind === 'run').at(-1);
  const started = Date.parse(state.startedAt ?? '');
  const runAt = run ? Date.parse(run.at) : Number.NaN;
  const verifyAt = at('verify');
  const gateAt = at('gate');
  return {
    waitMs: started - (route ? Date.parse(route.at) : Number.NaN),
    runMs: runAt - started,
    agentMs: run?.event?.durationMs ?? Number.NaN,
    verifyMs: verifyAt - runAt,
    gateMs: gateAt - verifyAt,
  };
}

/** Resident set size and CPU seconds (user + system) of a process, from /proc; zeros once gone. */
export async function processUsage(pid) {
  try {
    const [status, stat] = await Promise.all([
      readFile(`/proc/${pid}/status`, 'utf8'),
      readFile(`/proc/${pid}/stat`, 'utf8'),
    ]);
    const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
    // Fields after the command (which may hold spaces): utime and stime are the 14th and 15th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    return { rss: rssKb * 1024, cpu: ticks / 100 };
  } catch {
    return { rss: 0, cpu: 0 };
  }
}
