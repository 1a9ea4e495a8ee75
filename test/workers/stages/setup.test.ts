import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditEntry, MissionStatusJson } from '../../../src/shared/contracts.js';
import { indent, sim, startCluster, type TestCluster } from '../../helpers/flotilla.js';

/**
 * `setup:` on the real pipeline (DESIGN §4 step 1): one host with one slot, so every stage of every
 * attempt shares one warm checkout. Setup runs there once, its ignored output (node_modules/) stays
 * for the later attempts and their criteria, it runs again only when its input (the lockfile)
 * changed, and a failing setup fails the attempt with its command and output.
 */
describe('mission setup', () => {
  let cluster: TestCluster;
  let status: MissionStatusJson;
  let audit: AuditEntry[];
  let setupLog: string;

  beforeAll(async () => {
    cluster = await startCluster({ hosts: 1, slots: 1 });
    setupLog = join(cluster.dir, 'setup-runs.log');
    const task = (id: string, deps: string[], steps: string, extra: string[] = []) => [
      `  - id: ${id}`,
      `    title: Task ${id}`,
      '    capability: code_implementation',
      '    critic: false',
      `    depends_on: [${deps.join(', ')}]`,
      `    exit_criteria: ["test -f node_modules/dep.js", "test -f ${id}.txt"]`,
      ...extra,
      '    description: |',
      `      Task ${id}.`,
      '',
      indent(sim(steps)),
    ];
    const yaml = [
      'goal: Prove cached setup',
      'workspace: ./ws',
      'defaults: { max_attempts: 1, timeout: 60s }',
      `setup: ["echo ran >> ${setupLog}", "mkdir -p node_modules && cp package-lock.json node_modules/dep.js"]`,
      'tasks:',
      ...task('a', [], '- write: {path: a.txt, content: "a"}'),
      ...task('b', ['a'], '- write: {path: b.txt, content: "b"}'),
      ...task(
        'bump',
        ['b'],
        '- write: {path: bump.txt, content: "bump"}\n- write: {path: package-lock.json, content: "{\\"v\\": 2}"}',
      ),
      ...task('after', ['bump'], '- write: {path: after.txt, content: "after"}'),
      ...task('broken', ['after'], '- write: {path: broken.txt, content: "x"}', [
        '    setup: ["echo fetching packages; echo \'registry unreachable\' >&2; exit 3"]',
      ]),
      '',
    ].join('\n');
    const id = await cluster.submit(yaml, {
      'ws/.gitignore': 'node_modules/\n',
      'ws/package-lock.json': '{"v": 1}\n',
    });
    status = await cluster.client.wait(id, { pollMs: 200 });
    audit = await cluster.client.store.getAudit(id);
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it('completes the tasks whose setup works; their criteria saw setup’s ignored output', () => {
    const byId = Object.fromEntries(status.tasks.map((t) => [t.id, t.status]));
    expect(byId).toEqual({
      a: 'completed',
      b: 'completed',
      bump: 'completed',
      after: 'completed',
      broken: 'failed',
    });
  });

  it('runs setup once for the warm checkout and once more after the lockfile changed', async () => {
    const runs = (await readFile(setupLog, 'utf8')).split('\n').filter(Boolean);
    // a's run; then bump's verify, at bump's commit with the new lockfile. Never for b or after.
    expect(runs).toHaveLength(2);
    const ranIn = audit.filter((e) => e.files?.['setup.txt']?.includes(`echo ran >> ${setupLog}`));
    expect(ranIn.map((e) => `${e.taskId}:${e.stage}`)).toEqual(['a:run', 'bump:verify']);
  });

  it("verifies in the run's own checkout on the host that ran the attempt", () => {
    const verifies = audit.filter((e) => e.stage === 'verify');
    expect(verifies.length).toBeGreaterThanOrEqual(4);
    for (const entry of verifies) expect(entry.message).toContain("(in the run's checkout)");
  });

  it('fails an attempt whose setup fails, with the command and its output in the error and the audit', () => {
    const broken = status.tasks.find((t) => t.id === 'broken');
    expect(broken?.error).toContain('setup failed: $ echo fetching packages;');
    expect(broken?.error).toContain('(exit 3)');
    expect(broken?.error).toContain('registry unreachable');
    const entry = audit.find((e) => e.taskId === 'broken' && e.stage === 'run');
    expect(entry?.message).toContain('setup failed');
    expect(entry?.files?.['setup.txt']).toContain('registry unreachable');
  });
});
