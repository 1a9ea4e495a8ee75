/** A counting semaphore: host-wide slots and per-CLI max_concurrent. */
export class Semaphore {
  private available: number;
  private readonly waiters: Array<() => void> = [];

  /** `onChange` runs after every take and give-back: a host re-plans what it fetches from it. */
  constructor(
    readonly size: number,
    private readonly onChange: () => void = () => {},
  ) {
    this.available = size;
  }

  /** Slots free now. */
  get free(): number {
    return this.available;
  }

  async acquire(signal?: AbortSignal): Promise<() => void> {
    // An abort that came before the wait began fires no event: without this, the wait never ends.
    if (signal?.aborted) throw signal.reason ?? new Error('aborted');
    const now = this.tryAcquire();
    if (now) return now;
    await new Promise<void>((resolve, reject) => {
      const waiter = () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = () => {
        const index = this.waiters.indexOf(waiter);
        if (index >= 0) this.waiters.splice(index, 1);
        reject(signal?.reason ?? new Error('aborted'));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
    });
    return this.releaser();
  }

  /** A slot now, or null when none is free: never waits. */
  tryAcquire(): (() => void) | null {
    if (this.available === 0) return null;
    this.available--;
    this.onChange();
    return this.releaser();
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiters.shift();
      if (next) next();
      else this.available++;
      this.onChange();
    };
  }
}
