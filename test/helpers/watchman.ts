/**
 * A private Watchman daemon for tests (src/workers/workspace/watchman.ts), on its own socket in a temp
 * folder, as the Redis helper starts a private redis-server: isolated from a user's daemon, and
 * stopped at the end. Watchman is a test dependency like redis-server (.ci/run installs it).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';

export interface WatchmanHandle {
  readonly sockname: string;
  /** Stops the daemon and removes its folder. Idempotent. */
  stop(): Promise<void>;
  /** Stops the daemon and starts a new one on the same socket (a restart: earlier clocks are void). */
  restart(): Promise<void>;
}

const READY_MS = 15_000;

async function answers(sockname: string): Promise<boolean> {
  const probe = await execa('watchman', ['--no-spawn', '--no-local', `--sockname=${sockname}`, 'get-pid'], {
    reject: false,
    timeout: 5_000,
  });
  return probe.exitCode === 0;
}

export async function startWatchman(): Promise<WatchmanHandle> {
  const dir = await mkdtemp(join(tmpdir(), 'flotilla-watchman-'));
  const sockname = join(dir, 'sock');
  const launch = async () => {
    const daemon = execa(
      'watchman',
      [
        '--foreground',
        '--no-save-state',
        `--sockname=${sockname}`,
        `--logfile=${join(dir, 'log')}`,
        `--pidfile=${join(dir, 'pid')}`,
        `--statefile=${join(dir, 'state')}`,
      ],
      { reject: false, stdio: 'ignore', detached: false },
    );
    const started = Date.now();
    while (!(await answers(sockname))) {
      if (daemon.exitCode !== null || Date.now() - started > READY_MS) {
        throw new Error(`watchman did not start (is it installed? apt-get install watchman): ${dir}/log`);
      }
      await sleep(50);
    }
    // Wrapped: an execa process is a promise of its exit, which returning it would wait for.
    return { daemon };
  };
  let { daemon } = await launch();
  const shutdown = async () => {
    await execa('watchman', ['--no-spawn', '--no-local', `--sockname=${sockname}`, 'shutdown-server'], {
      reject: false,
      timeout: 5_000,
    });
    const exited = await Promise.race([daemon.then(() => true), sleep(5_000).then(() => false)]);
    if (!exited) daemon.kill('SIGKILL');
    await daemon;
  };
  let stopped = false;
  return {
    sockname,
    async stop() {
      if (stopped) return;
      stopped = true;
      await shutdown();
      await rm(dir, { recursive: true, force: true });
    },
    async restart() {
      await shutdown();
      ({ daemon } = await launch());
    },
  };
}
