/**
 * Two commands timed in turn, A B A B …, and their ratio taken pair by pair, so a machine whose
 * speed drifts during the call moves both sides of each ratio together. Wall time from a monotonic
 * clock around each run, CPU time as the kernel accounts the finished child and what it waited for
 * (lib/profile.js cpuMs(): /proc/self/stat, Linux). No shell: each command is split on spaces.
 *
 *   node bench/paired.js --pairs 6 --warmup 1 \
 *     --a "node bench/run.js overhead --n 200 --variants flotilla --runs 1 --no-profile" \
 *     --b "node ../base/bench/run.js overhead --n 200 --variants flotilla --runs 1 --no-profile"
 *
 * Prints each pair, then the median (min–max) of A's and B's wall and CPU seconds and of the ratios
 * A/B: quote the medians.
 */
import { spawnSync } from 'node:child_process';
import { parseArgs } from 'node:util';
import { cpuMs } from './lib/profile.js';

async function timed(command) {
  const [program, ...args] = command.trim().split(/\s+/);
  const cpu = (await cpuMs()).children;
  const began = process.hrtime.bigint();
  const result = spawnSync(program, args, { stdio: 'ignore' });
  const wall = Number(process.hrtime.bigint() - began) / 1e9;
  if (result.error) throw result.error;
  return { wall, cpu: ((await cpuMs()).children - cpu) / 1000, status: result.status };
}

const spread = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const median = sorted[Math.floor((sorted.length - 1) / 2)];
  return `${median.toFixed(3)} (${sorted[0].toFixed(3)}–${sorted[sorted.length - 1].toFixed(3)})`;
};

const { values } = parseArgs({
  options: {
    a: { type: 'string' },
    b: { type: 'string' },
    pairs: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '1' },
  },
});
if (!values.a || !values.b) {
  console.error('usage: node bench/paired.js --a "COMMAND A" --b "COMMAND B" [--pairs 5] [--warmup 1]');
  process.exit(2);
}
for (let i = 0; i < Number(values.warmup); i++) {
  await timed(values.a);
  await timed(values.b);
}
const pairs = [];
for (let i = 0; i < Number(values.pairs); i++) {
  const a = await timed(values.a);
  const b = await timed(values.b);
  pairs.push({ a, b });
  console.log(
    `pair ${i + 1}: A ${a.wall.toFixed(2)} s wall, ${a.cpu.toFixed(2)} s CPU (exit ${a.status}); ` +
      `B ${b.wall.toFixed(2)} s, ${b.cpu.toFixed(2)} s (exit ${b.status})`,
  );
}
console.log(`A wall s   ${spread(pairs.map((p) => p.a.wall))}`);
console.log(`B wall s   ${spread(pairs.map((p) => p.b.wall))}`);
console.log(`A CPU s    ${spread(pairs.map((p) => p.a.cpu))}`);
console.log(`B CPU s    ${spread(pairs.map((p) => p.b.cpu))}`);
console.log(`A/B wall   ${spread(pairs.map((p) => p.a.wall / p.b.wall))}`);
console.log(`A/B CPU    ${spread(pairs.map((p) => p.a.cpu / p.b.cpu))}`);
