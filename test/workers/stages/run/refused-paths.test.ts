import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditEntry, MissionStatusJson } from '../../../../src/shared/contracts.js';
import { indent, sim, startCluster, type TestCluster } from '../../../helpers/flotilla.js';

/**
 * Paths git refuses on the real pipeline (verify-path.ts): an agent that writes `.GIT/hooks/…`,
 * `GIT~1/config` or `sub/.Git/config` (a hook for whoever checks the branch out on macOS or
 * Windows) gets none of them onto its attempt ref or the integration branch; the attempt fails
 * naming each path and git's reason, and the retry's prompt says so.
 */

const PLANTED = ['.GIT/hooks/post-checkout', 'GIT~1/config', 'sub/.Git/config'];

/** Plants the hooks on attempt 1 alone: its own prompt file is there only then. */
const PLANT = [
  "const fs = require('fs');",
  "if (fs.existsSync('.planning/dispatch/planted-a1-PROMPT.md'))",
  `  for (const p of ${JSON.stringify(PLANTED)}) {`,
  "    fs.mkdirSync(require('path').dirname(p), { recursive: true });",
  "    fs.writeFileSync(p, '#!/bin/sh\\necho owned\\n');",
  '  }',
].join('\n');

function runEntry(audit: AuditEntry[], taskId: string, attempt: number): AuditEntry {
  const entry = audit.find((e) => e.taskId === taskId && e.stage === 'run' && e.attempt === attempt);
  if (!entry) throw new Error(`no run entry for ${taskId} attempt ${attempt}`);
  return entry;
}

async function git(repo: string, args: string[]): Promise<string> {
  return (await execa('git', ['-C', repo, ...args])).stdout;
}

describe('paths git refuses', () => {
  let cluster: TestCluster;
  let status: MissionStatusJson;
  let audit: AuditEntry[];
  let repo: string;

  beforeAll(async () => {
    cluster = await startCluster({ hosts: 1, slots: 2 });
    const yaml = [
      'goal: Prove the path gate',
      'workspace: ./ws',
      'defaults: { max_attempts: 2, backoff: 100ms, timeout: 60s }',
      'tasks:',
      '  - id: planted',
      '    title: Write src/ok.txt, and plant hooks on the first try',
      '    capability: code_implementation',
      '    critic: false',
      '    exit_criteria: ["test -f src/ok.txt"]',
      '    description: |',
      '      Add src/ok.txt.',
      '',
      indent(
        sim(
          [
            '- write: {path: src/ok.txt, content: "ok"}',
            `- run: [${JSON.stringify(process.execPath)}, -e, ${JSON.stringify(PLANT)}]`,
          ].join('\n'),
        ),
      ),
    ].join('\n');
    const id = await cluster.submit(yaml, { 'ws/README.md': '# seed\n' });
    status = await cluster.client.wait(id, { pollMs: 200 });
    audit = await cluster.client.store.getAudit(id);
    repo = (await cluster.client.store.getMission(id)).meta.repo;
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it('fails the attempt that wrote them, and completes the next', () => {
    expect(status.status).toBe('done');
    const task = status.tasks.find((t) => t.id === 'planted');
    expect(task?.status).toBe('completed');
    expect(task?.attempts).toBe(2);
  });

  it('keeps them off the attempt ref and the integration branch; the repository passes fsck --strict', async () => {
    const first = (await git(repo, ['ls-tree', '-r', '--name-only', `refs/flotilla/${status.id}/planted/a1`]))
      .split('\n')
      .filter(Boolean);
    expect(first).toContain('src/ok.txt');
    for (const path of PLANTED) expect(first).not.toContain(path);
    const branch = (await git(repo, ['ls-tree', '-r', '--name-only', status.branch])).split('\n');
    expect(branch).toContain('src/ok.txt');
    expect(branch.filter((path) => /git/i.test(path) && !path.startsWith('.planning/'))).toEqual([]);
    const fsck = await execa('git', ['-C', repo, 'fsck', '--strict', '--no-dangling'], { reject: false });
    expect(`${fsck.stdout}${fsck.stderr}`).toBe('');
  });

  it("names each path and git's reason in the audit and in the retry's prompt", () => {
    expect(runEntry(audit, 'planted', 1).message).toContain('git refuses this path');
    const prompt = runEntry(audit, 'planted', 2).files?.['prompt.md'] ?? '';
    expect(prompt).toContain('PREVIOUS ATTEMPT FAILED (attempt 1/2)');
    expect(prompt).toContain(
      '`.GIT/hooks/post-checkout`: git refuses this path (a part of it is `.git`, in upper or lower case)',
    );
    expect(prompt).toContain(
      '`sub/.Git/config`: git refuses this path (a part of it is `.git`, in upper or lower case)',
    );
    expect(prompt).toContain(
      '`GIT~1/config`: git refuses this path (Windows would read a part of it as `.git`',
    );
  });
});
