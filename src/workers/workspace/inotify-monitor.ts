/**
 * A file-system monitor inside the host's own process (`FLOTILLA_MONITOR=inotify`, Linux): one
 * inotify watch per folder of a watched tree, through node's `fs.watch` (libuv keeps one inotify
 * instance for the process), and each change the kernel reports kept by path. No daemon and no
 * crawl of files: watching a tree lists its folders once, and a change costs a map entry. On the
 * 2-core benchmark machine Watchman 4.9 spent more CPU than the walks it saved (docs/BENCHMARKS.md,
 * "Watchman", "The host's own watches").
 *
 * Whenever it may have missed something, it says so (null), and callers walk:
 * - every answer first waits for a cookie file written after the question: inotify delivers one
 *   instance's events in order, so every change made before the question has been seen by then;
 * - a folder that appears is watched and everything in it counted as changed (what was written
 *   there before the watch took hold included); a folder that could not be watched, a watcher's
 *   error or a name that is not UTF-8 leaves the tree unanswerable until it is watched afresh;
 * - libuv drops the kernel's "queue overflowed" event, but an overflow takes a full queue
 *   (`/proc/sys/fs/inotify/max_queued_events`, 16,384 by default), and libuv reads the queue to
 *   its end each time: so a read of `overflowGuard` events or more at once (half the queue) makes
 *   every clock from before it unanswerable. A steady stream read as it comes (an `npm ci` in
 *   another checkout) does not.
 */
