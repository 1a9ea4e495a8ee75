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

export type MonitorKind = 'inotify' | 'watchman' | 'off';

/**
 * The monitor a host uses: `FLOTILLA_MONITOR` (`inotify`, the host's own watches, Linux only;
 * `watchman`; `off`), else Watchman when `FLOTILLA_WATCHMAN` asks for it, else none.
 */
export function monitorKind(env: Readonly<Record<string, string | undefined>> = process.env): MonitorKind {
  const setting = env.FLOTILLA_MONITOR?.trim().toLowerCase() ?? '';
  if (setting === 'inotify') return process.platform === 'linux' ? 'inotify' : 'off';
  if (setting === 'watchman') return 'watchman';
  if (setting !== '') return 'off';
  const watchman = env.FLOTILLA_WATCHMAN?.trim() ?? '';
  return ['', 'off', '0', 'false'].includes(watchman) ? 'off' : 'watchman';
}

let shared: Promise<FileMonitor | null> | null = null;

/** This process's monitor (one, made once), or null when there is none. */
export function fileMonitor(): Promise<FileMonitor | null> {
  shared ??= makeMonitor(process.env);
  return shared;
}

async function makeMonitor(env: Readonly<Record<string, string | undefined>>): Promise<FileMonitor | null> {
  const kind = monitorKind(env);
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
