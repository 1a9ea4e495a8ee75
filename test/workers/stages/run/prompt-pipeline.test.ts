import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditEntry, MissionStatusJson } from '../../../../src/shared/contracts.js';
import { indent, ROOT, sim, startCluster, type TestCluster } from '../../../helpers/flotilla.js';

/**
 * What the CLI is actually given, on the real pipeline (Redis, git, the stand-in agent as a
 * subprocess): the prompt file's sections in cli-dispatch's order, and where the prompt file ends up
 * in the attempt's branch (archived after success, left in place after a failure).
 */

const AGENT = join(ROOT, 'test', 'fixtures', 'agents', 'reviewer-x.md');

function runEntry(audit: AuditEntry[], taskId: string, attempt = 1): AuditEntry {
  const entry = audit.find((e) => e.taskId === taskId && e.stage === 'run' && e.attempt === attempt);
  if (!entry) throw new Error(`no run entry for ${taskId} a${attempt}`);
  return entry;
}

function prompt(audit: AuditEntry[], taskId: string): string {
  return runEntry(audit, taskId).files?.['prompt.md'] ?? '';
}

function byId(status: MissionStatusJson, id: string) {
  const found = status.tasks.find((t) => t.id === id);
  if (!found) throw new Error(`no task ${id}`);
  return found;
}

async function git(repo: string, args: string[]): Promise<string> {
  return (await execa('git', ['-C', repo, ...args])).stdout;
}

/** Offsets of each needle in the text; -1 for any that is missing makes order checks fail loudly. */
function positions(text: string, needles: readonly string[]): number[] {
  return needles.map((needle) => text.indexOf(needle));
}