import { randomBytes } from 'node:crypto';
import { type FSWatcher, readFileSync, watch } from 'node:fs';
import { lstat, readdir, realpath, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { makeCookieFolder, removeCookieFolder } from './cookie-folders.js';
import type { FileMonitor, MonitoredChange, MonitoredChanges } from './monitor-contract.js';

/** How long an answer waits for its cookie: a host whose event loop is stalled this long walks. */
const COOKIE_MS = 2_000;

/** More changed paths than this and an answer would cost what the walk costs: callers walk. */
const ANSWER_LIMIT = 20_000;

/**
 * Changes kept per tree (a path changed again counts again): a clock older than the oldest of
 * them cannot be answered, and its caller walks once. A few megabytes at most.
 */
const KEPT_CHANGES = 100_000;

/** The kernel's default queue length, when /proc does not say. */
const DEFAULT_QUEUED_EVENTS = 16_384;

/** One path's last change. */
interface Change {
  /** The event count when it was seen. */
  readonly seq: number;
  /** Made, deleted or moved (not only written): a folder so changed is looked at whole. */
  readonly renamed: boolean;
  /** It was a watched folder when last seen, so a deletion of it is a folder's. */
  readonly folder: boolean;
}

interface Tree {
  readonly dir: string;
  /** `dir` with its links resolved, and its identity: a tree replaced under the same name is another. */
  real: string;
  dev: number;
  ino: number;
  /** Watched folders by path relative to `dir` (`''` is `dir` itself). */
  readonly folders: Map<string, FSWatcher>;
  /** Each path's last change. */
  readonly changes: Map<string, Change>;
  /** Every change in the order seen (so by `seq`), for an answer that costs what changed since. */
  log: { readonly seq: number; readonly path: string }[];
  /** What changed at or before this count is forgotten: an older clock cannot be answered. */
  floor: number;
  /** Something may have gone unseen: no answers until clock() watches the tree afresh. */
  broken: boolean;
  /** No longer watched (forgotten, closed, or replaced): work still under way for it stops. */
  dropped: boolean;
  /** The first listing, then each folder that appeared, watched and listed in event order. */
  busy: Promise<void>;
}

const CLOCK_PREFIX = 'inotify';

/**
 * The process's one inotify queue, shared by every monitor in it (libuv keeps one instance per
 * event loop): its events are counted here, and a read long enough to be an overflow is told to
 * every monitor alive, so an overflow caused through one makes the others' clocks unanswerable
 * too. flotilla makes no other `fs.watch` of its own.
 */
const queue = {
  /** Events delivered so far: the clocks. */
  seq: 0,
  /** Events delivered in the current read of the queue (one turn of the event loop). */
  burst: 0,
  monitors: new Set<InotifyMonitor>(),
};

/**
 * Counts one event from the kernel. libuv reads the whole queue in one go, calling back for each
 * event before the loop turns; a read as long as a monitor's guard is taken for an overflow, which
 * makes every clock of that monitor before its end unanswerable (while it lasts, every clock).
 */
function delivered(): void {
  queue.seq += 1;
  queue.burst += 1;
  if (queue.burst === 1) {
    setImmediate(() => {
      for (const monitor of queue.monitors) monitor.readEnded(queue.burst, queue.seq);
      queue.burst = 0;
    });
  }
  for (const monitor of queue.monitors) monitor.reading(queue.burst);
}

/** How long an answer waits for folders that appeared to be watched and listed before it walks. */
const SETTLE_MS = 2_000;

export class InotifyMonitor implements FileMonitor {
  private readonly trees = new Map<string, Tree>();
  private readonly instance = `${process.pid}-${randomBytes(6).toString('hex')}`;
  private cookies: Promise<{ readonly dir: string; readonly watcher: FSWatcher }> | null = null;
  private readonly waiting = new Map<string, () => void>();
  private cookieCount = 0;
  private readonly keptChanges: number;
  /** Trees with fewer files and folders than this are declined (0: none). */
  readonly minEntries: number;
  private readonly overflowGuard: number;
  /** A clock below this may have lost events to an overflowed queue. */
  private untrustedBefore = 0;
  /** Trees too small to watch (minEntries), left to the walks for this process's life. */
  private readonly declined = new Set<string>();

  constructor(
    options: {
      readonly overflowGuard?: number;
      readonly keptChanges?: number;
      readonly minEntries?: number;
    } = {},
  ) {
    this.overflowGuard = options.overflowGuard ?? Math.floor(queuedEventsLimit() / 2);
    queue.monitors.add(this);
    this.keptChanges = options.keptChanges ?? KEPT_CHANGES;
    this.minEntries = options.minEntries ?? 0;
  }

  /** A read of the queue is `burst` events long so far (delivered()). */
  reading(burst: number): void {
    if (burst === this.overflowGuard) this.untrustedBefore = Number.MAX_SAFE_INTEGER;
  }

  /** A read of the queue ended, `burst` events long, the last of them `seq`. */
  readEnded(burst: number, seq: number): void {
    if (burst >= this.overflowGuard) this.untrustedBefore = seq;
  }

  declines(dir: string): boolean {
    return this.declined.has(dir);
  }

  async clock(dir: string): Promise<string | null> {
    if (this.declined.has(dir)) return null;
    let tree = this.trees.get(dir);
    if (tree?.broken) {
      this.drop(tree);
      tree = undefined;
    }
    tree ??= this.watchTree(dir);
    // The first listing, and any folder that appeared, is watched before the clock is read: a
    // file written there later has its own event, one written before is listed with the folder.
    if (!(await settled(tree)) || tree.broken || tree.dropped) return null;
    return `${CLOCK_PREFIX}:${this.instance}:${queue.seq}`;
  }

  async changedSince(dir: string, clock: string): Promise<MonitoredChanges | null> {
    const since = this.parseClock(clock);
    const tree = this.trees.get(dir);
    if (since === null || !tree || tree.broken || since < tree.floor) return null;
    if (!(await this.flush())) return null;
    if (!(await settled(tree)) || !(await sameTree(tree))) return null;
    // Checked after the waits, with nothing awaited until the log is read: events during them may
    // have forgotten changes, broken the tree or overflowed the queue.
    if (tree.broken || tree.dropped || since < tree.floor || since < this.untrustedBefore) return null;
    const now = queue.seq;
    // Nothing is forgotten on answering: another caller may still ask from an older clock (two
    // runs' origin guards watching one repository).
    const changed = new Map<string, Change>();
    for (let i = firstAfter(tree.log, since); i < tree.log.length; i++) {
      const path = tree.log[i]?.path ?? '';
      const change = tree.changes.get(path);
      if (change) changed.set(path, change);
      if (changed.size > ANSWER_LIMIT) return null;
    }
    const changes: MonitoredChange[] = [];
    for (const [name, change] of changed) {
      const info = await lstat(join(dir, name)).catch(() => null);
      changes.push({
        name,
        exists: info !== null,
        type: info ? typeOf(info) : change.folder ? 'd' : 'f',
        new: change.renamed,
      });
    }
    return { changes, clock: `${CLOCK_PREFIX}:${this.instance}:${now}` };
  }

  async forget(dir: string): Promise<void> {
    const tree = this.trees.get(dir);
    if (tree) this.drop(tree);
  }

  async forgetUnder(prefix: string): Promise<void> {
    const top = prefix.replace(/\/+$/, '');
    for (const [dir, tree] of [...this.trees]) if (dir === top || dir.startsWith(`${top}/`)) this.drop(tree);
  }

  close(): void {
    queue.monitors.delete(this);
    for (const tree of [...this.trees.values()]) this.drop(tree);
    const cookies = this.cookies;
    this.cookies = null;
    void cookies
      ?.then(({ dir, watcher }) => {
        watcher.close();
        removeCookieFolder(dir);
      })
      .catch(() => undefined);
  }

  /** How many folders are watched under `dir` (tests, and the host's log). */
  watchedFolders(dir: string): number {
    return this.trees.get(dir)?.folders.size ?? 0;
  }

  private parseClock(clock: string): number | null {
    const [prefix, instance, count] = clock.split(':');
    if (prefix !== CLOCK_PREFIX || instance !== this.instance || !count || !/^\d+$/.test(count)) return null;
    return Number(count);
  }

  /**
   * Starts watching every folder of `dir`, its first listing on the tree's `busy`. A tree that
   * cannot be watched whole, or holds fewer than minEntries entries, is dropped (and a small one
   * declined for good).
   */
  private watchTree(dir: string): Tree {
    const tree: Tree = {
      dir,
      real: dir,
      dev: 0,
      ino: 0,
      folders: new Map(),
      changes: new Map(),
      log: [],
      // Above any clock handed out before: a clock from an earlier watch of `dir` is not this one's.
      floor: ++queue.seq,
      broken: false,
      dropped: false,
      busy: Promise.resolve(),
    };
    this.trees.set(dir, tree);
    tree.busy = (async () => {
      try {
        const info = await stat(dir);
        tree.real = await realpath(dir);
        tree.dev = info.dev;
        tree.ino = info.ino;
        const entries = await this.watchFolder(tree, '', false);
        if (tree.dropped || tree.broken || entries >= this.minEntries) return;
        this.declined.add(dir);
      } catch {
        tree.broken = true;
      }
      this.drop(tree);
    })();
    return tree;
  }

  /**
   * Watches the folder at `path` and every folder below it, the watch before the listing, so
   * nothing made meanwhile goes unseen. `listed`: each entry counts as changed (a folder that
   * appeared after the tree was watched). A folder gone before it could be watched is no error:
   * its parent's event said so; nor is one reached through a link (a folder above it replaced
   * by one): it is not in the tree. Returns how many entries it holds, at every depth.
   */
  private async watchFolder(tree: Tree, path: string, listed: boolean): Promise<number> {
    const full = path ? join(tree.dir, path) : tree.dir;
    let watcher: FSWatcher;
    try {
      watcher = watch(full, { persistent: false, encoding: 'buffer' }, (type, name) =>
        this.seen(tree, path, type, name),
      );
    } catch (error) {
      if (gone(error)) return 0;
      throw error;
    }
    watcher.on('error', () => {
      tree.broken = true;
    });
    const inside = !listed || (await realpath(full).catch(() => '')) === join(tree.real, path);
    if (tree.dropped || !inside) {
      watcher.close();
      return 0;
    }
    tree.folders.get(path)?.close();
    tree.folders.set(path, watcher);
    let entries: Awaited<ReturnType<typeof listFolder>>;
    try {
      entries = await listFolder(full);
    } catch (error) {
      if (gone(error)) return 0;
      throw error;
    }
    let count = 0;
    for (const entry of entries) {
      if (tree.dropped) return count;
      const name = utf8(entry.name);
      if (name === null) throw new Error(`${full}: a name that is not UTF-8`);
      if (!path && name === '.git') continue;
      count += 1;
      const child = path ? `${path}/${name}` : name;
      // Counted as an event of its own, so a clock read before the listing comes before it.
      if (listed) this.record(tree, child, entry.isDirectory(), entry.isDirectory(), ++queue.seq);
      if (entry.isDirectory()) count += await this.watchFolder(tree, child, listed);
    }
    return count;
  }

  /** One event from the watcher of the folder at `folder`. */
  private seen(tree: Tree, folder: string, type: string, raw: Buffer | null): void {
    delivered();
    if (tree.dropped) return;
    const name = raw ? utf8(raw) : null;
    if (name === null) {
      tree.broken = true;
      return;
    }
    if (!folder && name === '.git') return;
    const path = folder ? `${folder}/${name}` : name;
    const renamed = type === 'rename';
    this.record(tree, path, renamed, tree.folders.has(path), queue.seq);
    if (renamed) this.follow(tree, path);
  }

  private record(tree: Tree, path: string, renamed: boolean, folder: boolean, seq: number): void {
    const before = tree.changes.get(path);
    tree.log.push({ seq, path });
    if (tree.log.length > this.keptChanges) forgetOlderHalf(tree);
    tree.changes.set(path, {
      seq,
      renamed: renamed || (before?.renamed ?? false),
      folder: folder || (before?.folder ?? false),
    });
  }

  /**
   * A name made, deleted or moved: the folders watched at and below it are stale (gone, or
   * another folder now), and a folder standing there now is watched and listed. In event order.
   */
  private follow(tree: Tree, path: string): void {
    tree.busy = tree.busy.then(async () => {
      if (tree.broken || tree.dropped) return;
      try {
        const info = await lstat(join(tree.dir, path)).catch((error: unknown) => {
          if (gone(error)) return null;
          throw error;
        });
        if (tree.folders.has(path)) {
          for (const [watched, watcher] of tree.folders) {
            if (watched === path || watched.startsWith(`${path}/`)) {
              watcher.close();
              tree.folders.delete(watched);
            }
          }
        }
        if (info?.isDirectory()) await this.watchFolder(tree, path, true);
      } catch {
        tree.broken = true;
      }
    });
  }

  /** Resolves true once every event that came before the call has been seen (a cookie's came after). */
  private async flush(): Promise<boolean> {
    try {
      this.cookies ??= this.cookieFolder();
      const { dir } = await this.cookies;
      const name = `cookie-${++this.cookieCount}`;
      const seen = new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => {
          this.waiting.delete(name);
          resolve(false);
        }, COOKIE_MS);
        timer.unref();
        this.waiting.set(name, () => {
          clearTimeout(timer);
          resolve(true);
        });
      });
      await writeFile(join(dir, name), '');
      const ok = await seen;
      await rm(join(dir, name), { force: true });
      return ok;
    } catch {
      // The folder went (a /tmp cleaner): the next answer makes another.
      const cookies = this.cookies;
      this.cookies = null;
      void cookies
        ?.then(({ dir, watcher }) => {
          watcher.close();
          removeCookieFolder(dir);
        })
        .catch(() => undefined);
      return false;
    }
  }

  private async cookieFolder(): Promise<{ dir: string; watcher: FSWatcher }> {
    const dir = await makeCookieFolder();
    const watcher = watch(dir, { persistent: false }, (_type, name) => {
      delivered();
      if (!name) return;
      const waiting = this.waiting.get(name);
      this.waiting.delete(name);
      waiting?.();
    });
    watcher.on('error', () => undefined);
    return { dir, watcher };
  }

  /** Stops watching `tree`; work still under way for it stops at its next step. */
  private drop(tree: Tree): void {
    tree.dropped = true;
    if (this.trees.get(tree.dir) === tree) this.trees.delete(tree.dir);
    for (const watcher of tree.folders.values()) watcher.close();
    tree.folders.clear();
  }
}

