import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { integrationBranch } from '../../../../src/shared/contracts.js';
import { runGit } from '../../../../src/workers/workspace/git.js';
import { indent, sim, startCluster, type TestCluster } from '../../../helpers/flotilla.js';

/**
 * A gate job that fails every try for a reason other than a merge conflict (here git itself fails
 * on one attempt's work) settles its task as failed instead of leaving it, and its mission,
 * unfinished: the dependent is skipped, the independent task completes, the mission ends.
 */
let cluster: TestCluster;
let shimDir: string;
let savedPath: string | undefined;

/** What the git shim prints for a merge of a work commit holding `poison.txt`. */
const INJECTED = 'fatal: unable to read tree (injected by the test)';

const IGNORE_CASE = {
  GIT_CONFIG_COUNT: '1',
  GIT_CONFIG_KEY_0: 'core.ignoreCase',
  GIT_CONFIG_VALUE_0: 'true',
};

beforeAll(async () => {
  cluster = await startCluster({ hosts: 0 });
  savedPath = process.env.PATH;
  shimDir = await mkdtemp(join(tmpdir(), 'flotilla-git-shim-'));
  // runGit calls `git -C <dir> <command> …`: the shim fails merge-tree when the commit merged in
  // (its last argument) holds poison.txt, on every try, and passes everything else to git.
  const realGit = `${(await runGit(['--exec-path'])).stdout.trim()}/git`;
  await writeFile(
    join(shimDir, 'git'),
    [
      '#!/bin/sh',
      'if [ "$3" = merge-tree ]; then',
      '  for last; do :; done',
      `  if ${realGit} -C "$2" cat-file -e "$last:poison.txt" 2>/dev/null; then`,
      `    echo '${INJECTED}' >&2`,
      '    exit 128',
      '  fi',
      'fi',
      `exec ${realGit} "$@"`,
      '',
    ].join('\n'),
  );
  await chmod(join(shimDir, 'git'), 0o755);
  process.env.PATH = `${shimDir}${delimiter}${savedPath}`;
  // Names matched ignoring case (core.ignoreCase, as on macOS): the gate leaves every merge to
  // merge-tree then, instead of merging what no file merge needs in-process (loose-merge.ts).
  Object.assign(process.env, IGNORE_CASE);
  await cluster.addHost();
});
afterAll(async () => {
  await cluster?.stop();
  process.env.PATH = savedPath;
  for (const name of Object.keys(IGNORE_CASE)) delete process.env[name];
  if (shimDir) await rm(shimDir, { recursive: true, force: true });
});

function task(id: string, steps: string, deps: string[] = []): string {
  return [
    `  - id: ${id}`,
    `    title: ${id}`,
    ...(deps.length > 0 ? [`    depends_on: [${deps.join(', ')}]`] : []),
    `    exit_criteria: ["true"]`,
    `    critic: false`,
    `    description: |`,
    indent(sim(steps)),
  ].join('\n');
}

describe('a gate job that fails for good', () => {
  it('fails its task with the gate and the cause named, skips its dependent and lets the mission end', async () => {
    const id = await cluster.submit(
      [
        'goal: broken gate',
        'workspace: ./ws',
        'defaults: { backoff: 100ms, max_attempts: 3 }',
        'tasks:',
        task('broken', '- write: {path: poison.txt, content: "x"}'),
        task('after', '- write: {path: after.txt, content: "a"}', ['broken']),
        task('solo', '- write: {path: solo.txt, content: "s"}'),
      ].join('\n'),
    );
    // Without the settle on the gate job's last failure this never returns (the test times out).
    const status = await cluster.client.wait(id, { pollMs: 200 });
    expect(status.status).toBe('partial');
    const tasks = Object.fromEntries(status.tasks.map((t) => [t.id, t]));
    // Failed once, at its first task attempt: a gate that cannot run is not retried as new attempts.
    expect(tasks.broken).toMatchObject({ status: 'failed', attempts: 1 });
    expect(tasks.broken?.error).toMatch(/^gate failed after 5 tries: git merge-tree .*: /);
    expect(tasks.broken?.error).toContain(INJECTED);
    expect(tasks.after).toMatchObject({ status: 'skipped', error: 'dependency broken failed' });
    expect(tasks.solo).toMatchObject({ status: 'completed', attempts: 1 });

    // One gate row for the failure, written with the transition.
    const gates = (await cluster.client.store.getAudit(id)).filter(
      (e) => e.stage === 'gate' && e.taskId === 'broken',
    );
    expect(gates).toHaveLength(1);
    expect(gates[0]?.event).toMatchObject({ kind: 'gate', action: 'fail' });
    expect(gates[0]?.message).toContain(INJECTED);

    // Only the independent task's work is in the integration branch.
    const repo = (await cluster.client.store.getMission(id)).meta.repo;
    const merges = (
      await runGit(['log', '--merges', '--format=%s', `refs/heads/${integrationBranch(id)}`], { cwd: repo })
    ).stdout
      .split('\n')
      .filter(Boolean);
    expect(merges).toEqual(['flotilla: merge solo (attempt 1)']);
  });
});
