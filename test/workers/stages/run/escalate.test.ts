import { describe, expect, it } from 'vitest';
import {
  decideEscalation,
  type Escalation,
  type EscalationInput,
  nextTier,
  pickOtherCli,
} from '../../../../src/workers/stages/run/escalate.js';

const offers = [
  { cli: 'claude-code', vendor: 'anthropic' },
  { cli: 'claude-alt', vendor: 'anthropic' },
  { cli: 'codex-cli', vendor: 'openai' },
  { cli: 'aider' },
];

const base: EscalationInput = {
  steps: ['tier', 'cli'],
  current: null,
  failedAttempt: 1,
  baseTier: 'execution',
  failedCli: 'claude-code',
  usedClis: ['claude-code'],
  offers,
};

/** Runs the decision over a sequence of failed attempts, as the gate does. */
function sequence(input: Partial<EscalationInput>, failures: number): Array<Escalation | null> {
  const out: Array<Escalation | null> = [];
  let current: Escalation | null = null;
  const used = [...(input.usedClis ?? base.usedClis)];
  for (let attempt = 1; attempt <= failures; attempt++) {
    const failedCli = current?.cli ?? input.failedCli ?? base.failedCli;
    if (failedCli && !used.includes(failedCli)) used.push(failedCli);
    current = decideEscalation({
      ...base,
      ...input,
      current,
      failedAttempt: attempt,
      failedCli,
      usedClis: used,
    });
    out.push(current);
  }
  return out;
}

describe('nextTier', () => {
  it.each([
    ['check', 'execution'],
    ['execution', 'planning'],
    ['planning', null],
    ['unknown', null],
  ])('%s → %s', (from, to) => expect(nextTier(from)).toBe(to));
});

describe('decideEscalation', () => {
  it('does nothing without escalate steps', () => {
    expect(decideEscalation({ ...base, steps: [] })).toBeNull();
  });

  const table: Array<
    [string, Partial<EscalationInput>, number, Array<Pick<Escalation, 'tier' | 'cli'> & { reason: RegExp }>]
  > = [
    [
      '[tier, cli]: planning tier, then another vendor',
      {},
      3,
      [
        {
          tier: 'planning',
          cli: null,
          reason: /attempt 1 failed; escalated to the planning tier \(from execution\)/,
        },
        {
          tier: 'planning',
          cli: 'codex-cli',
          reason: /attempt 2 failed; escalated to codex-cli \(another vendor\)/,
        },
        {
          tier: 'planning',
          cli: 'codex-cli',
          reason: /attempt 3 failed; escalation steps used up, staying at the planning tier on codex-cli/,
        },
      ],
    ],
    [
      "[cli, tier]: the order is the user's",
      { steps: ['cli', 'tier'] },
      2,
      [
        { tier: null, cli: 'codex-cli', reason: /escalated to codex-cli/ },
        { tier: 'planning', cli: 'codex-cli', reason: /escalated to the planning tier/ },
      ],
    ],
    [
      '[tier] from the top tier already',
      { steps: ['tier'], baseTier: 'planning' },
      1,
      [{ tier: null, cli: null, reason: /already at the top tier \(planning\)/ }],
    ],
    [
      '[cli] on a pinned task stays',
      { steps: ['cli'], pinnedCli: 'claude-code' },
      1,
      [{ tier: null, cli: null, reason: /pinned to claude-code \(cli:\), so no other CLI/ }],
    ],
    [
      '[cli] with only one CLI in the cluster',
      { steps: ['cli'], offers: [{ cli: 'claude-code', vendor: 'anthropic' }] },
      1,
      [{ tier: null, cli: null, reason: /no other CLI in the cluster offers/ }],
    ],
    [
      '[cli] with only the same vendor left',
      { steps: ['cli'], offers: offers.slice(0, 2) },
      1,
      [{ tier: null, cli: 'claude-alt', reason: /same vendor: no other vendor offers it/ }],
    ],
  ];

  it.each(table)('%s', (_name, input, failures, expected) => {
    const got = sequence(input, failures);
    expect(got.map((e) => ({ tier: e?.tier, cli: e?.cli }))).toEqual(
      expected.map(({ tier, cli }) => ({ tier, cli })),
    );
    for (const [i, e] of got.entries()) expect(e?.reason).toMatch(expected[i]?.reason ?? /never/);
    expect(got.map((e) => e?.level)).toEqual(expected.map((_, i) => i + 1));
  });
});

describe('pickOtherCli', () => {
  it.each([
    ['another vendor first, in adapter order', ['claude-code'], 'codex-cli', true],
    ['a vendor-less CLI counts as its own vendor', ['claude-code', 'codex-cli'], 'aider', true],
    ['the same vendor when nothing else is left', ['claude-code', 'codex-cli', 'aider'], 'claude-alt', false],
  ])('%s', (_name, used, cli, otherVendor) => {
    expect(pickOtherCli(offers, null, used)).toEqual({
      offer: expect.objectContaining({ cli }),
      otherVendor,
    });
  });

  it('none when every CLI was used', () => {
    expect(
      pickOtherCli(
        offers,
        'aider',
        offers.map((o) => o.cli),
      ),
    ).toBeNull();
  });
});
