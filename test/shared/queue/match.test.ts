import { describe, expect, it } from 'vitest';
import type { Adapter, DispatchConfigInput } from '../../../src/shared/adapter.js';
import type { ControlMode } from '../../../src/shared/capabilities.js';
import { matchCli, pickReviewer, splitCapabilities } from '../../../src/shared/queue/match.js';
import { adapter as makeAdapter } from '../../helpers/factories.js';

function adapter(
  cli: string,
  order: number,
  capabilities: string[],
  extra: Partial<DispatchConfigInput> = {},
): Adapter {
  return makeAdapter({ cli, order, config: { capabilities, ...extra } });
}

const codex = adapter('codex', 0, [
  'code_implementation',
  'testing',
  'refactoring',
  'bug_fixing',
  'code_review',
]);
const gemini = adapter('gemini', 1, [
  'web_search',
  'ui_design',
  'ux_research',
  'large_analysis',
  'code_review',
]);
const docs = adapter('docs', 2, ['documentation']);
const sec = adapter('sec', 3, ['security_audit', 'performance_analysis']);
const all = [sec, docs, gemini, codex]; // deliberately not in file order

function pick(
  capability: string,
  candidates: readonly Adapter[],
  division?: string,
  controlMode?: ControlMode,
) {
  const match = matchCli({ capability, division, controlMode }, candidates);
  return { cli: match.adapter?.cli ?? null, how: match.how };
}

describe('matchCli: exact capability match', () => {
  it.each([
    ['one CLI offers it', 'web_search', 'gemini'],
    ['several offer it: file order breaks the tie', 'code_review', 'codex'],
    ['one capability among several requested', 'documentation, exotic', 'docs'],
    ['most matching capabilities wins over file order', 'security_audit,performance_analysis,testing', 'sec'],
    ['space-separated task type', 'ui_design ux_research', 'gemini'],
  ])('%s', (_name, capability, cli) => {
    expect(pick(capability, all)).toEqual({ cli, how: 'exact' });
  });

  it('ranks by number of matching capabilities, then by the lowest order', () => {
    const a = adapter('a', 0, ['code_implementation']);
    const b = adapter('b', 5, ['code_implementation', 'testing']);
    const c = adapter('c', 2, ['code_implementation', 'testing']);
    expect(pick('code_implementation, testing', [a, b, c]).cli).toBe('c');
    expect(pick('code_implementation', [b, c, a]).cli).toBe('a');
  });

  it('notes the capabilities it matched and a broken tie', () => {
    const match = matchCli({ capability: 'code_review' }, all);
    expect(match.how).toBe('exact');
    if (match.how !== 'exact') return;
    expect(match.note).toContain('codex offers code_review (1 of 1 requested)');
    expect(match.note).toContain('tied with gemini');
  });

  it('beats an affinity match', () => {
    expect(pick('documentation', all, 'Engineering')).toEqual({ cli: 'docs', how: 'exact' });
  });

  it('ignores adapters marked unavailable', () => {
    const off = adapter('off', 0, ['documentation'], { available: false });
    expect(pick('documentation', [off, docs]).cli).toBe('docs');
  });
});

describe('matchCli: division affinity, all nine divisions', () => {
  // Full pool: codex (0), gemini (1), docs (2), sec (3); the task type matches no CLI.
  it.each([
    ['Engineering', 'codex'],
    ['Design', 'gemini'],
    ['Testing', 'codex'],
    ['Marketing', 'gemini'],
    ['Product', 'gemini'],
    ['Project Management', 'gemini'],
    ['Support', 'gemini'],
    ['Spatial Computing', 'codex'],
    ['Specialized', 'codex'],
  ])('%s → %s with the full pool', (division, cli) => {
    expect(pick('exotic_capability', all, division)).toEqual({ cli, how: 'affinity' });
  });

  // Only docs (2) and sec (3): the affinity table alone decides, or nothing matches.
  it.each([
    ['Engineering', null],
    ['Design', null],
    ['Testing', 'sec'],
    ['Marketing', 'docs'],
    ['Product', 'docs'],
    ['Project Management', 'docs'],
    ['Support', 'docs'],
    ['Spatial Computing', null],
    ['Specialized', null],
  ])('%s → %s with only docs and sec', (division, cli) => {
    expect(pick('exotic_capability', [sec, docs], division)).toEqual({
      cli,
      how: cli ? 'affinity' : 'internal',
    });
  });

  it('says it is a category match', () => {
    const match = matchCli({ capability: 'exotic', division: 'Design' }, all);
    expect(match.how === 'affinity' && match.note).toBe(
      "category match, not exact: no CLI offers 'exotic'; gemini offers ui_design, ux_research from the Design affinity",
    );
  });

  it.each(['project management', 'PROJECT-MANAGEMENT', ' Project_Management '])(
    'reads the division %j',
    (division) => {
      expect(pick('exotic', [docs], division).cli).toBe('docs');
    },
  );
});

