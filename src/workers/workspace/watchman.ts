/**
 * A file-system monitor for warm checkouts and the origin guard: a connection to a Watchman
 * daemon, which says which files changed in a directory since a clock it handed out. With it, an
 * attempt's listing and the next lease's reset look only at what changed (warm-checkout.ts), and
 * the origin guard at what changed in the user's repository (agent/origin-guard.ts), instead of
 * walking trees of tens of thousands of files (docs/ARCHITECTURE.md, "A file-system monitor").
 *
 * Opt-in (`FLOTILLA_WATCHMAN=on`, or a socket path): on the 2-core benchmark machine it cuts a
 * task's git time on an 80,000-file tree 4–5× but not its wall time: Watchman 4.9 holds answers
 * for seconds while it crawls (docs/BENCHMARKS.md, "Watchman").
 * Whenever it cannot answer (restarted, recrawled, out of inotify watches, slow) every caller
 * walks the tree, as without it.
 */
import { execFile } from 'node:child_process';
import { createConnection, type Socket } from 'node:net';
import type { FileMonitor, MonitoredChange, MonitoredChanges } from './monitor-contract.js';

/**
 * How long one answer may take: a query waits for Watchman to have seen every earlier change.
 * Short, because the walk it saves costs well under a second even on a kernel tree: Watchman 4.9
 * held answers for seconds while it crawled another new checkout (docs/BENCHMARKS.md, "Watchman").
 */
const ANSWER_MS = 2_000;

/** How long stopping a watch may take: Watchman frees a big tree's state first. */
const STOP_MS = 10_000;

interface Pending {
  readonly resolve: (value: Record<string, unknown>) => void;
  readonly reject: (error: Error) => void;
}

/** JSON PDUs over Watchman's unix socket, one command answered at a time, in order. */
class WatchmanConnection {
  private socket: Socket | null = null;
  private buffer = '';
  private readonly pending: Pending[] = [];

  constructor(private readonly sockname: string) {}

  command(args: readonly unknown[], answerMs = ANSWER_MS): Promise<Record<string, unknown>> {
    const socket = this.connect();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new Error(`watchman: no answer to ${String(args[0])} in ${answerMs} ms`));
        this.reset(new Error('watchman: connection dropped after a timeout'));
      }, answerMs);
      timer.unref();
      this.pending.push({
        resolve: (value) => {
          clearTimeout(timer);
          resolve(value);
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      });
      socket.write(`${JSON.stringify(args)}\n`);
    });
  }

  close(): void {
    this.reset(new Error('watchman: connection closed'));
  }

  private connect(): Socket {
    if (this.socket) return this.socket;
    const socket = createConnection(this.sockname);
    socket.setEncoding('utf8');
    socket.unref();
    socket.on('data', (chunk: string) => this.receive(chunk));
    socket.on('error', (error) => this.reset(error));
    socket.on('close', () => this.reset(new Error('watchman: connection closed')));
    this.socket = socket;
    return socket;
  }

  private receive(chunk: string): void {
    this.buffer += chunk;
    for (let end = this.buffer.indexOf('\n'); end !== -1; end = this.buffer.indexOf('\n')) {
      const line = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 1);
      if (line.trim() === '') continue;
      let pdu: Record<string, unknown>;
      try {
        pdu = JSON.parse(line) as Record<string, unknown>;
      } catch {
        this.reset(new Error('watchman: an answer that is not JSON'));
        return;
      }
      // Log lines and subscription pushes are not answers.
      if (pdu.unilateral === true || 'log' in pdu) continue;
      const waiting = this.pending.shift();
      if (!waiting) continue;
      if (typeof pdu.error === 'string') waiting.reject(new Error(`watchman: ${pdu.error}`));
      else waiting.resolve(pdu);
    }
  }

  private reset(error: Error): void {
    const socket = this.socket;
    this.socket = null;
    this.buffer = '';
    socket?.destroy();
    for (const waiting of this.pending.splice(0)) waiting.reject(error);
  }
}

interface Watched {
  readonly root: string;
  readonly relative?: string;
  /** This directory's own connection: Watchman answers a connection's commands in order, so one
   * slow answer (a first crawl, a sync on a busy tree) must not hold up another checkout's. */
  readonly connection: WatchmanConnection;
}

/** A suffix no file has: a query by it reads Watchman's suffix index, never the whole tree. */
const NO_SUCH_SUFFIX = 'flotilla-no-such-suffix';

