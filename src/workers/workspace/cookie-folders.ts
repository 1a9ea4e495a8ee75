/**
 * The inotify monitor's cookie folders (inotify-monitor.ts): a folder in the temp directory per
 * monitor, where a file written and seen again says every event before it has been read. Each is
 * named after the process that made it (`flotilla-monitor-<pid>-XXXXXX`) and removed however the
 * process ends: by the monitor's close(), by an `exit` hook (a run that ends without closing its
 * monitor, the exit a second Ctrl-C forces), and, for a process killed outright, by the next
 * process that makes one, which removes those of processes no longer alive.
 */
import { readdirSync, rmSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const PREFIX = 'flotilla-monitor-';
const OWNED = /^flotilla-monitor-(\d+)-/;

/** This process's folders not yet removed; the exit hook removes what is left. */
const made = new Set<string>();
let hooked = false;
let swept = false;

function removeAll(): void {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
  made.clear();
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: a process of another user holds the pid, so it lives.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Removes the cookie folders of processes that died without removing theirs (kill -9). */
function sweepDead(root: string): void {
  let names: string[];
  try {
    names = readdirSync(root);
  } catch {
    return;
  }
  for (const name of names) {
    const owner = OWNED.exec(name)?.[1];
    if (owner === undefined || Number(owner) === process.pid || alive(Number(owner))) continue;
    rmSync(join(root, name), { recursive: true, force: true });
  }
}

/** A new cookie folder in the temp directory, removed when this process exits at the latest. */
export async function makeCookieFolder(): Promise<string> {
  const root = tmpdir();
  if (!swept) {
    swept = true;
    sweepDead(root);
  }
  const dir = await mkdtemp(join(root, `${PREFIX}${process.pid}-`));
  made.add(dir);
  if (!hooked) {
    hooked = true;
    process.on('exit', removeAll);
  }
  return dir;
}

/** Removes a cookie folder now (synchronously: a close() right before the process exits). */
export function removeCookieFolder(dir: string): void {
  made.delete(dir);
  rmSync(dir, { recursive: true, force: true });
}
