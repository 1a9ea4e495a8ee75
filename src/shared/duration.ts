/** Durations as users write them: `90s`, `10m`, `1h30m`, `500ms`, `7d`, or a bare number of milliseconds. */
const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

export function parseDuration(value: string | number): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? value : undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text);
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/gy;
  let total = 0;
  let consumed = 0;
  for (const match of text.matchAll(re)) {
    total += Number(match[1]) * (UNIT_MS[match[2] ?? ''] ?? 0);
    consumed += match[0].length;
  }
  return consumed === text.length && consumed > 0 ? Math.round(total) : undefined;
}

export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  return `${Math.floor(m / 60)}h ${m % 60}m`;
}
