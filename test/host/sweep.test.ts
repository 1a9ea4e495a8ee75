import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadMissionOrThrow } from '../../src/mission/load.js';
import { prepareWorkspace } from '../../src/workspace/prepare-workspace.js';
import { indent, sim, startCluster, type TestCluster } from '../helpers/flotilla.js';

/**
 * A producer killed between writing a mission's state and adding its first jobs must not lose the
 * mission: a host's sweep finds the queued tasks without jobs and adds them.
 */
describe('the sweep', () => {
  let cluster: TestCluster;

  beforeAll(async () => {
    cluster = await startCluster({ hosts: 0 });
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it('runs a mission whose submitter died before enqueuing anything', async () => {
    const dir = join(cluster.dir, 'orphan');
    await mkdir(join(dir, 'ws'), { recursive: true });
    const file = join(dir, 'mission.yaml');
    await writeFile(
      file,
      [
        'goal: orphaned',
        'workspace: ./ws',
        'tasks:',
        '  - id: one',
        '    title: one',
        '    exit_criteria: ["test -f one.txt"]',
        '    description: |',
        indent(sim('- write: {path: one.txt, content: "1"}')),
        '  - id: two',
        '    title: two',
        '    depends_on: [one]',
        '    exit_criteria: ["test -f one.txt && test -f two.txt"]',
        '    description: |',
        indent(sim('- write: {path: two.txt, content: "2"}')),
      ].join('\n'),
    );
    const spec = await loadMissionOrThrow(file);
    const id = 'orphaned-mission';
    const workspace = await prepareWorkspace({ workspace: spec.workspace, missionId: id });
    // What submit writes before it adds the root's flow; the "crash" is stopping here.
    await cluster.client.store.createMission({
      id,
      spec,
      repo: workspace.repo,
      baseCommit: workspace.baseCommit,
      roots: ['one'],
      now: new Date().toISOString(),
    });
    await cluster.addHost({ sweepMs: 500 });
    const status = await cluster.client.wait(id, { pollMs: 200 });
    expect(status.status).toBe('done');
    expect(status.tasks.map((t) => [t.id, t.status, t.attempts])).toEqual([
      ['one', 'completed', 1],
      ['two', 'completed', 1],
    ]);
  });
});
