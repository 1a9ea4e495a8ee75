/**
 * Two commands timed in turn, A B A B …, and their ratio taken pair by pair, so a machine whose
 * speed drifts during the call moves both sides of each ratio together. Wall time from a monotonic
 * clock around each run, CPU time as the kernel accounts the finished child and what it waited for
 * (/proc/self/stat `cutime` + `cstime`, Linux). No shell: each command is split on spaces.
 *
 *   node bench/paired.js --pairs 6 --warmup 1 \
 *     --a "node bench/run.js overhead --n 200 --variants flotilla --runs 1 --no-profile" \
 *     --b "node ../base/bench/run.js overhead --n 200 --variants flotilla --runs 1 --no-profile"
 *
 * Prints each pair, then the median (min–max) of A's and B's wall and CPU seconds and of the ratios
 * A/B: quote the medians.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const TICKS_PER_SECOND = 100;

/** CPU seconds of this process's waited-for children so far. */
function childrenCpu() {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 16 and 17 of proc(5) (cutime, cstime); the slice starts at field 3.
  return (Number(fields[13]) + Number(fields[14])) / TICKS_PER_SECOND;
}

function timed(command) {
  const [program, ...args] = command.trim().split(/\s+/);
  const cpu = childrenCpu();
  const began = process.hrtime.bigint();
  const result = spawnSync(program, args, { stdio: 'ignore' });
  const wall = Number(process.hrtime.bigint() - began) / 1e9;
  if (result.error) throw result.error;
  return { wall, cpu: childrenCpu() - cpu, status: result.status };
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
  timed(values.a);
  timed(values.b);
}
const pairs = [];
for (let i = 0; i < Number(values.pairs); i++) {
  const a = timed(values.a);
  const b = timed(values.b);
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