/** How long a new checkout's first clock may wait for Watchman's crawl of it. */
const SETTLE_MS = 60_000;

/** After this many answers in a row that did not come in time, a directory is left to the walks… */
const TIMEOUTS_BEFORE_RESPITE = 3;

/** …for this long. */
const RESPITE_MS = 10 * 60_000;

export class WatchmanMonitor implements FileMonitor {
  private readonly watched = new Map<string, Promise<Watched>>();
  /** Directories whose answers kept timing out, until when they are left to the walks. */
  private readonly failedUntil = new Map<string, number>();
  /** Answers in a row that timed out, by directory. */
  private readonly timeouts = new Map<string, number>();

  constructor(
    private readonly sockname: string,
    private readonly answerMs = ANSWER_MS,
  ) {}

  /**
   * A query that matches nothing, for its clock. No sync: a change made before this call but seen
   * by Watchman after it counts as made since the clock, so a caller looks at one path more, never
   * at one too few. `settle` (a new checkout) waits for Watchman's first crawl of it instead,
   * which would otherwise hold up the first query later. Not the `clock` command: Watchman 4.9
   * held a `clock` for a checkout just reset for seconds on a busy host, while queries of the
   * same checkout answered in milliseconds (docs/BENCHMARKS.md, "Watchman").
   */
  async clock(dir: string, options: { readonly settle?: boolean } = {}): Promise<string | null> {
    const settle = options.settle ?? false;
    const spec = { suffix: [NO_SUCH_SUFFIX], expression: ['false'], fields: ['name'] };
    const answer = await this.query(dir, spec, settle ? SETTLE_MS : 0, settle);
    return typeof answer?.clock === 'string' ? answer.clock : null;
  }

  async changedSince(dir: string, clock: string): Promise<MonitoredChanges | null> {
    const spec = { since: clock, fields: ['name', 'exists', 'type', 'new'], empty_on_fresh_instance: true };
    const answer = await this.query(dir, spec, Math.floor(this.answerMs / 2));
    // A fresh instance: Watchman restarted or recrawled, so it cannot say what changed since then.
    if (answer?.is_fresh_instance !== false || !Array.isArray(answer.files)) return null;
    if (typeof answer.clock !== 'string') return null;
    return { changes: answer.files as MonitoredChange[], clock: answer.clock };
  }

  /**
   * One query of `dir`'s watch (made first); null when it failed or `dir` is resting. A failure
   * of a new checkout's first (`settle`) query drops its watch; any other goes to failed().
   */
  private async query(
    dir: string,
    spec: Record<string, unknown>,
    syncMs: number,
    settle = false,
  ): Promise<Record<string, unknown> | null> {
    if (this.resting(dir)) return null;
    try {
      const { root, relative, connection } = await this.watch(dir, settle);
      const answer = await connection.command(
        ['query', root, { ...spec, sync_timeout: syncMs, ...(relative ? { relative_root: relative } : {}) }],
        settle ? SETTLE_MS + this.answerMs : this.answerMs,
      );
      this.timeouts.delete(dir);
      return answer;
    } catch (error) {
      if (settle) await this.unwatch(dir);
      else await this.failed(dir, error);
      return null;
    }
  }

  declines(): boolean {
    return false;
  }

  async forget(dir: string): Promise<void> {
    await this.unwatch(dir);
  }

  async forgetUnder(prefix: string): Promise<void> {
    const under = (path: string) => path === prefix || path.startsWith(`${prefix.replace(/\/+$/, '')}/`);
    for (const dir of [...this.watched.keys()].filter(under)) this.drop(dir);
    const connection = new WatchmanConnection(this.sockname);
    try {
      const answer = await connection.command(['watch-list'], STOP_MS);
      const roots = Array.isArray(answer.roots)
        ? answer.roots.filter((r): r is string => typeof r === 'string')
        : [];
      for (const root of roots.filter(under))
        await connection.command(['watch-del', root], STOP_MS).catch(() => undefined);
    } catch {
      // Nothing to stop watching, or no daemon: the deletion goes ahead either way.
    } finally {
      connection.close();
    }
  }

  private resting(dir: string): boolean {
    const until = this.failedUntil.get(dir);
    if (until === undefined) return false;
    if (Date.now() < until) return true;
    this.failedUntil.delete(dir);
    return false;
  }

