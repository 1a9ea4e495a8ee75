/** Durations as users write them: `90s`, `10m`, `1h30m`, `500ms`, `7d`, or a bare number of milliseconds. */
const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * The text parseDuration takes, as a JSON Schema pattern (the mission file's schema for editors,
 * shared/mission-json-schema.ts): a number of milliseconds, or number-unit parts, with spaces around.
 */
export const DURATION_PATTERN = '^\\s*(?:\\d+|(?:\\d+(?:\\.\\d+)?(?:ms|s|m|h|d))+)\\s*$';
const DURATION = new RegExp(DURATION_PATTERN);
const PART = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/g;

export function parseDuration(value: string | number): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? value : undefined;
  if (!DURATION.test(value)) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text);
  let total = 0;
  for (const match of text.matchAll(PART)) total += Number(match[1]) * (UNIT_MS[match[2] ?? ''] ?? 0);
  return Math.round(total);
}

export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  return `${Math.floor(m / 60)}h ${m % 60}m`;
}

/** A duration as a mission file writes it (`1h`, `1m30s`, `90ms`), so a message quotes the setting. */
export function formatDurationSetting(ms: number): string {
  if (ms < 1000 || ms % 1000 !== 0) return `${ms}ms`;
  const s = ms / 1000;
  const parts: [number, string][] = [
    [Math.floor(s / 3600), 'h'],
    [Math.floor((s % 3600) / 60), 'm'],
    [s % 60, 's'],
  ];
  return parts
    .filter(([n]) => n > 0)
    .map(([n, unit]) => `${n}${unit}`)
    .join('');
}
