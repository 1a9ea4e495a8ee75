/**
 * A file-system monitor inside the host's own process (`FLOTILLA_MONITOR=inotify`, Linux): one
 * inotify watch per folder of a watched tree, through node's `fs.watch` (libuv keeps one inotify
 * instance for the process), and each change the kernel reports kept by path. No daemon and no
 * crawl of files: watching a tree lists its folders once, and a change costs a map entry. On the
 * 2-core benchmark machine Watchman 4.9 spent more CPU than the walks it saved (docs/BENCHMARKS.md
 * §14, §15, §18).
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
import { type FSWatcher, readFileSync, watch } from 'node:fs';
import { lstat, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
  /** Folders that appeared, watched and listed in event order, one after the other. */
  busy: Promise<void>;
}

const CLOCK_PREFIX = 'inotify';

export class InotifyMonitor implements FileMonitor {
  private readonly trees = new Map<string, Tree>();
  /** Events seen by the whole process: the clocks, and the overflow guard. */
  private seq = 0;
  private readonly instance = `${process.pid}-${Date.now().toString(36)}`;
  private readonly overflowGuard: number;
  /** Events delivered in the current read of the queue (one turn of the event loop). */
  private burst = 0;
  /** A clock below this may have lost events to an overflowed queue. */
  private untrustedBefore = 0;
  private cookies: Promise<{ readonly dir: string; readonly watcher: FSWatcher }> | null = null;
  private readonly waiting = new Map<string, () => void>();
  private cookieCount = 0;

  private readonly keptChanges: number;

  constructor(options: { readonly overflowGuard?: number; readonly keptChanges?: number } = {}) {
    this.overflowGuard = options.overflowGuard ?? Math.floor(queuedEventsLimit() / 2);
    this.keptChanges = options.keptChanges ?? KEPT_CHANGES;
  }

  async clock(dir: string): Promise<string | null> {
    let tree = this.trees.get(dir);
    if (tree?.broken) {
      this.drop(dir);
      tree = undefined;
    }
    tree ??= (await this.watchTree(dir)) ?? undefined;
    if (!tree) return null;
    // A folder that appeared is watched before the clock is read: a file written in it later has
    // its own event, one written before is listed with the folder.
    await settled(tree);
    return tree.broken ? null : `${CLOCK_PREFIX}:${this.instance}:${this.seq}`;
  }

  async changedSince(dir: string, clock: string): Promise<MonitoredChanges | null> {
    const since = this.parseClock(clock);
    const tree = this.trees.get(dir);
    if (since === null || !tree || tree.broken || since < tree.floor) return null;
    if (!(await this.flush())) return null;
    await settled(tree);
    if (tree.broken || since < this.untrustedBefore) return null;
    const now = this.seq;
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
    this.drop(dir);
  }

  async forgetUnder(prefix: string): Promise<void> {
    const top = prefix.replace(/\/+$/, '');
    for (const dir of [...this.trees.keys()]) if (dir === top || dir.startsWith(`${top}/`)) this.drop(dir);
  }

