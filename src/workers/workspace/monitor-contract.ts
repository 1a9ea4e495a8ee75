/** What a file-system monitor answers (file-monitor.ts chooses one: inotify-monitor.ts, watchman.ts). */

/** One path a `since` query returned, relative to the checkout. */
export interface MonitoredChange {
  readonly name: string;
  readonly exists: boolean;
  /** `f` file, `d` directory, `l` symlink, and so on (Watchman's types). */
  readonly type: string;
  /** True when the path appeared after the clock. */
  readonly new: boolean;
}

export interface MonitoredChanges {
  readonly changes: MonitoredChange[];
  /** The monitor's clock when it answered: a change made after the question comes after it. */
  readonly clock: string;
}

export interface FileMonitor {
  /**
   * A clock for `dir` now (watching `dir` first): every change made after this call, and perhaps
   * some made just before it, is changed since.
   */
  clock(dir: string, options?: { readonly settle?: boolean }): Promise<string | null>;
  /**
   * Every path under `dir` that changed after `clock`, and the clock of the answer (what changed
   * after it is for the next question); null when the monitor cannot say.
   */
  changedSince(dir: string, clock: string): Promise<MonitoredChanges | null>;
  /**
   * True when the monitor chose not to watch `dir` (the host's own watches leave small trees to
   * the walks): callers then do as without a monitor. Known once clock() was asked for it.
   */
  declines(dir: string): boolean;
  /** Stops watching `dir` (a discarded checkout). */
  forget(dir: string): Promise<void>;
  /**
   * Stops watching every directory at or below `prefix`, before it is deleted: Watchman would
   * otherwise spend seconds of CPU on the deletion of each watched tree (a pruned cache).
   */
  forgetUnder(prefix: string): Promise<void>;
  close(): void;
}
