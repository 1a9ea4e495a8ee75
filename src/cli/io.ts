/** Where a command writes; tests pass their own to read what a person would see. */
export interface Io {
  out(text: string): void;
  err(text: string): void;
  readonly isTTY: boolean;
}

/**
 * A reader that goes away (`flotilla run … | head -3`, `status | head -1`) is a normal end for
 * output, never a crash: without a listener, Node turns the stream's EPIPE into an uncaught
 * exception, which for `run` would kill the mission's hosts mid-attempt. Once a stream is closed,
 * its writes are dropped and the command carries on to its own end (for `run`, the mission's).
 */
function closableWriter(stream: NodeJS.WriteStream): (text: string) => void {
  let closed = false;
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE' || error.code === 'ERR_STREAM_DESTROYED') {
      closed = true;
      return;
    }
    throw error;
  });
  return (text) => {
    if (closed || stream.destroyed) return;
    stream.write(`${text}\n`);
  };
}

export const processIo: Io = {
  out: closableWriter(process.stdout),
  err: closableWriter(process.stderr),
  isTTY: process.stdout.isTTY === true,
};