describe('matchCli: internal fallback', () => {
  it('logs the seed line word for word', () => {
    expect(matchCli({ capability: 'exotic', division: 'Marketing' }, [codex])).toEqual({
      adapter: null,
      how: 'internal',
      log: "No external CLI matched task type 'exotic' in division 'Marketing'. Using internal agent.",
    });
  });

  it('with no candidates and no division', () => {
    const match = matchCli({ capability: 'code_implementation' }, []);
    expect(match.how === 'internal' && match.log).toBe(
      "No external CLI matched task type 'code_implementation' in division 'none'. Using internal agent.",
    );
  });

  it('an unknown division has no affinity', () => {
    expect(pick('exotic', all, 'Astrology').how).toBe('internal');
  });
});

describe('matchCli: surgical mode', () => {
  it.each([
    ['code_implementation', undefined, null, 'internal'],
    ['refactoring', undefined, null, 'internal'],
    ['bug_fixing', undefined, null, 'internal'],
    ['code_review, code_implementation', undefined, null, 'internal'],
    ['code_review', undefined, 'codex', 'exact'],
    ['security_audit', undefined, 'sec', 'exact'],
    ['exotic', 'Engineering', null, 'internal'],
    ['exotic', 'Spatial Computing', 'gemini', 'affinity'],
  ] as const)('%s (division %s) → %s', (capability, division, cli, how) => {
    expect(pick(capability, all, division, 'surgical')).toEqual({ cli, how });
  });

  it('says why the task stays internal', () => {
    const match = matchCli({ capability: 'refactoring', controlMode: 'surgical' }, all);
    expect(match.how === 'internal' && match.log).toMatch(/surgical.*refactoring.*internal agent/);
  });

  it.each(['guarded', 'advisory', 'autonomous'] as const)('%s mode dispatches implementation', (mode) => {
    expect(pick('code_implementation', all, undefined, mode)).toEqual({ cli: 'codex', how: 'exact' });
  });
});

describe('splitCapabilities', () => {
  it.each([
    ['code_review', ['code_review']],
    ['a, b', ['a', 'b']],
    ['a b,,c  a', ['a', 'b', 'c']],
    ['  ', []],
  ])('%j', (input, expected) => {
    expect(splitCapabilities(input)).toEqual(expected);
  });
});

describe('pickReviewer', () => {
  it('picks a code_review CLI other than the builder, in file order', () => {
    expect(pickReviewer('codex', all)).toMatchObject({ cli: 'gemini', selfReview: false });
    expect(pickReviewer('gemini', all)).toMatchObject({ cli: 'codex', selfReview: false });
  });

  it('never picks another CLI without code_review', () => {
    expect(pickReviewer('codex', [codex, docs])).toMatchObject({ cli: 'codex', selfReview: true });
  });

  it("falls back to the builder's own CLI, flagged", () => {
    expect(pickReviewer('codex', [codex])).toMatchObject({ cli: 'codex', selfReview: true });
  });

  it('returns null when neither exists', () => {
    expect(pickReviewer('codex', [docs, sec])).toBeNull();
    expect(pickReviewer('internal', [])).toBeNull();
  });

  it('still carries the adapter', () => {
    const reviewer = pickReviewer('codex', all);
    expect(reviewer?.config).toBe(gemini.config);
  });
});
