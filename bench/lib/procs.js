/**
 * Processes the benchmarks start, found again by a random tag in their environment. Agent CLIs run
 * in process groups of their own and outlive a host killed with SIGKILL, so a benchmark cleans up
 * every process that carries its tag (inherited by every descendant), and nothing else.
 */
import { randomBytes } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';

export const TAG_VARIABLE = 'FLOTILLA_BENCH_TAG';

export function newTag() {
  return randomBytes(6).toString('hex');
}

/** Pids whose environment holds `FLOTILLA_BENCH_TAG=<tag>`, with their command lines. */
export async function taggedProcesses(tag) {
  const needle = `${TAG_VARIABLE}=${tag}`;
  const found = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    const environ = await readFile(`/proc/${entry}/environ`, 'utf8').catch(() => '');
    if (!environ.split('\0').includes(needle)) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    found.push({ pid: Number(entry), cmd: cmdline.split('\0').join(' ').trim() });
  }
  return found;
}

export async function killTagged(tag, signal = 'SIGKILL') {
  const victims = await taggedProcesses(tag);
  for (const { pid } of victims) {
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }
  return victims.length;
}
