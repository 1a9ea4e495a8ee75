import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { entryContentHash, genesisHash, linkHash } from '../../src/shared/audit-chain.js';
import { checkReceipt, firstDifference, type VerifyFacts } from '../../src/shared/check-receipt.js';
import type { AuditEntry } from '../../src/shared/contracts.js';
import { checkSignature, type Receipt, signReceipt } from '../../src/shared/receipt.js';
import { buildReceipt } from '../../src/workers/stages/finalize/receipt.js';

const keys = generateKeyPairSync('ed25519');
const otherKeys = generateKeyPairSync('ed25519');

function chained(missionId: string, contents: AuditEntry[]): AuditEntry[] {
  let prev = genesisHash(missionId);
  return contents.map((content, i) => {
    const hash = linkHash(prev, entryContentHash(content));
    const entry = { ...content, chain: { n: i + 1, prev, content: entryContentHash(content), hash } };
    prev = hash;
    return entry;
  });
}

const at = '2026-12-01T09:00:00.000Z';
const RUN = {
  kind: 'run',
  cli: 'sim',
  cliName: 'Sim',
  exitCode: 0,
  timedOut: false,
  durationMs: 1000,
  resultStatus: 'success',
  resultSource: 'result file',
  warnings: [],
  rolledBack: [],
} as const;
const trail = chained('m1', [
  { at, taskId: 'mean', attempt: 1, stage: 'route', message: 'routed' },
  {
    at,
    taskId: 'mean',
    attempt: 1,
    stage: 'run',
    host: 'h1',
    cli: 'sim',
    message: 'ran',
    files: { 'prompt.md': 'P1', 'result.md': 'R1' },
    event: {
      ...RUN,
      cliVersion: '0.1.0',
      platform: 'linux/x64',
      tier: 'execution',
      model: 'sim-medium',
      commit: 'c1'.repeat(20),
    },
  },
  {
    at,
    taskId: 'mean',
    attempt: 1,
    stage: 'verify',
    message: 'failed',
    files: { 'criteria.txt': '$ false\n# exit 1' },
    event: {
      kind: 'verify',
      passed: false,
      criteria: [{ command: 'false', exitCode: 1, timedOut: false, tail: '' }],
    },
  },
  {
    at,
    taskId: 'mean',
    attempt: 1,
    stage: 'gate',
    message: 'retry',
    event: { kind: 'gate', action: 'retry' },
  },
  {
    at,
    taskId: 'mean',
    attempt: 2,
    stage: 'run',
    host: 'h2',
    cli: 'sim',
    message: 'ran',
    files: { 'prompt.md': 'P2', 'result.md': 'R2' },
    event: {
      ...RUN,
      tier: 'planning',
      model: 'sim-large',
      escalation: 'tier: attempt 1 failed',
      commit: 'c2'.repeat(20),
    },
  },
  {
    at,
    taskId: 'mean',
    attempt: 2,
    stage: 'critic',
    cli: 'rev',
    message: 'score 8',
    event: {
      kind: 'critic',
      cli: 'rev',
      cliName: 'rev',
      score: 8,
      verdict: 'approve',
      issues: [],
      selfReview: false,
      exitCode: 0,
    },
  },
  {
    at,
    taskId: 'mean',
    attempt: 2,
    stage: 'gate',
    message: 'approved',
    event: { kind: 'gate', action: 'approve', commit: 'm2'.repeat(20) },
  },
  { at, taskId: '', attempt: 0, stage: 'mission', message: 'mission done' },
]);

const input = {
  mission: {
    id: 'm1',
    goal: 'g',
    status: 'done',
    repo: '/repo',
    baseCommit: 'b0'.repeat(20),
    branch: 'flotilla/m1',
    createdAt: at,
    finishedAt: at,
  },
  spec: { goal: 'g', tasks: [{ id: 'mean' }] },
  integrationTip: 'm2'.repeat(20),
  tasks: [{ id: 'mean', status: 'completed' }],
  audit: trail,
};
const body = buildReceipt(input);
const receipt = signReceipt(body, keys.privateKey);

