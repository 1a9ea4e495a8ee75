import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runTimeoutMs } from '../../../../src/shared/mission.js';
import { indent, SIM_ADAPTERS, sim, startCluster, type TestCluster } from '../../../helpers/flotilla.js';

/**
 * An attempt's time limit is the mission's `timeout` when it sets one, whatever the adapter's
 * `timeout_ms` (an hours-long task is not cut at a CLI's default of 15 minutes); without one, the
 * shorter of the two. On a host whose stand-in adapter says 1.5 s, a 4 s run passes with
 * `timeout: 1m` and is stopped without.
 */
describe('the time limit of a run', () => {
  it.each([
    [
      'the mission set it: the task wins, longer or shorter',
      { timeoutMs: 10_800_000, timeoutSet: true as const },
      900_000,
      10_800_000,
    ],
    ['set shorter than the adapter', { timeoutMs: 60_000, timeoutSet: true as const }, 900_000, 60_000],
    ['not set: the shorter of the default and the adapter', { timeoutMs: 600_000 }, 300_000, 300_000],
    ['not set, adapter longer', { timeoutMs: 600_000 }, 900_000, 600_000],
  ])('%s', (_, task, adapter, expected) => {
    expect(runTimeoutMs(task, adapter)).toBe(expected);
  });

  describe('on a host', () => {
    let cluster: TestCluster;
    let adapters: string;

    beforeAll(async () => {
      adapters = await mkdtemp(join(tmpdir(), 'flotilla-short-adapter-'));
      await cp(SIM_ADAPTERS, adapters, { recursive: true });
      const file = join(adapters, 'sim.md');
      await writeFile(file, (await readFile(file, 'utf8')).replace(/timeout_ms: \d+/, 'timeout_ms: 1500'));
      cluster = await startCluster({ hosts: 0 });
      await cluster.addHost({ adaptersDir: adapters });
    });
    afterAll(async () => {
      await cluster?.stop();
      if (adapters) await rm(adapters, { recursive: true, force: true });
    });

    const mission = (timeout: string) =>
      [
        'goal: A run longer than the adapter allows',
        'workspace: ./ws',
        `defaults: { max_attempts: 1${timeout} }`,
        'tasks:',
        '  - id: long',
        '    title: Take a while',
        '    critic: false',
        '    exit_criteria: ["test -f long.txt"]',
        '    description: |',
        '      Take your time.',
        '',
        indent(sim(['- sleep: 4s', '- write: {path: long.txt, content: "done"}'].join('\n'))),
      ].join('\n');

    it("runs to the mission's timeout, past the adapter's", async () => {
      const status = await cluster.run(mission(', timeout: 1m'));
      expect(status.status, status.tasks[0]?.error ?? '').toBe('done');
    }, 120_000);

    it("stops at the adapter's when the mission sets none", async () => {
      const status = await cluster.run(mission(''));
      expect(status.status).toBe('failed');
      expect(status.tasks[0]?.error).toMatch(/timed out|time limit|timeout/i);
    }, 120_000);
  });
});
