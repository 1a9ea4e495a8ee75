/**
 * Complete lines out of a byte stream as it comes, so what flotilla reads from a CLI's output
 * (usage JSON lines, rate-limit and login messages) is found without keeping the output: each
 * chunk's complete lines are handed on and forgotten, and only the unfinished last line is held.
 * A line longer than `maxLineBytes` is skipped whole (and counted) instead of held, so a CLI that
 * prints a gigabyte without a newline costs at most that much. Pure: no IO.
 */
export class LineScanner {
  private pending: Uint8Array[] = [];
  private pendingBytes = 0;
  /** Inside a line that passed the limit: its bytes are dropped until its newline. */
  private skipping = false;
  /** Lines skipped for their length. */
  skipped = 0;

  constructor(
    private readonly onLine: (line: string) => void,
    private readonly maxLineBytes: number,
  ) {}

  /** Bytes in the order the stream gave them; a chunk may end anywhere, inside a character too. */
  push(chunk: Uint8Array): void {
    const first = chunk.indexOf(NEWLINE);
    if (first < 0) {
      this.hold(chunk);
      return;
    }
    this.endLine(chunk.subarray(0, first));
    const last = chunk.lastIndexOf(NEWLINE);
    if (last > first) {
      // The lines between are whole in this chunk: one decode and one split is much cheaper than
      // one decode a line (a newline byte is never part of a multi-byte UTF-8 character).
      const lines = DECODER.decode(chunk.subarray(first + 1, last)).split('\n');
      for (const line of lines) {
        if (this.fits(line)) this.onLine(line);
        else this.skipped++;
      }
    }
    this.hold(chunk.subarray(last + 1));
  }

  /** The stream ended: its last line, when it had no newline. */
  end(): void {
    if (!this.skipping && this.pendingBytes > 0) this.onLine(this.takePending());
    this.pending = [];
    this.pendingBytes = 0;
    this.skipping = false;
  }

  private hold(part: Uint8Array): void {
    if (part.length === 0 || this.skipping) return;
    if (this.pendingBytes + part.length > this.maxLineBytes) {
      this.skipping = true;
      this.skipped++;
      this.pending = [];
      this.pendingBytes = 0;
      return;
    }
    // A copy: a slice would keep the whole chunk it came from alive.
    this.pending.push(Uint8Array.prototype.slice.call(part));
    this.pendingBytes += part.length;
  }

  private endLine(part: Uint8Array): void {
    if (this.skipping) {
      this.skipping = false;
      return;
    }
    if (this.pendingBytes + part.length > this.maxLineBytes) {
      this.skipped++;
      this.pending = [];
      this.pendingBytes = 0;
      return;
    }
    if (part.length > 0) {
      this.pending.push(part);
      this.pendingBytes += part.length;
    }
    this.onLine(this.takePending());
  }

  private takePending(): string {
    const text =
      this.pending.length === 1
        ? DECODER.decode(this.pending[0])
        : DECODER.decode(Buffer.concat(this.pending, this.pendingBytes));
    this.pending = [];
    this.pendingBytes = 0;
    return text;
  }

  /** A line decoded from one chunk: at most 3 bytes a UTF-16 unit, so most need no count. */
  private fits(line: string): boolean {
    return line.length * 3 <= this.maxLineBytes || Buffer.byteLength(line) <= this.maxLineBytes;
  }
}

const NEWLINE = 0x0a;
const DECODER = new TextDecoder();