  /**
   * A failed answer. One that did not come in time (a busy daemon) costs only this question: the
   * connection goes (a late answer would be taken for the next one's) and the watch stays, so the
   * checkout's clean record still holds. Timeouts in a row mean a watch that cannot sync (seen
   * when a repository was deleted and cloned again at the same path): it is dropped, and the
   * directory is left to the walks for a while, so it costs a few waits, not one per run. Any
   * other failure (a restarted daemon that no longer knows the root, a closed connection) is
   * mended by a new watch at once.
   */
  private async failed(dir: string, error: unknown): Promise<void> {
    if (!(error instanceof Error && /sync_timeout|no answer/.test(error.message))) {
      await this.unwatch(dir);
      return;
    }
    const inARow = (this.timeouts.get(dir) ?? 0) + 1;
    if (inARow < TIMEOUTS_BEFORE_RESPITE) {
      this.timeouts.set(dir, inARow);
      this.drop(dir);
      return;
    }
    this.timeouts.delete(dir);
    this.failedUntil.set(dir, Date.now() + RESPITE_MS);
    await this.unwatch(dir);
  }

  /**
   * Stops watching `dir` and drops its connection, so the next call watches it afresh (a new
   * clock, and the callers walk once). Also what a failed answer leads to: a watch whose sync
   * never completes is broken for good (seen when a repository was deleted and cloned again at
   * the same path: Watchman's cookies in its `.git` were never seen), and only a new watch mends it.
   */
  private async unwatch(dir: string): Promise<void> {
    const watched = await this.watched.get(dir)?.catch(() => null);
    this.drop(dir);
    if (watched && !watched.relative) {
      const connection = new WatchmanConnection(this.sockname);
      await connection.command(['watch-del', watched.root], STOP_MS).catch(() => undefined);
      connection.close();
    }
  }

  close(): void {
    for (const dir of [...this.watched.keys()]) this.drop(dir);
  }

  private drop(dir: string): void {
    const watched = this.watched.get(dir);
    this.watched.delete(dir);
    void watched?.then((w) => w.connection.close()).catch(() => undefined);
  }

  /** `settle`: a new checkout, whose first watch crawls it (seconds for a kernel tree, under load). */
  private watch(dir: string, settle = false): Promise<Watched> {
    let watched = this.watched.get(dir);
    if (!watched) {
      const connection = new WatchmanConnection(this.sockname);
      watched = connection
        .command(['watch-project', dir], settle ? SETTLE_MS + this.answerMs : this.answerMs)
        .then(
          (answer) => {
            if (typeof answer.watch !== 'string') throw new Error(`watchman: cannot watch ${dir}`);
            const relative = typeof answer.relative_path === 'string' ? answer.relative_path : undefined;
            return { root: answer.watch, connection, ...(relative ? { relative } : {}) };
          },
          (error: unknown) => {
            connection.close();
            throw error;
          },
        );
      this.watched.set(dir, watched);
    }
    return watched;
  }
}

/**
 * Where the daemon listens, or null: not asked for (the default), turned off, not installed, or
 * not answering. `FLOTILLA_WATCHMAN=on` uses Watchman's own `WATCHMAN_SOCK`, else asks the
 * `watchman` on PATH for its socket (which starts the daemon if none runs); any other value but
 * `off` is a socket path.
 */
export async function findWatchmanSocket(
  env: Readonly<Record<string, string | undefined>> = process.env,
): Promise<string | null> {
  const setting = env.FLOTILLA_WATCHMAN?.trim() ?? '';
  if (['', 'off', '0', 'false'].includes(setting)) return null;
  if (!['on', '1', 'true', 'auto'].includes(setting)) return setting;
  if (env.WATCHMAN_SOCK) return env.WATCHMAN_SOCK;
  return new Promise((resolve) => {
    execFile('watchman', ['--no-pretty', 'get-sockname'], { timeout: 10_000, env }, (error, stdout) => {
      if (error) return resolve(null);
      try {
        const answer = JSON.parse(stdout) as { sockname?: unknown };
        resolve(typeof answer.sockname === 'string' ? answer.sockname : null);
      } catch {
        resolve(null);
      }
    });
  });
}

/** A monitor on a given socket (tests, and hosts told where the daemon is); `answerMs` for tests. */
export function watchmanMonitor(sockname: string, answerMs?: number): FileMonitor {
  return new WatchmanMonitor(sockname, answerMs);
}
