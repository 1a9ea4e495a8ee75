/**
 * Where a host keeps its warm checkouts: `<home>/checkouts/p<N>`, claimed with a lock file that
 * names the owning process. Host ids change with every start, so a folder per host id would never
 * be warm again after a restart and would pile up; a claimed slot is taken over by the next host
 * once its owner is gone, checkouts and all, while two live processes never share one (their
 * pools are in memory and would hand one checkout to two jobs).
 */
import { mkdir, open, readdir, readFile, readlink, unlink } from 'node:fs/promises';
import { join } from 'node:path';

const claimed = new Set<string>();

export function checkoutsDir(home: string): string {
  return join(home, 'checkouts');
}

/** True when `pid` is a live process (signal 0 only checks; EPERM means alive but not ours). */
export function processAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The pid in a slot's lock file, or null when there is none. */
export async function lockOwner(lockFile: string): Promise<number | null> {
  const text = await readFile(lockFile, 'utf8').catch(() => null);
  return text === null ? null : Number.parseInt(text, 10);
}

/** True when nobody alive holds slot `name` (a folder `p<N>` under checkoutsDir). */
export async function slotFree(dir: string, name: string): Promise<boolean> {
  if (claimed.has(join(dir, name))) return false;
  const owner = await lockOwner(join(dir, `${name}.lock`));
  return owner === null || !processAlive(owner);
}

export interface CheckoutRoot {
  readonly dir: string;
  /** Pids of processes a dead owner left working in these checkouts, killed when the slot was taken. */
  readonly orphansKilled: readonly number[];
  /** Gives the slot up (host closed); the checkouts stay for the next host. */
  release(): Promise<void>;
}

/** Claims the lowest free slot. */
export async function claimCheckoutRoot(home: string): Promise<CheckoutRoot> {
  const dir = checkoutsDir(home);
  await mkdir(dir, { recursive: true });
  for (let n = 0; ; n++) {
    const name = `p${n}`;
    const root = join(dir, name);
    const lock = join(dir, `${name}.lock`);
    if (!(await slotFree(dir, name))) continue;
    claimed.add(root);
    // A dead owner's lock goes; of two processes racing for it, the exclusive create picks one.
    const owner = await lockOwner(lock);
    if (owner !== null) await unlink(lock).catch(() => undefined);
    const handle = await open(lock, 'wx').catch(() => null);
    if (!handle) {
      claimed.delete(root);
      continue;
    }
    await handle.writeFile(String(process.pid));
    await handle.close();
    // A dead owner's agents may live on (a host killed with SIGKILL does not take its CLIs' process
    // groups along): they would write into checkouts this host hands to new attempts.
    const orphans = owner !== null ? await killProcessesIn(root) : [];
    return {
      orphansKilled: orphans,
      dir: root,
      release: async () => {
        if (!claimed.delete(root)) return;
        if ((await lockOwner(lock)) === process.pid) await unlink(lock).catch(() => undefined);
      },
    };
  }
}

/**
 * Kills the orphans working inside `dir`: processes whose working directory is there and whose
 * parent is gone (re-parented to init, or to a systemd subreaper), with their process groups when
 * they lead one, as agent CLIs do. A process with a live parent — a person's shell in a checkout —
 * is left alone. Linux (/proc); elsewhere nothing is found. Only called for a slot whose owner is
 * dead.
 */
export async function killProcessesIn(dir: string): Promise<number[]> {
  const killed: number[] = [];
  const entries = await readdir('/proc').catch(() => [] as string[]);
  for (const entry of entries) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    const cwd = await readlink(`/proc/${entry}/cwd`).catch(() => null);
    if (cwd === null || (cwd !== dir && !cwd.startsWith(`${dir}/`))) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => null);
    if (stat === null) continue;
    // Fields after the command name (which may hold spaces): state, ppid, pgrp, …
    const [, ppid, pgid] = stat
      .slice(stat.lastIndexOf(')') + 2)
      .split(' ')
      .map(Number);
    const parent = ppid ? (await readFile(`/proc/${ppid}/comm`, 'utf8').catch(() => '')).trim() : '';
    if (ppid !== 1 && parent !== 'systemd') continue;
    const pid = Number(entry);
    try {
      process.kill(pgid === pid ? -pid : pid, 'SIGKILL');
      killed.push(pid);
    } catch {
      // gone meanwhile, or not ours to signal
    }
  }
  return killed;
}
