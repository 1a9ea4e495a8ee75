import { describe, expect, it } from 'vitest';
import { type AuditEvent, renderAuditEvent, spawnedCli } from '../../src/shared/audit.js';

const run: AuditEvent = {
  kind: 'run',
  cli: 'claude-code',
  cliName: 'Claude Code',
  exitCode: 0,
  timedOut: false,
  durationMs: 41_400,
  resultStatus: 'success',
  resultSource: 'file',
  warnings: [],
  rolledBack: ['secrets.txt'],
};

describe('renderAuditEvent', () => {
  it.each<[AuditEvent, string]>([
    [
      {
        kind: 'route',
        attempt: 2,
        queue: 'dispatch.testing',
        how: 'exact',
        reason: 'exact match',
        delayMs: 10_000,
      },
      'attempt 2 → dispatch.testing: exact match (starts in 10s)',
    ],
    [run, 'Claude Code exited 0 after 41s; result success from file; rolled back 1 file(s) outside scope'],
    [
      { kind: 'setup-failed', command: 'npm ci', exitCode: 1, timedOut: false },
      'setup failed before the CLI started: $ npm ci (exit 1)',
    ],
    [
      { kind: 'setup-failed', command: 'npm ci', exitCode: null, timedOut: true },
      'setup failed before the CLI started: $ npm ci (timed out)',
    ],
    [
      {
        kind: 'verify',
        passed: true,
        criteria: [{ command: 'test -f a', exitCode: 0, timedOut: false, tail: '' }],
        inRunCheckout: true,
      },
      "exit criteria passed: ✓ test -f a (in the run's checkout)",
    ],
    [
      {
        kind: 'escaped-checkout',
        cli: 'opencode',
        cliName: 'OpenCode',
        root: '/home/u/project',
        paths: ['.planning/', 'greeting.txt'],
        own: ['.planning/dispatch/t1-a1-RESULT.md'],
      },
      "OpenCode wrote outside its checkout: 2 path(s) changed in /home/u/project, the repository flotilla runs in: .planning/, greeting.txt (this attempt's own .planning/dispatch/t1-a1-RESULT.md among them). Left as they are; check them before anything else uses that directory.",
    ],
    [
      {
        kind: 'origin-changed',
        cli: 'opencode',
        cliName: 'OpenCode',
        root: '/home/u/project',
        paths: ['src/a.ts'],
      },
      '1 path(s) changed in /home/u/project, the repository flotilla runs in, while OpenCode ran: src/a.ts. None is a file only this attempt would write, so someone else (a person editing that repository, another CLI) may have changed them; the attempt goes on. Left as they are; check them if no one should have.',
    ],
    [
      { kind: 'checkpoint', commit: 'a'.repeat(40), ref: 'refs/flotilla-wip/m/t/a1', durationMs: 42 },
      'checkpoint aaaaaaaaaaaa saved to refs/flotilla-wip/m/t/a1 (42 ms)',
    ],
    [
      { kind: 'checkpoint-failed', action: 'save', reason: 'git push: connection refused' },
      'checkpoint not saved (the run goes on): git push: connection refused',
    ],
    [
      { kind: 'checkpoint-failed', action: 'resume', reason: 'git fetch: timed out' },
      'checkpoint not resumed from (the run starts from the base): git fetch: timed out',
    ],
    [
      { kind: 'resumed', commit: 'a'.repeat(40), baseCommit: 'b'.repeat(40) },
      'resumed from checkpoint aaaaaaaaaaaa of the interrupted run, on its base bbbbbbbbbbbb (the same attempt)',
    ],
    [
      { kind: 'run-refused', reason: 'budget of $1 spent ($1.20); attempt 2 not started' },
      'budget of $1 spent ($1.20); attempt 2 not started',
    ],
    [
      { kind: 'rate-limited', cli: 'codex', reply: '429 Too Many Requests', cooldownMs: 60_000 },
      'rate limited (attempt not counted, back to the queue): 429 Too Many Requests',
    ],
    [
      {
        kind: 'verify',
        passed: false,
        criteria: [
          { command: 'npm test', exitCode: 0, timedOut: false, tail: '' },
          { command: 'sleep 99', exitCode: 0, timedOut: true, tail: '' },
        ],
      },
      'exit criteria failed: ✓ npm test; ✗ sleep 99',
    ],
    [
      {
        kind: 'critic',
        cli: 'sim',
        cliName: 'Sim',
        score: 4.5,
        verdict: 'reject',
        issues: ['a; b', 'c'],
        selfReview: true,
        exitCode: 0,
      },
      'critic Sim (no other reviewer CLI in the cluster: self-review): score 4.5/10, reject — a; b; c',
    ],
    [
      { kind: 'gate', action: 'retry', delayMs: 5_000, reason: 'merge conflict' },
      'retry in 5s: merge conflict',
    ],
    [{ kind: 'gate', action: 'approve', score: 8 }, 'approved (score 8)'],
    [{ kind: 'mission', action: 'finished', status: 'partial' }, 'mission partial'],
  ])('%o', (event, sentence) => {
    expect(renderAuditEvent(event)).toBe(sentence);
  });
});

describe('spawnedCli', () => {
  it('counts events where a CLI process ran, and not a refusal or a route', () => {
    expect(spawnedCli(run)).toBe(true);
    expect(spawnedCli({ kind: 'rate-limited', cli: 'x', reply: '429', cooldownMs: 1 })).toBe(true);
    expect(spawnedCli({ kind: 'run-refused', reason: 'budget spent' })).toBe(false);
    expect(spawnedCli({ kind: 'gate', action: 'approve' })).toBe(false);
    expect(spawnedCli(undefined)).toBe(false);
  });
});