describe('buildReceipt', () => {
  it('reads every attempt fact from the audit trail', () => {
    expect(body.tasks).toEqual([
      {
        id: 'mean',
        status: 'completed',
        attempts: [
          expect.objectContaining({
            attempt: 1,
            host: 'h1',
            cli: 'sim',
            cliVersion: '0.1.0',
            platform: 'linux/x64',
            modelTier: 'execution',
            model: 'sim-medium',
            escalation: null,
            criteriaPassed: false,
            criticScore: null,
            gate: 'retry',
            commit: 'c1'.repeat(20),
            mergeCommit: null,
            entries: [1, 2, 3, 4],
          }),
          expect.objectContaining({
            attempt: 2,
            modelTier: 'planning',
            escalation: 'tier: attempt 1 failed',
            criteriaHash: null,
            criticScore: 8,
            gate: 'approve',
            mergeCommit: 'm2'.repeat(20),
            entries: [5, 6, 7],
          }),
        ],
      },
    ]);
    expect(body.audit.count).toBe(8);
    expect(body.audit.head).toBe(trail[7]?.chain?.hash);
    expect(body.tasks[0]?.attempts[0]?.promptHash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('is deterministic: the same state gives the same body', () => {
    expect(buildReceipt(input)).toEqual(body);
  });
});

describe('receipt signature', () => {
  it('verifies with the embedded key and with the pinned one', () => {
    expect(checkSignature(receipt)).toMatchObject({ ok: true, pinned: false });
    expect(checkSignature(receipt, keys.publicKey)).toMatchObject({ ok: true, pinned: true });
  });

  it('survives re-indenting the file', () => {
    const reparsed = JSON.parse(JSON.stringify(receipt, null, 4)) as Receipt;
    expect(checkSignature(reparsed, keys.publicKey).ok).toBe(true);
  });

  const tampered: Array<[string, (r: Receipt) => Receipt, RegExp]> = [
    [
      'one changed byte in a hash',
      (r) => JSON.parse(JSON.stringify(r).replace(r.audit.head, `0${r.audit.head.slice(1)}`)),
      /altered after signing/,
    ],
    [
      'a changed score',
      (r) => JSON.parse(JSON.stringify(r).replace('"criticScore":8', '"criticScore":9')),
      /altered after signing/,
    ],
    ['no signature', (r) => ({ ...r, signature: null }), /not signed/],
    ['re-signed with another key', (r) => signReceipt(r, otherKeys.privateKey), /signed by another key/],
  ];
  it.each(tampered)('fails after %s', (_name, tamper, message) => {
    const check = checkSignature(tamper(receipt), keys.publicKey);
    expect(check.ok).toBe(false);
    if (!check.ok) expect(check.message).toMatch(message);
  });

  it('a receipt re-signed by another key passes without a pinned key: integrity only', () => {
    expect(checkSignature(signReceipt(receipt, otherKeys.privateKey)).ok).toBe(true);
  });
});

describe('checkReceipt', () => {
  const facts = (over: Partial<VerifyFacts> = {}): VerifyFacts => ({
    receipt,
    pinnedKey: keys.publicKey,
    store: { audit: trail, rebuilt: body },
    repo: { path: '/repo', branchTip: 'm2'.repeat(20), missing: [] },
    ...over,
  });

  it('passes when everything holds, authenticated under the pinned key', () => {
    const report = checkReceipt(facts());
    expect(report).toMatchObject({ ok: true, level: 'authenticated', firstProblem: null });
    expect(report.lines.every((line) => line.startsWith('✓'))).toBe(true);
  });

  it('accepts delivery entries written after the receipt (delivery follows signing), and only those', () => {
    const delivery = { at, taskId: '', attempt: 0, stage: 'delivery' as const, message: 'pushed' };
    const later = chained('m1', [...trail.map(({ chain: _c, ...e }) => e), delivery, delivery]);
    const report = checkReceipt(facts({ store: { audit: later, rebuilt: body } }));
    expect(report).toMatchObject({ ok: true, firstProblem: null });
    expect(report.lines.join('\n')).toContain('2 delivery or on_finish entries follow it');
    const mixed = chained('m1', [
      ...trail.map(({ chain: _c, ...e }) => e),
      delivery,
      { ...delivery, stage: 'mission' as const },
    ]);
    expect(checkReceipt(facts({ store: { audit: mixed, rebuilt: body } })).firstProblem).toMatch(
      /^audit entry 10 \(mission\): written after the receipt was signed/,
    );
  });

  it('says plainly when only integrity was checked', () => {
    const report = checkReceipt(facts({ pinnedKey: undefined, store: null, repo: null }));
    expect(report.ok).toBe(true);
    expect(report.level).toBe('integrity');
    expect(report.lines.join('\n')).toMatch(/no key pinned .* integrity only, not who signed it/);
    expect(report.lines.join('\n')).toMatch(/not recomputed/);
  });

  const failing: Array<[string, Partial<VerifyFacts>, RegExp]> = [
    [
      'a deleted audit row',
      { store: { audit: trail.filter((e) => e.chain?.n !== 6), rebuilt: body } },
      /^audit entry 6: missing: the trail goes from entry 5 to entry 7 \(deleted\)/,
    ],
    [
      'an edited audit row',
      {
        store: {
          audit: trail.map((e) => (e.chain?.n === 6 ? { ...e, message: 'score 10' } : e)),
          rebuilt: body,
        },
      },
      /^audit entry 6 \(critic mean attempt 2\): its content was changed/,
    ],
    [
      'rows appended after signing',
      {
        store: {
          audit: chained('m1', [
            ...trail.map(({ chain: _c, ...e }) => e),
            { at, taskId: '', attempt: 0, stage: 'mission', message: 'x' },
          ]),
          rebuilt: body,
        },
      },
      /^audit entry 9 \(mission\): written after the receipt was signed/,
    ],
    [
      'a trail rewritten and re-chained consistently',
      {
        store: {
          audit: chained(
            'm1',
            trail.map(({ chain: _c, ...e }) => (e.stage === 'critic' ? { ...e, message: 'score 3' } : e)),
          ),
          rebuilt: body,
        },
      },
      /^audit entry 6 \(critic mean attempt 2\): differs from the one the receipt signed/,
    ],
    [
      'a rewritten integration branch',
      { repo: { path: '/repo', branchTip: 'ff'.repeat(20), missing: [] } },
      /^branch flotilla\/m1: at ffffffffffff, but the receipt signed m2m2m2m2m2m2 \(the integration branch was rewritten/,
    ],
    [
      'a commit the repository lacks',
      { repo: { path: '/repo', branchTip: 'm2'.repeat(20), missing: ['c1'.repeat(20)] } },
      /^commit c1c1c1c1c1c1 \(mean attempt 1\): not in \/repo/,
    ],
    ['a different pinned key', { pinnedKey: otherKeys.publicKey }, /^signature: signed by another key/],
  ];
  it.each(failing)('fails on %s, naming it first', (_name, over, message) => {
    const report = checkReceipt(facts(over));
    expect(report.ok).toBe(false);
    expect(report.firstProblem).toMatch(message);
  });

  it('names the receipt field that differs from what the trail says, with its entries', () => {
    const forged = signReceipt(
      JSON.parse(JSON.stringify(body).replace('"criticScore":8', '"criticScore":10')),
      keys.privateKey,
    );
    const report = checkReceipt(facts({ receipt: forged }));
    expect(report.firstProblem).toBe(
      'receipt tasks[mean].attempts[2].criticScore says 10; the audit trail (entries 5, 6, 7) says 8',
    );
  });

  it('firstDifference names mission fields by path', () => {
    expect(firstDifference({ ...body, mission: { ...body.mission, integrationTip: 'x' } }, body)).toBe(
      `mission.integrationTip says "x"; mission state says "${'m2'.repeat(20)}"`,
    );
  });
});
