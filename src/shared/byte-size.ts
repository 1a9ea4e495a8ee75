/**
 * Sizes as operators write them: `500MB`, `2GB`, `64KB`, `1.5 GB`, or a bare number of bytes.
 * Units are binary (1 MB = 1,048,576 bytes), as Node's own buffer sizes are; `MiB` spellings and
 * a missing `B` (`500M`) are accepted, case does not matter.
 */
const UNIT_BYTES: Readonly<Record<string, number>> = {
  '': 1,
  k: 1024,
  m: 1024 ** 2,
  g: 1024 ** 3,
  t: 1024 ** 4,
};

export function parseByteSize(value: string): number | undefined {
  const match = /^(\d+(?:\.\d+)?)\s*(?:([kmgt])i?b?|b)?$/i.exec(value.trim());
  if (!match) return undefined;
  const bytes = Math.floor(Number(match[1]) * (UNIT_BYTES[(match[2] ?? '').toLowerCase()] ?? 1));
  return bytes > 0 ? bytes : undefined;
}

/** `500 MB`, `1.5 GB`, `64 KB`, `900 bytes`: the unit that gives a number of at least 1, one decimal at most. */
export function formatByteSize(bytes: number): string {
  for (const [unit, size] of [
    ['GB', 1024 ** 3],
    ['MB', 1024 ** 2],
    ['KB', 1024],
  ] as const) {
    if (bytes >= size) return `${Number((bytes / size).toFixed(1))} ${unit}`;
  }
  return `${bytes} bytes`;
}
