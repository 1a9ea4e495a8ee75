import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { indent, sim, startCluster, type TestCluster } from '../../helpers/flotilla.js';

/**
 * Two hosts on one Redis race for every job of a diamond. Each task must run once per attempt,
 * be approved once, and the join task be released once, whichever host approves which parent.
 */
describe('two hosts racing on a diamond', () => {
  let cluster: TestCluster;

  beforeAll(async () => {
    cluster = await startCluster({ hosts: 2, slots: 2 });
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it('dispatches, approves and releases every task exactly once', async () => {
    const task = (id: string, deps: string[]) =>
      [
        `  - id: ${id}`,
        `    title: ${id}`,
        `    depends_on: [${deps.join(', ')}]`,
        `    exit_criteria: ["test -f ${id}.txt"]`,
        `    description: |`,
        indent(sim(`- sleep: 200ms\n- write: {path: ${id}.txt, content: "${id}"}`)),
      ].join('\n');
    const yaml = [
      'goal: race',
      'workspace: ./ws',
      'tasks:',
      task('top', []),
      ...['l1', 'l2', 'l3', 'l4'].map((id) => task(id, ['top'])),
      task('join', ['l1', 'l2', 'l3', 'l4']),
    ].join('\n');
    const results = await Promise.all([cluster.run(yaml), cluster.run(yaml)]);
    for (const status of results) {
      expect(status.status).toBe('done');
      const audit = await cluster.client.store.getAudit(status.id);
      for (const t of status.tasks) {
        expect(t.attempts).toBe(1);
        const of = (stage: string) => audit.filter((e) => e.taskId === t.id && e.stage === stage);
        expect(of('route')).toHaveLength(1);
        expect(of('run')).toHaveLength(1);
        expect(of('gate')).toHaveLength(1);
      }
      const hosts = new Set(status.tasks.map((t) => t.host));
      expect(hosts.size).toBeGreaterThanOrEqual(1);
    }
    // Both hosts took work across the two missions.
    const allHosts = new Set(results.flatMap((s) => s.tasks.map((t) => t.host)));
    expect(allHosts).toEqual(new Set(['test-host-1', 'test-host-2']));

    // Every host that ran a task forgets the mission's spec once it ends, not only the host that
    // ran its finalize job (a long-running host kept every spec forever).
    const ids = results.map((s) => s.id);
    const cached = () => cluster.hosts.flatMap((h) => h.cachedMissions()).filter((id) => ids.includes(id));
    const deadline = Date.now() + 30_000;
    while (cached().length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(cached()).toEqual([]);
  });
});
