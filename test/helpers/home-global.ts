/**
 * vitest's global setup: a FLOTILLA_HOME of the suite's own, so that nothing a test starts without
 * one (an in-process loadConfig(), a CLI run with the parent's environment) touches the user's
 * ~/.cache/flotilla, its caches or the machine's own Redis there. Tests that need a home of their
 * own still set one. At the end, a redis-server some test left up under it is stopped.
 */
import { mkdtemp, readdir, readlink, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

let home: string | undefined;

export async function setup(): Promise<void> {
  if (process.env.FLOTILLA_HOME) return;
  home = await mkdtemp(join(tmpdir(), 'flotilla-suite-home-'));
  process.env.FLOTILLA_HOME = home;
}

export async function teardown(): Promise<void> {
  if (!home) return;
  for (const entry of await readdir('/proc').catch(() => [])) {
    if (!/^\d+$/.test(entry)) continue;
    const cwd = await readlink(`/proc/${entry}/cwd`).catch(() => '');
    if (cwd === join(home, 'redis')) process.kill(Number(entry), 'SIGKILL');
  }
  await rm(home, { recursive: true, force: true });
}
