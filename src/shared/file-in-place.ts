import { closeSync, constants, ftruncateSync, openSync, writeSync } from 'node:fs';

/**
 * Writes `text` over the small file at `path` in place (made when missing): one write from its
 * start, then the file cut to the text's length, which is never nothing. A file holding data that
 * is emptied and written again (what `writeFileSync` does) is written out to disk by ext4 when it
 * is closed, its guard for editors that rewrite files that way (`auto_da_alloc`): 0.3–0.6 ms a
 * call on a busy machine against 0.02–0.1 in place, on the host's main thread (docs/BENCHMARKS.md,
 * "File calls"). A process killed meanwhile leaves the old text, or the new one followed by the
 * old one's tail, which a reader of JSON refuses; a power loss may leave anything, as the other way.
 */
export function rewriteInPlace(path: string, text: string): void {
  const bytes = Buffer.from(text.length > 0 ? text : ' ');
  const fd = openSync(path, constants.O_WRONLY | constants.O_CREAT, 0o666);
  try {
    for (let at = 0; at < bytes.byteLength; ) at += writeSync(fd, bytes, at, bytes.byteLength - at, at);
    ftruncateSync(fd, bytes.byteLength);
  } finally {
    closeSync(fd);
  }
}
