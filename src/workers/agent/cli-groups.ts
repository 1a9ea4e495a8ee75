import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { rewriteInPlace } from '../../shared/file-in-place.js';

/**
 * The process groups of the agent CLIs a host started, one file each under the host's folder of
 * FLOTILLA_HOME (`hosts/<host-id>/cli-groups/`). A CLI runs in its own group so a timeout or
 * a cancel can kill its whole tree; the other side is that a host killed with SIGKILL leaves it
 * running, spending tokens, while another host redoes the attempt. A host started again with the
 * same `--host-id` reads these files and kills what is left before it takes a job.
 *
 * It kills only what is an orphan: each record names the host process that wrote it (its pid and
 * start time) and the cluster it serves (the id its Redis holds, registry.ts `clusterId`); a group
 * whose host process still runs — another `flotilla worker` with this id for another cluster, or a
 * `flotilla run` beside it — is that host's, and a dead host's group of another cluster is left for
 * that cluster's host. Each record also holds the group leader's start time (from /proc), so a
 * process id the kernel has since given to an unrelated program is never killed. Where /proc
 * cannot be read the start time is unknown and the group is left alone: a wrong kill is worse than
 * an orphan.
 */
export interface CliGroups {
  record(pgid: number): Promise<void>;
  forget(pgid: number): Promise<void>;
  /** Kills the groups dead hosts of this cluster left (start-up); returns the ones it killed. */
  killOrphans(): Promise<number[]>;
  /** Kills the groups this host still runs (the end of a shutdown); returns the ones it killed. */
  killRunning(): Promise<number[]>;
}

/** Who wrote a record: a host process, known by its pid and start time. */
export interface ProcessId {
  readonly pid: number;
  readonly startTime: string | null;
}

interface GroupRecord {
  readonly pgid: number;
  readonly startTime: string | null;
  /** Absent in records written before owners were recorded: the file name's pid stands in. */
  readonly owner?: ProcessId;
  readonly cluster?: string;
}

export function cliGroupsDir(home: string, hostId: string): string {
  return join(home, 'hosts', hostId, 'cli-groups');
}

/** This process, as a record names it. */
export function thisProcess(): ProcessId {
  return { pid: process.pid, startTime: startTimeOf(process.pid) };
}

/** True while the process `id` names runs (the same pid and, where known, the same start time). */
export function processRuns(id: ProcessId): boolean {
  if (!Number.isInteger(id.pid) || id.pid <= 0) return false;
  const now = startTimeOf(id.pid);
  if (now !== null && id.startTime !== null) return now === id.startTime;
  try {
    process.kill(id.pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The host's records are slot files named `<host pid>-<token>-<n>`, one per CLI running at once,
 * each rewritten in place (blanked when its CLI ends): a new file for every CLI run cost the host
 * a new inode twice a task, the dearest file call on a busy machine (docs/BENCHMARKS.md, "File
 * calls"). The pid and a token per host in the name keep two hosts from writing one file.
 */
export function createCliGroups(dir: string, cluster: string): CliGroups {
  const owner = thisProcess();
  const token = randomBytes(3).toString('hex');
  /** Each running group's slot file and the record written there, so a shutdown reads no file. */
  const slots = new Map<number, { slot: string; record: GroupRecord }>();
  const free: string[] = [];
  let made = 0;
  return {
    // Synchronous: a small local file, where a thread-pool round trip costs more than the write.
    async record(pgid) {
      let slot = free.pop();
      if (slot === undefined) {
        mkdirSync(dir, { recursive: true });
        slot = join(dir, `${process.pid}-${token}-${made++}`);
      }
      const record: GroupRecord = { pgid, startTime: startTimeOf(pgid), owner, cluster };
      rewriteInPlace(slot, JSON.stringify(record));
      slots.set(pgid, { slot, record });
    },
    async forget(pgid) {
      const slot = slots.get(pgid)?.slot;
      if (slot === undefined) return;
      slots.delete(pgid);
      // Blank, not emptied: emptying a file that holds data costs a write to disk (file-in-place.ts).
      rewriteInPlace(slot, ' ');
      free.push(slot);
    },
    async killOrphans() {
      const names = await readdir(dir).catch(() => [] as string[]);
      const killed: number[] = [];
      for (const name of names) {
        const file = join(dir, name);
        const recorded = await readRecord(file);
        const writer = recorded?.owner ?? { pid: Number.parseInt(name, 10), startTime: null };
        // A live host's file, even one it is rewriting this instant (which reads as nothing).
        if (processRuns(writer)) continue;
        // A dead host of another cluster: its own cluster's host sweeps it.
        if (recorded?.cluster !== undefined && recorded.cluster !== cluster) continue;
        await rm(file, { force: true });
        if (recorded && killGroup(recorded)) killed.push(recorded.pgid);
      }
      return killed;
    },
    async killRunning() {
      const killed: number[] = [];
      for (const [pgid, { slot, record }] of slots) {
        if (killGroup(record)) killed.push(pgid);
        await rm(slot, { force: true });
      }
      for (const slot of free) await rm(slot, { force: true });
      slots.clear();
      free.length = 0;
      return killed;
    },
  };
}

/** A slot file's record; null when it is blank (its CLI ended) or cannot be read. */
function readRecord(file: string): Promise<GroupRecord | null> {
  return readFile(file, 'utf8')
    .then((text) => (text.trim() ? (JSON.parse(text) as GroupRecord) : null))
    .catch(() => null);
}

/** SIGKILL to the group `recorded` names, if its leader is still the process recorded; true if sent. */
function killGroup(recorded: GroupRecord): boolean {
  const pgid = recorded.pgid;
  if (!pgid || !recorded.startTime || startTimeOf(pgid) !== recorded.startTime) return false;
  try {
    process.kill(-pgid, 'SIGKILL');
    return true;
  } catch {
    return false; // gone meanwhile
  }
}

/** Field 22 of /proc/<pid>/stat: the process's start time in clock ticks since boot; null if unknown. */
export function startTimeOf(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: count from its closing one.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}
