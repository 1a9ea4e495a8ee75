/**
 * What one file call costs the host: node's asynchronous call (a trip through libuv's thread pool)
 * against the synchronous one, for the calls flotilla's in-process git work makes a few hundred
 * times a task (lstat, a small file's read, a small file's write), and what a new file costs the
 * file system itself (a new inode) against a rewrite of an existing one. CPU of this process per
 * call (user + system, both threads and kernel) and wall time, sequential calls, in the same
 * temporary folder flotilla's home would use. This decides which calls the host makes
 * synchronously (docs/ARCHITECTURE.md, "Synchronous git files").
 */
import {
  closeSync,
  constants,
  lstatSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { lstat, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rewriteInPlace } from '../dist/shared/file-in-place.js';
import { fmt, printTable } from './lib/util.js';

export const defaults = { n: 3000, runs: 3 };

/** Per-call CPU and wall (µs) of `call` made `n` times in a row, the median of `runs` rounds. */
async function measure(call, n, runs) {
  const rounds = [];
  for (let round = 0; round < runs; round++) {
    for (let i = 0; i < 50; i++) await call(-1 - round * 50 - i);
    const cpu = process.cpuUsage();
    const began = performance.now();
    for (let i = 0; i < n; i++) await call(round * n + i);
    const used = process.cpuUsage(cpu);
    rounds.push({ cpu: (used.user + used.system) / n, wall: ((performance.now() - began) * 1000) / n });
  }
  const median = (key) => rounds.map((r) => r[key]).sort((a, b) => a - b)[Math.floor(rounds.length / 2)];
  return { cpu: median('cpu'), wall: median('wall') };
}

export async function run(options = {}) {
  const n = options.n ?? defaults.n;
  const runs = options.runs ?? defaults.runs;
  const dir = await mkdtemp(join(tmpdir(), 'flotilla-bench-fs-'));
  const small = join(dir, 'small');
  writeFileSync(small, 'x'.repeat(200));
  const cases = [
    ['lstat', () => lstat(small), () => lstatSync(small)],
    ['read a 200-byte file', () => readFile(small), () => readFileSync(small)],
    [
      'rewrite a 200-byte file',
      () => writeFile(small, 'y'.repeat(200)),
      () => writeFileSync(small, 'y'.repeat(200)),
    ],
  ];
  const rows = [
    ['call', 'async: CPU µs', 'async: wall µs', 'sync: CPU µs', 'sync: wall µs', 'async / sync CPU'],
  ];
  const results = [];
  try {
    for (const [name, asyncCall, syncCall] of cases) {
      const a = await measure(asyncCall, n, runs);
      const s = await measure(async () => syncCall(), n, runs);
      rows.push([name, fmt(a.cpu, 1), fmt(a.wall, 1), fmt(s.cpu, 1), fmt(s.wall, 1), fmt(a.cpu / s.cpu, 1)]);
      results.push({ call: name, async: a, sync: s });
    }
    printTable(rows);
    // A new file (a new inode, kept: a loose object, a lock renamed into place) against a rewrite.
    const created = await measure(
      (i) => {
        const fd = openSync(join(dir, `new-${i}`), constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL);
        closeSync(fd);
      },
      Math.min(n, 1000),
      runs,
    );
    const rewritten = await measure(() => writeFileSync(small, 'z'), Math.min(n, 1000), runs);
    // In place: one write from the start, cut to length, never emptied (shared/file-in-place.ts).
    const inPlace = await measure(() => rewriteInPlace(small, 'z'.repeat(60)), Math.min(n, 1000), runs);
    // git's protocol for HEAD, the index and refs: a lock file written, renamed over the file.
    const renamed = await measure(
      () => {
        writeFileSync(`${small}.lock`, 'z'.repeat(60));
        renameSync(`${small}.lock`, small);
      },
      Math.min(n, 1000),
      runs,
    );
    console.log('');
    printTable([
      ['file system', 'CPU µs', 'wall µs'],
      ['a new file, kept (synchronous)', fmt(created.cpu, 0), fmt(created.wall, 0)],
      [
        'an existing file emptied and rewritten (writeFileSync)',
        fmt(rewritten.cpu, 0),
        fmt(rewritten.wall, 0),
      ],
      ['an existing file rewritten in place', fmt(inPlace.cpu, 0), fmt(inPlace.wall, 0)],
      ['a lock file renamed over an existing file', fmt(renamed.cpu, 0), fmt(renamed.wall, 0)],
    ]);
    results.push(
      { call: 'new file', sync: created },
      { call: 'rewrite', sync: rewritten },
      { call: 'rewrite in place', sync: inPlace },
      { call: 'lock renamed over', sync: renamed },
    );
    return results;
  } finally {
    rmSync(small, { force: true });
    await rm(dir, { recursive: true, force: true });
  }
}