  close(): void {
    for (const dir of [...this.trees.keys()]) this.drop(dir);
    const cookies = this.cookies;
    this.cookies = null;
    void cookies
      ?.then(({ dir, watcher }) => {
        watcher.close();
        return rm(dir, { recursive: true, force: true });
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

  /** Watches every folder of `dir`; null (nothing kept) when one cannot be watched. */
  private async watchTree(dir: string): Promise<Tree | null> {
    const tree: Tree = {
      dir,
      folders: new Map(),
      changes: new Map(),
      log: [],
      floor: this.seq,
      broken: false,
      busy: Promise.resolve(),
    };
    this.trees.set(dir, tree);
    await this.watchFolder(tree, '', false).catch(() => {
      tree.broken = true;
    });
    if (!tree.broken) return tree;
    this.drop(dir);
    return null;
  }

  /**
   * Watches the folder at `path` and every folder below it, the watch before the listing, so
   * nothing made meanwhile goes unseen. `listed`: each entry counts as changed (a folder that
   * appeared after the tree was watched). A folder gone before it could be watched is no error:
   * its parent's event said so.
   */
  private async watchFolder(tree: Tree, path: string, listed: boolean): Promise<void> {
    const full = path ? join(tree.dir, path) : tree.dir;
    let watcher: FSWatcher;
    try {
      watcher = watch(full, { persistent: false, encoding: 'buffer' }, (type, name) =>
        this.seen(tree, path, type, name),
      );
    } catch (error) {
      if (gone(error)) return;
      throw error;
    }
    watcher.on('error', () => {
      tree.broken = true;
    });
    tree.folders.get(path)?.close();
    tree.folders.set(path, watcher);
    let entries: Awaited<ReturnType<typeof listFolder>>;
    try {
      entries = await listFolder(full);
    } catch (error) {
      if (gone(error)) return;
      throw error;
    }
    for (const entry of entries) {
      const name = utf8(entry.name);
      if (name === null) throw new Error(`${full}: a name that is not UTF-8`);
      if (!path && name === '.git') continue;
      const child = path ? `${path}/${name}` : name;
      // Counted as an event of its own, so a clock read before the listing comes before it.
      if (listed) this.record(tree, child, entry.isDirectory(), entry.isDirectory(), ++this.seq);
      if (entry.isDirectory()) await this.watchFolder(tree, child, listed);
    }
  }

  /** One event from the watcher of the folder at `folder`. */
  private seen(tree: Tree, folder: string, type: string, raw: Buffer | null): void {
    this.delivered();
    const name = raw ? utf8(raw) : null;
    if (name === null) {
      tree.broken = true;
      return;
    }
    if (!folder && name === '.git') return;
    const path = folder ? `${folder}/${name}` : name;
    const renamed = type === 'rename';
    this.record(tree, path, renamed, tree.folders.has(path), this.seq);
    if (renamed) this.follow(tree, path);
  }

  /**
   * Counts one event from the kernel. libuv reads the whole queue in one go, calling back for each
   * event before the loop turns; a read as long as the guard is taken for an overflow, which makes
   * every clock before its end unanswerable (while it lasts, every clock).
   */
  private delivered(): void {
    this.seq += 1;
    this.burst += 1;
    if (this.burst === 1) {
      setImmediate(() => {
        if (this.burst >= this.overflowGuard) this.untrustedBefore = this.seq;
        this.burst = 0;
      });
    } else if (this.burst === this.overflowGuard) {
      this.untrustedBefore = Number.MAX_SAFE_INTEGER;
    }
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
      if (tree.broken) return;
      try {
        const info = await lstat(join(tree.dir, path)).catch((error: unknown) => {
          if (gone(error)) return null;
          throw error;
        });
        for (const [watched, watcher] of tree.folders) {
          if (watched === path || watched.startsWith(`${path}/`)) {
            watcher.close();
            tree.folders.delete(watched);
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
      void cookies?.then(({ watcher }) => watcher.close()).catch(() => undefined);
      return false;
    }
  }

  private async cookieFolder(): Promise<{ dir: string; watcher: FSWatcher }> {
    const dir = await mkdtemp(join(tmpdir(), 'flotilla-monitor-'));
    const watcher = watch(dir, { persistent: false }, (_type, name) => {
      this.delivered();
      if (!name) return;
      const waiting = this.waiting.get(name);
      this.waiting.delete(name);
      waiting?.();
    });
    watcher.on('error', () => undefined);
    return { dir, watcher };
  }

  private drop(dir: string): void {
    const tree = this.trees.get(dir);
    if (!tree) return;
    this.trees.delete(dir);
    tree.broken = true;
    for (const watcher of tree.folders.values()) watcher.close();
    tree.folders.clear();
  }
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

/** Waits until no folder that appeared is still being watched (new ones may appear meanwhile). */
async function settled(tree: Tree): Promise<void> {
  for (let busy = tree.busy; ; busy = tree.busy) {
    await busy;
    if (busy === tree.busy) return;
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
