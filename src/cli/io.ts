/** Where a command writes; tests pass their own to read what a person would see. */
export interface Io {
  out(text: string): void;
  err(text: string): void;
  readonly isTTY: boolean;
}

export const processIo: Io = {
  out: (text) => process.stdout.write(`${text}\n`),
  err: (text) => process.stderr.write(`${text}\n`),
  isTTY: process.stdout.isTTY === true,
};
