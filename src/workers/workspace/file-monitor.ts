/**
 * A file-system monitor says which files changed in a directory since a clock it handed out. With
 * one, an attempt's listing and the next lease's reset look only at what changed
 * (workspace/monitored-checkout.ts), and the origin guard at what changed in the user's repository
 * (agent/origin-guard.ts), instead of walking trees of tens of thousands of files
 * (docs/ARCHITECTURE.md, "A file-system monitor"). Two kinds: the host's own inotify watches
 * (inotify-monitor.ts) and a Watchman daemon (watchman.ts). Opt-in; whenever a monitor cannot
 * answer, every caller walks the tree, as without one.
 */
import { InotifyMonitor } from './inotify-monitor.js';
import type { FileMonitor } from './monitor-contract.js';
import { findWatchmanSocket, WatchmanMonitor } from './watchman.js';

export type { FileMonitor, MonitoredChange, MonitoredChanges } from './monitor-contract.js';

export type MonitorKind = 'auto' | 'inotify' | 'watchman' | 'off';

/**
 * The monitor a host uses: `FLOTILLA_MONITOR` — `auto` (the default: the host's own inotify
 * watches on Linux, for trees of AUTO_MIN_ENTRIES or more), `inotify` (every tree), `watchman`,
 * `off`. Unset, a `FLOTILLA_WATCHMAN` that asks for Watchman still gets it.
 */
export function monitorKind(env: Readonly<Record<string, string | undefined>> = process.env): MonitorKind {
  const setting = env.FLOTILLA_MONITOR?.trim().toLowerCase() ?? '';
  const linux = (kind: MonitorKind): MonitorKind => (process.platform === 'linux' ? kind : 'off');
  if (setting === 'inotify') return linux('inotify');
  if (setting === 'watchman' || setting === 'off') return setting;
  if (setting !== '' && setting !== 'auto') return 'off';
  const watchman = env.FLOTILLA_WATCHMAN?.trim() ?? '';
  return setting === '' && !['', 'off', '0', 'false'].includes(watchman) ? 'watchman' : linux('auto');
}

/**
 * Below this many files and folders a tree is left to the walks under `auto`: git's walk of a small
 * tree costs a few milliseconds, less than the extra git processes of a reset by changed paths
 * (docs/BENCHMARKS.md, "The host's own watches"). About where the origin guard stops walking too
 * (WALKED_INDEX_BYTES).
 */
export const AUTO_MIN_ENTRIES = 10_000;

let shared: Promise<FileMonitor | null> | null = null;

/** This process's monitor (one, made once), or null when there is none. */
export function fileMonitor(): Promise<FileMonitor | null> {
  shared ??= makeMonitor(process.env);
  return shared;
}

/** The monitor, unless there is none or it leaves `dir` to the walks. */
export async function monitorFor(dir: string): Promise<FileMonitor | null> {
  const monitor = await fileMonitor();
  return monitor && !monitor.declines(dir) ? monitor : null;
}

async function makeMonitor(env: Readonly<Record<string, string | undefined>>): Promise<FileMonitor | null> {
  const kind = monitorKind(env);
  if (kind === 'auto') return new InotifyMonitor({ minEntries: AUTO_MIN_ENTRIES });
  if (kind === 'inotify') return new InotifyMonitor();
  if (kind === 'off') return null;
  const asked = env.FLOTILLA_WATCHMAN?.trim() ?? '';
  const watchman = ['', 'off', '0', 'false'].includes(asked) ? 'on' : asked;
  const sockname = await findWatchmanSocket({ ...env, FLOTILLA_WATCHMAN: watchman });
  return sockname ? new WatchmanMonitor(sockname) : null;
}

/** Forgets the shared monitor (tests that change FLOTILLA_WATCHMAN between cases). */
export function resetFileMonitor(): void {
  void shared?.then((monitor) => monitor?.close());
  shared = null;
}