/** False when `dir` is no longer the folder that was watched (moved away, another made in its place). */
async function sameTree(tree: Tree): Promise<boolean> {
  const info = await stat(tree.dir).catch(() => null);
  if (info && info.dev === tree.dev && info.ino === tree.ino) return true;
  tree.broken = true;
  return false;
}

/** The index of the first change in `log` after `seq` (the log is in `seq` order). */
function firstAfter(log: readonly { readonly seq: number }[], seq: number): number {
  let low = 0;
  let high = log.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if ((log[middle]?.seq ?? 0) <= seq) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** Forgets the older half of a tree's changes; a clock from before them can no longer be answered. */
function forgetOlderHalf(tree: Tree): void {
  const cut = tree.log.length >>> 1;
  const dropped = tree.log.slice(0, cut);
  tree.log = tree.log.slice(cut);
  for (const { seq, path } of dropped) if (tree.changes.get(path)?.seq === seq) tree.changes.delete(path);
  tree.floor = dropped.at(-1)?.seq ?? tree.floor;
}

/**
 * Waits until no folder that appeared is still being watched (new ones may appear meanwhile);
 * false when that takes longer than SETTLE_MS (a stream of new folders): the caller walks.
 */
async function settled(tree: Tree): Promise<boolean> {
  const deadline = Date.now() + SETTLE_MS;
  for (let busy = tree.busy; ; busy = tree.busy) {
    await busy;
    if (busy === tree.busy) return true;
    if (Date.now() > deadline) return false;
  }
}

function listFolder(full: string) {
  return readdir(full, { withFileTypes: true, encoding: 'buffer' });
}

/** A name as text, or null when it is not UTF-8 (it could not be named to git or lstat faithfully). */
function utf8(raw: Buffer): string | null {
  const text = raw.toString('utf8');
  return Buffer.from(text, 'utf8').equals(raw) ? text : null;
}

function gone(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}

function typeOf(info: Awaited<ReturnType<typeof lstat>>): string {
  if (info.isDirectory()) return 'd';
  if (info.isSymbolicLink()) return 'l';
  if (info.isFile()) return 'f';
  return '?';
}

/** The kernel's per-instance queue length (an overflow needs that many events pending at once). */
function queuedEventsLimit(): number {
  try {
    const text = readFileSync('/proc/sys/fs/inotify/max_queued_events', 'utf8');
    const value = Number(text.trim());
    return Number.isInteger(value) && value > 0 ? value : DEFAULT_QUEUED_EVENTS;
  } catch {
    return DEFAULT_QUEUED_EVENTS;
  }
}
