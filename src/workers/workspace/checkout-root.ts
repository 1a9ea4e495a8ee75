/**
 * Where a host keeps its warm checkouts: `<home>/checkouts/p<N>`, claimed with a lock file that
 * names the owning process. Host ids change with every start, so a folder per host id would never
 * be warm again after a restart and would pile up; a claimed slot is taken over by the next host
 * once its owner is gone, checkouts and all, while two live processes never share one (their
 * pools are in memory and would hand one checkout to two jobs).
 */
import { randomBytes } from 'node:crypto';
import { link, mkdir, readdir, readFile, readlink, unlink, writeFile } from 'node:fs/promises';
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
    if (claimed.has(root)) continue;
    claimed.add(root);
    const taken = await takeLock(lock).catch(() => null);
    if (!taken) {
      claimed.delete(root);
      continue;
    }
    // A dead owner's agents may live on (a host killed with SIGKILL does not take its CLIs' process
    // groups along): they would write into checkouts this host hands to new attempts.
    const orphans = taken.from !== null ? await killProcessesIn(root) : [];
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
 * Takes lock file `lock` for this process, or says it is held by a live one (null). Two processes
 * starting at once must never both take it (they would share checkouts and reset each other's
 * work; bench/scale.js saw it with 20 workers on one FLOTILLA_HOME), so:
 * - the lock appears whole: our pid is written to a file of our own and hard-linked into place,
 *   which fails if a lock exists; nobody ever reads a half-written (empty) lock as a dead owner's;
 * - a dead owner's lock is removed only by the holder of the slot's takeover mutex (`.takeover`,
 *   taken the same way), after it read the lock again: while a dead owner's lock is in place no
 *   fresh claim can succeed, so what it removes is that lock and never a live process's. A process
 *   killed within the few milliseconds it holds the mutex leaves the slot to be skipped.
 * `from` is the text of the dead owner's lock that was taken over, or null for a lock nobody held.
 * The lock holds `body` (this process's pid unless given); `held` says whether a lock's text names
 * a live owner (by default: its pid is a live process). The host's claim on its id uses both
 * (host/host-claim.ts).
 */
export async function takeLock(
  lock: string,
  body: string = String(process.pid),
  held: (text: string) => boolean = (text) => processAlive(Number.parseInt(text, 10)),
): Promise<{ from: string | null } | null> {
  const mine = `${lock}.${process.pid}-${randomBytes(4).toString('hex')}`;
  await writeFile(mine, body);
  const read = () => readFile(lock, 'utf8').catch(() => null);
  try {
    if (await linkNew(mine, lock)) return { from: null };
    const owner = await read();
    if (owner === null) return (await linkNew(mine, lock)) ? { from: null } : null;
    if (held(owner)) return null;
    const mutex = `${lock}.takeover`;
    if (!(await linkNew(mine, mutex))) return null;
    try {
      const current = await read();
      if (current !== null) {
        if (held(current)) return null;
        await unlink(lock);
      }
      return (await linkNew(mine, lock)) ? { from: current } : null;
    } finally {
      await unlink(mutex).catch(() => undefined);
    }
  } finally {
    await unlink(mine).catch(() => undefined);
  }
}

/** Hard-links `from` to `to`; false when `to` exists. */
async function linkNew(from: string, to: string): Promise<boolean> {
  try {
    await link(from, to);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
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