describe('the prompt a CLI receives', () => {
  let cluster: TestCluster;
  let status: MissionStatusJson;
  let audit: AuditEntry[];
  let repo: string;
  let personality: string;

  beforeAll(async () => {
    cluster = await startCluster({ hosts: 1, slots: 4 });
    personality = await readFile(AGENT, 'utf8');
    const yaml = [
      'goal: Prove what the CLI is given',
      'workspace: ./ws',
      'defaults: { max_attempts: 2, backoff: 200ms, timeout: 60s }',
      'tasks:',
      '  - id: base',
      '    title: Lay the foundation',
      '    capability: code_implementation',
      '    critic: false',
      '    exit_criteria: ["test -f base.txt"]',
      '    description: |',
      '      Write the base file.',
      '',
      indent(
        sim(
          '- write: {path: base.txt, content: "base"}\n- result: {summary: "Foundation laid: base.txt holds the HANDOFF-MARKER-7731."}',
        ),
      ),
      '  - id: review-notes',
      '    title: Write review notes',
      '    capability: code_implementation',
      '    agent: reviewer-x',
      '    depends_on: [base]',
      '    files: [notes/review.md]',
      '    critic: false',
      '    exit_criteria: ["test -f notes/review.md"]',
      '    description: |',
      '      Review base.txt and write notes.',
      '',
      indent(sim('- write: {path: notes/review.md, content: "looks fine — Reviewer X"}')),
      '  - id: audit-ro',
      '    title: Assess security read-only',
      '    capability: security_audit',
      '    control_mode: surgical',
      '    critic: false',
      '    exit_criteria: ["true"]',
      '    description: Assess the repository.',
      '  - id: advise',
      '    title: Advise on layout',
      '    capability: documentation',
      '    control_mode: advisory',
      '    critic: false',
      '    exit_criteria: ["true"]',
      '    description: Recommend a layout.',
      '  - id: broken',
      '    title: Fail on purpose',
      '    capability: code_implementation',
      '    max_attempts: 1',
      '    critic: false',
      '    exit_criteria: ["true"]',
      '    description: |',
      '      This fails.',
      '',
      indent(
        sim(
          '- write: {path: half.txt, content: "half"}\n- fail_until_attempt: {attempt: 5, message: "deliberate failure"}',
        ),
      ),
    ].join('\n');
    const id = await cluster.submit(yaml, { 'agents/reviewer-x.md': personality });
    status = await cluster.client.wait(id, { pollMs: 200 });
    audit = await cluster.client.store.getAudit(id);
    repo = (await cluster.client.store.getMission(id)).meta.repo;
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it('runs the mission: everything completes except the task that fails on purpose', () => {
    expect(status.status).toBe('partial');
    for (const id of ['base', 'review-notes', 'audit-ro', 'advise'])
      expect(byId(status, id).status).toBe('completed');
    expect(byId(status, 'broken')).toMatchObject({ status: 'failed', attempts: 1 });
  });

  it('puts the whole agent file at the top, then # Dispatch Task, handoff, scope, task, result instructions', () => {
    const text = prompt(audit, 'review-notes');
    // Whole and first: the file's own front matter included, byte for byte.
    expect(text.startsWith(personality.trim())).toBe(true);
    const order = positions(text, [
      '# Reviewer X',
      '# Dispatch Task',
      '## Handoff Context from Prior Wave',
      '### From Lay the foundation (base)',
      '## File Scope Guidance',
      '## Task',
      '### Write review notes (review-notes)',
      '## Result Instructions',
    ]);
    expect(order.every((at) => at >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
  });

  it('hands the approved dependency’s summary, outputs and findings to its dependent', () => {
    const text = prompt(audit, 'review-notes');
    const handoff = text.slice(
      text.indexOf('## Handoff Context from Prior Wave'),
      text.indexOf('## File Scope Guidance'),
    );
    expect(handoff).toContain('**Summary**: Foundation laid: base.txt holds the HANDOFF-MARKER-7731.');
    expect(handoff).toMatch(/\*\*Outputs\*\*: base\.txt/);
    expect(handoff).toContain('**Findings**:');
    expect(handoff).toContain('Role: builder; attempt 1');
    // A task without dependencies gets no handoff section at all.
    expect(prompt(audit, 'base')).not.toContain('## Handoff Context');
  });

  it('names the guarded file list, and the result path resolved for this attempt', () => {
    const text = prompt(audit, 'review-notes');
    expect(text).toContain('This task is expected to touch only these files:\n\n- `notes/review.md`');
    expect(text).toContain(
      'When you complete this task, write your result to: .planning/dispatch/review-notes-a1-RESULT.md',
    );
  });

  it('resolves {model} from the agent’s model_tier (check → the adapter’s model_check)', () => {
    const result = runEntry(audit, 'review-notes').files?.['result.md'] ?? '';
    expect(result).toContain('model sim-small');
    expect(runEntry(audit, 'base').files?.['result.md']).toContain('model sim-medium');
  });

  it('injects the control-scope heading of each mode, and none in a prompt without an agent', () => {
    expect(prompt(audit, 'audit-ro')).toContain('## Read-Only Constraint');
    expect(prompt(audit, 'advise')).toContain('## Advisory Mode');
    expect(prompt(audit, 'base')).toContain('## File Scope Guidance');
    expect(prompt(audit, 'audit-ro')).not.toContain('## File Scope Guidance');
    expect(prompt(audit, 'base').startsWith('# Dispatch Task')).toBe(true);
  });

  it('archives PROMPT and RESULT after success in the attempt’s own commit, not on the integration branch', async () => {
    const branch = `refs/flotilla/${status.id}/review-notes/a1`;
    const files = (await git(repo, ['ls-tree', '-r', '--name-only', branch])).split('\n');
    const archived = files.filter((f) => f.startsWith('.planning/dispatch/archive/'));
    const promptFile = archived.find((f) => /\/\d{8}-\d{6}-review-notes-a1-PROMPT\.md$/.test(f));
    expect(promptFile, archived.join('\n')).toBeDefined();
    expect(archived.some((f) => /\/\d{8}-\d{6}-review-notes-a1-RESULT\.md$/.test(f))).toBe(true);
    expect(files).not.toContain('.planning/dispatch/review-notes-a1-PROMPT.md');
    // The file the CLI read is the prompt the audit trail shows.
    expect(await git(repo, ['show', `${branch}:${promptFile}`])).toBe(
      prompt(audit, 'review-notes').trimEnd(),
    );
    // The integration branch holds the work only; the prompt stays with the attempt and the report.
    const integration = await git(repo, ['ls-tree', '-r', '--name-only', status.branch]);
    expect(integration).not.toContain('.planning/dispatch/');
    expect(integration).toContain('notes/review.md');
  });

  it('leaves PROMPT and RESULT in place on a failed attempt’s branch', async () => {
    const branch = `refs/flotilla/${status.id}/broken/a1`;
    const files = (await git(repo, ['ls-tree', '-r', '--name-only', branch])).split('\n');
    expect(files).toContain('.planning/dispatch/broken-a1-PROMPT.md');
    expect(files).toContain('.planning/dispatch/broken-a1-RESULT.md');
    expect(files.some((f) => f.includes('archive/') && f.includes('broken'))).toBe(false);
    const onBranch = await git(repo, ['show', `${branch}:.planning/dispatch/broken-a1-PROMPT.md`]);
    expect(onBranch).toBe(prompt(audit, 'broken').trimEnd());
    expect(await git(repo, ['show', `${branch}:.planning/dispatch/broken-a1-RESULT.md`])).toContain(
      'deliberate failure',
    );
    // The failed work never reaches the integration branch.
    expect(await git(repo, ['ls-tree', '-r', '--name-only', status.branch])).not.toContain('half.txt');
  });
});
