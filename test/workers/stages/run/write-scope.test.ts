import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditEntry, MissionStatusJson } from '../../../../src/shared/contracts.js';
import { indent, ROOT, sim, startCluster, type TestCluster } from '../../../helpers/flotilla.js';

/**
 * Write scope on the real pipeline (DESIGN §4 step 5, agent-dispatch's rollback): what a CLI changes
 * outside the task's allowed_paths, or anything at all in a read-only control mode, is reverted
 * before the attempt is committed, so it never reaches the attempt branch or the integration branch.
 */

function runEntry(audit: AuditEntry[], taskId: string): AuditEntry {
  const entry = audit.find((e) => e.taskId === taskId && e.stage === 'run');
  if (!entry) throw new Error(`no run entry for ${taskId}`);
  return entry;
}

async function git(repo: string, args: string[]): Promise<string> {
  return (await execa('git', ['-C', repo, ...args])).stdout;
}

/** The branch's files, flotilla's own `.planning/` by-products left out. */
async function workFiles(repo: string, ref: string): Promise<string[]> {
  const out = await git(repo, ['ls-tree', '-r', '--name-only', ref]);
  return out.split('\n').filter((f) => f && !f.startsWith('.planning/'));
}

const SEED = {
  'ws/README.md': '# seed\n',
  'ws/secrets/config.txt': 'original secret\n',
  'ws/src/main.txt': 'main\n',
};

describe('write scope', () => {
  let cluster: TestCluster;
  let status: MissionStatusJson;
  let audit: AuditEntry[];
  let repo: string;
  let baseCommit: string;

  beforeAll(async () => {
    cluster = await startCluster({ hosts: 1, slots: 4 });
    const yaml = [
      'goal: Prove write scope',
      'workspace: ./ws',
      'defaults: { max_attempts: 1, timeout: 60s }',
      'tasks:',
      '  - id: scoped',
      '    title: Write inside src only',
      '    capability: code_implementation',
      '    allowed_paths: [src/]',
      '    critic: false',
      '    exit_criteria: ["test -f src/ok.txt", "test ! -e secrets/leak.txt", "grep -q original secrets/config.txt"]',
      '    description: |',
      '      Add src/ok.txt.',
      '',
      indent(
        sim(
          [
            '- write: {path: src/ok.txt, content: "ok"}',
            '- write_outside_scope: secrets/leak.txt',
            '- write_outside_scope: {path: secrets/config.txt, content: "tampered"}',
          ].join('\n'),
        ),
      ),
      '  - id: downstream',
      '    title: Read what scoped handed over',
      '    capability: code_implementation',
      '    depends_on: [scoped]',
      '    critic: false',
      '    exit_criteria: ["test -f src/ok.txt"]',
      '    description: Nothing to do.',
      '  - id: advice',
      '    title: Advise, and try to write anyway',
      '    capability: documentation',
      '    control_mode: advisory',
      '    critic: false',
      '    exit_criteria: ["true"]',
      '    description: |',
      '      Recommend changes only.',
      '',
      indent(
        sim(
          [
            '- write: {path: docs/advice.md, content: "do this"}',
            '- write: {path: README.md, content: "rewritten by an advisor"}',
          ].join('\n'),
        ),
      ),
      '  - id: assess',
      '    title: Assess read-only, and try to write anyway',
      '    capability: security_audit',
      '    control_mode: surgical',
      '    critic: false',
      '    exit_criteria: ["true"]',
      '    description: |',
      '      Assess only.',
      '',
      indent(sim('- write: {path: src/main.txt, content: "edited by an assessor"}')),
      '  - id: agent-scoped',
      '    title: Write notes as reviewer-x',
      '    capability: code_implementation',
      '    agent: reviewer-x',
      '    critic: false',
      '    exit_criteria: ["test -f notes/agent.md"]',
      '    description: |',
      '      The agent file limits writes to notes/.',
      '',
      indent(sim('- write: {path: notes/agent.md, content: "noted"}\n- write_outside_scope: src/stray.txt')),
    ].join('\n');
    const agent = await readFile(join(ROOT, 'test', 'fixtures', 'agents', 'reviewer-x.md'), 'utf8');
    const id = await cluster.submit(yaml, { ...SEED, 'agents/reviewer-x.md': agent });
    status = await cluster.client.wait(id, { pollMs: 200 });
    audit = await cluster.client.store.getAudit(id);
    const { meta } = await cluster.client.store.getMission(id);
    repo = meta.repo;
    baseCommit = meta.baseCommit;
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it('completes every task: the rollback happened before verify saw the checkout', () => {
    expect(status.status).toBe('done');
    for (const task of status.tasks) expect(task.status).toBe('completed');
  });

  it('keeps the in-scope file and reverts the new and the modified file outside allowed_paths', async () => {
    const files = await workFiles(repo, status.branch);
    expect(files).toContain('src/ok.txt');
    expect(files).not.toContain('secrets/leak.txt');
    expect(await git(repo, ['show', `${status.branch}:secrets/config.txt`])).toBe('original secret');
    // The attempt's ref never held them either.
    const attempt = await workFiles(repo, `refs/flotilla/${status.id}/scoped/a1`);
    expect(attempt).not.toContain('secrets/leak.txt');
    expect(
      await git(repo, [
        'diff',
        '--name-only',
        baseCommit,
        `refs/flotilla/${status.id}/scoped/a1`,
        '--',
        'secrets',
      ]),
    ).toBe('');
  });

  it('says so: the audit names the rollback, the summary handed to dependents lists the files', async () => {
    expect(runEntry(audit, 'scoped').message).toContain('rolled back 2 file(s) outside scope');
    const state = await cluster.client.store.getTask(status.id, 'scoped');
    expect(state?.handoff?.summary).toContain(
      'Write violation rolled back: secrets/config.txt, secrets/leak.txt',
    );
    const downstream = runEntry(audit, 'downstream').files?.['prompt.md'] ?? '';
    expect(downstream).toContain('Write violation rolled back: secrets/config.txt, secrets/leak.txt');
  });

  it('takes the agent file’s allowed_paths when the task sets none, and says so in the prompt', async () => {
    const files = await workFiles(repo, status.branch);
    expect(files).toContain('notes/agent.md');
    expect(files).not.toContain('src/stray.txt');
    expect(runEntry(audit, 'agent-scoped').message).toContain('rolled back 1 file(s) outside scope');
    expect(runEntry(audit, 'agent-scoped').files?.['prompt.md']).toContain(
      'Writes outside these paths are reverted when you finish:\n\n- `notes/`',
    );
  });

  it('changes nothing in the repository for advisory and surgical tasks that wrote files', async () => {
    for (const task of ['advice', 'assess']) {
      const branch = `refs/flotilla/${status.id}/${task}/a1`;
      const changed = (await git(repo, ['diff', '--name-only', baseCommit, branch]))
        .split('\n')
        .filter(Boolean);
      expect(
        changed.every((f) => f.startsWith('.planning/')),
        changed.join(', '),
      ).toBe(true);
      expect(runEntry(audit, task).message).toMatch(/rolled back \d file\(s\) outside scope/);
    }
    const files = await workFiles(repo, status.branch);
    expect(files).not.toContain('docs/advice.md');
    expect(await git(repo, ['show', `${status.branch}:README.md`])).toBe('# seed');
    expect(await git(repo, ['show', `${status.branch}:src/main.txt`])).toBe('main');
  });
});
