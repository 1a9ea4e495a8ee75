/**
 * The last `capBytes` of a byte stream, however long the stream: a ring of at most that many bytes
 * (grown as needed, so a short output costs what it is), and the count of every byte that went by.
 * What flotilla keeps of a CLI's stdout and stderr for the result and the audit trail. Pure: no IO.
 */
export class TailBuffer {
  private ring: Buffer = Buffer.alloc(0);
  private start = 0;
  private size = 0;
  /** Bytes pushed in all. */
  bytes = 0;

  constructor(readonly capBytes: number) {}

  push(chunk: Uint8Array): void {
    this.bytes += chunk.length;
    if (this.capBytes <= 0 || chunk.length === 0) return;
    const part = chunk.length > this.capBytes ? chunk.subarray(chunk.length - this.capBytes) : chunk;
    if (this.size + part.length > this.ring.length && this.ring.length < this.capBytes)
      this.grow(part.length);
    const cap = this.ring.length;
    const at = (this.start + this.size) % cap;
    const first = Math.min(part.length, cap - at);
    this.ring.set(part.subarray(0, first), at);
    if (first < part.length) this.ring.set(part.subarray(first), 0);
    const overflow = this.size + part.length - cap;
    if (overflow > 0) {
      this.start = (this.start + overflow) % cap;
      this.size = cap;
    } else {
      this.size += part.length;
    }
  }

  /** Some of the stream is no longer kept. */
  get truncated(): boolean {
    return this.bytes > this.size;
  }

  /**
   * The kept text: all of it when nothing was dropped, else from the first line start in what is
   * kept (or from the first whole character, when the kept part has no newline).
   */
  text(): string {
    let kept = this.keptBytes();
    if (this.truncated) {
      const newline = kept.indexOf(0x0a);
      if (newline >= 0 && newline < kept.length - 1) kept = kept.subarray(newline + 1);
      else {
        let from = 0;
        // UTF-8 continuation bytes (10xxxxxx) are the rest of a character cut off at the front.
        while (from < kept.length && ((kept[from] ?? 0) & 0xc0) === 0x80) from++;
        kept = kept.subarray(from);
      }
    }
    return kept.toString('utf8');
  }

  private keptBytes(): Buffer {
    const end = this.start + this.size;
    if (end <= this.ring.length) return this.ring.subarray(this.start, end);
    return Buffer.concat([this.ring.subarray(this.start), this.ring.subarray(0, end - this.ring.length)]);
  }

  /** Only while nothing has been dropped: the kept bytes start at 0. */
  private grow(adding: number): void {
    const capacity = Math.min(this.capBytes, Math.max(this.ring.length * 2, this.size + adding, MIN_RING));
    const ring = Buffer.allocUnsafe(capacity);
    this.ring.copy(ring, 0, 0, this.size);
    this.ring = ring;
  }
}

/** The first ring a stream gets: most outputs (a criterion's, a version line) fit in it. */
const MIN_RING = 64 * 1024;
