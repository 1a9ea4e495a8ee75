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
 * Each file holds the group leader's start time (from /proc), so a process id the kernel has since
 * given to an unrelated program is never killed. Where /proc cannot be read the start time is
 * unknown and the group is left alone: a wrong kill is worse than an orphan.
 */
export interface CliGroups {
  record(pgid: number): Promise<void>;
  forget(pgid: number): Promise<void>;
  /** Kills the groups a previous run of this host left; returns the ones it killed. */
  killLeftovers(): Promise<number[]>;
}

export function cliGroupsDir(home: string, hostId: string): string {
  return join(home, 'hosts', hostId, 'cli-groups');
}

/**
 * The host's records are slot files named `<host pid>-<n>`, one per CLI running at once, each
 * rewritten in place (blanked when its CLI ends): a new file for every CLI run cost the host a
 * new inode twice a task, the dearest file call on a busy machine (docs/BENCHMARKS.md §22). The
 * pid in the name keeps two processes from writing one file.
 */
export function createCliGroups(dir: string): CliGroups {
  const slots = new Map<number, string>();
  const free: string[] = [];
  let made = 0;
  return {
    // Synchronous: a small local file, where a thread-pool round trip costs more than the write.
    async record(pgid) {
      let slot = free.pop();
      if (slot === undefined) {
        mkdirSync(dir, { recursive: true });
        slot = join(dir, `${process.pid}-${made++}`);
      }
      rewriteInPlace(slot, JSON.stringify({ pgid, startTime: startTimeOf(pgid) }));
      slots.set(pgid, slot);
    },
    async forget(pgid) {
      const slot = slots.get(pgid);
      if (slot === undefined) return;
      slots.delete(pgid);
      // Blank, not emptied: emptying a file that holds data costs a write to disk (file-in-place.ts).
      rewriteInPlace(slot, ' ');
      free.push(slot);
    },
    async killLeftovers() {
      const names = await readdir(dir).catch(() => [] as string[]);
      const killed: number[] = [];
      for (const name of names) {
        const file = join(dir, name);
        const recorded = await readFile(file, 'utf8')
          .then((text) => JSON.parse(text) as { pgid?: number; startTime?: string | null })
          .catch(() => null);
        await rm(file, { force: true });
        const pgid = recorded?.pgid;
        if (!pgid || !recorded.startTime || startTimeOf(pgid) !== recorded.startTime) continue;
        try {
          process.kill(-pgid, 'SIGKILL');
          killed.push(pgid);
        } catch {
          // gone meanwhile
        }
      }
      // Every file is gone: slots this process still holds are made again when next used.
      slots.clear();
      free.length = 0;
      return killed;
    },
  };
}

/** Field 22 of /proc/<pid>/stat: the process's start time in clock ticks since boot; null if unknown. */
function startTimeOf(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: count from its closing one.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}
