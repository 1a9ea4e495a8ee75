/**
 * vitest's global setup: one private Watchman daemon for the whole suite, so every warm checkout a
 * test makes is monitored (as on a host with `FLOTILLA_WATCHMAN=on`; hosts default to the walks,
 * which keep their own tests), and no test touches a user's own daemon. `FLOTILLA_WATCHMAN` set by
 * the caller wins (`off` to run the suite on the walks alone).
 */
import { startWatchman, type WatchmanHandle } from './watchman.js';

let handle: WatchmanHandle | undefined;

export async function setup(): Promise<void> {
  if (process.env.FLOTILLA_WATCHMAN) return;
  handle = await startWatchman();
  process.env.FLOTILLA_WATCHMAN = handle.sockname;
}

export async function teardown(): Promise<void> {
  await handle?.stop();
}
