/**
 * Small helpers every benchmark shares: statistics over runs, a seeded PRNG, paths, timing and the
 * table printer. Benchmarks report ratios measured side by side; absolute times are for context.
 */
import { randomBytes } from 'node:crypto';
import { delimiter, join, resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '..', '..');
export const SIM_ADAPTERS = join(ROOT, 'examples', 'adapters');
export const SIM_BIN = join(ROOT, 'examples', 'bin');
export const FLOTILLA_BIN = join(ROOT, 'bin', 'flotilla.js');

/** The stand-in agent must be on PATH for detection and for the bare baselines. */
export function putSimOnPath() {
  if (!(process.env.PATH ?? '').split(delimiter).includes(SIM_BIN)) {
    process.env.PATH = `${SIM_BIN}${delimiter}${process.env.PATH ?? ''}`;
  }
}

export function uniquePrefix(name = 'bench') {
  return `{flotilla-${name}-${randomBytes(4).toString('hex')}}`;
}

export const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

export function now() {
  return performance.now();
}

/** mulberry32: tiny and deterministic, so a seed names one DAG or one fuzz corpus for good. */
export function createRandom(seed) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  const int = (below) => Math.floor(next() * below);
  return { next, int, pick: (items) => items[int(items.length)], chance: (p) => next() < p };
}

/** min / median / max of a list of numbers (the median of an even count is the mean of the middle two). */
export function summarize(values) {
  const sorted = [...values].filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return { n: 0, min: Number.NaN, median: Number.NaN, max: Number.NaN };
  const mid = Math.floor(sorted.length / 2);
  const median = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  return { n: sorted.length, min: sorted[0], median, max: sorted[sorted.length - 1] };
}

export function fmt(value, digits = 2) {
  if (value === undefined || value === null || Number.isNaN(value)) return '—';
  if (typeof value !== 'number') return String(value);
  return value.toFixed(digits);
}

/** `median (min–max, n runs)` */
export function fmtStats(stats, digits = 2, unit = '') {
  if (!stats || stats.n === 0) return '—';
  const u = unit ? ` ${unit}` : '';
  if (stats.n === 1) return `${fmt(stats.median, digits)}${u} (1 run)`;
  return `${fmt(stats.median, digits)}${u} (${fmt(stats.min, digits)}–${fmt(stats.max, digits)}, ${stats.n} runs)`;
}

/** Prints an aligned table: rows are arrays of cells, the first row is the header. */
export function printTable(rows, log = console.log) {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => String(row[i] ?? '').length)));
  rows.forEach((row, index) => {
    log(`  ${row.map((cell, i) => String(cell ?? '').padEnd(widths[i])).join('  ')}`.trimEnd());
    if (index === 0) log(`  ${widths.map((w) => '-'.repeat(w)).join('  ')}`);
  });
}

/** Runs `fn` with a deadline; the benchmark fails loudly instead of hanging the whole suite. */
export async function withDeadline(promise, ms, what) {
  let timer;
  const deadline = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no result after ${Math.round(ms / 1000)} s`)), ms);
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
