import type { Adapter } from '../adapter.js';
import { type ControlMode, DIVISION_AFFINITY, IMPLEMENTATION_CAPABILITIES } from '../capabilities.js';

/**
 * Matching a task to a CLI, as cli-dispatch specifies it: exact capability match (most matching
 * capabilities wins, ties go to adapter file order), then the division → capability affinity table,
 * then the internal agent. The same rules serve one host's adapters (`matchCli`) and the union of
 * the cluster's live CLIs (`queue/route.ts`), so both work on the small `CliOffer` shape.
 */

export interface MatchTask {
  /** The task's task_type: one capability, or several separated by commas or spaces. */
  readonly capability: string;
  readonly division?: string;
  readonly controlMode?: ControlMode;
}

/** What matching needs to know about a CLI. */
export interface CliOffer {
  readonly cli: string;
  readonly order: number;
  readonly capabilities: readonly string[];
}

export type OfferMatch<T extends CliOffer> =
  | {
      readonly offer: T;
      readonly how: 'exact' | 'affinity';
      /** The task's (or the affinity's) capabilities this CLI offers, in the task's order. */
      readonly matched: readonly string[];
      readonly note: string;
    }
  | {
      readonly offer: null;
      readonly how: 'internal';
      readonly why: 'surgical' | 'no-match';
      readonly log: string;
    };

export type MatchResult =
  | { readonly adapter: Adapter; readonly how: 'exact' | 'affinity'; readonly note: string }
  | { readonly adapter: null; readonly how: 'internal'; readonly log: string };

/** A reviewer choice; `selfReview` says the builder's own CLI reviews because no other one can. */
export type ReviewerChoice = Adapter & { readonly selfReview: boolean };

/** `code_implementation, testing` and `code_implementation testing` both name two capabilities. */
export function splitCapabilities(taskType: string): string[] {
  const seen = new Set<string>();
  for (const part of taskType.split(/[\s,]+/)) if (part) seen.add(part);
  return [...seen];
}

/** The affinity row for a division, forgiving case and `-`/`_` in place of spaces. */
export function findAffinity(
  division: string | undefined,
): { division: string; capabilities: readonly string[] } | undefined {
  if (!division) return undefined;
  const wanted = normalizeDivision(division);
  for (const [name, capabilities] of Object.entries(DIVISION_AFFINITY)) {
    if (normalizeDivision(name) === wanted) return { division: name, capabilities };
  }
  return undefined;
}

/** The seed's log line, word for word; operators grep for it. */
export function internalLog(taskType: string, division: string | undefined): string {
  return `No external CLI matched task type '${taskType.trim()}' in division '${division ?? 'none'}'. Using internal agent.`;
}

export function isImplementation(capability: string): boolean {
  return IMPLEMENTATION_CAPABILITIES.includes(capability);
}

export function matchOffers<T extends CliOffer>(task: MatchTask, offers: readonly T[]): OfferMatch<T> {
  const wanted = splitCapabilities(task.capability);
  const taskType = task.capability.trim();

  // Surgical mode is read-only: work that changes files never leaves for an external CLI.
  if (task.controlMode === 'surgical') {
    const implementation = wanted.filter(isImplementation);
    if (implementation.length > 0) {
      return {
        offer: null,
        how: 'internal',
        why: 'surgical',
        log: `Control mode surgical: task type '${taskType}' asks for implementation (${implementation.join(', ')}), which stays with the internal agent.`,
      };
    }
  }

  const byOrder = [...offers].sort((a, b) => a.order - b.order);

  let best: { offer: T; matched: string[] } | undefined;
  let tiedWith: string[] = [];
  for (const offer of byOrder) {
    const matched = wanted.filter((capability) => offer.capabilities.includes(capability));
    if (matched.length === 0) continue;
    if (!best || matched.length > best.matched.length) {
      best = { offer, matched };
      tiedWith = [];
    } else if (matched.length === best.matched.length) {
      tiedWith.push(offer.cli);
    }
  }
  if (best) {
    const tie =
      tiedWith.length > 0 ? `; tied with ${tiedWith.join(', ')}, first in adapter file order wins` : '';
    return {
      offer: best.offer,
      how: 'exact',
      matched: best.matched,
      note: `exact match: ${best.offer.cli} offers ${best.matched.join(', ')} (${best.matched.length} of ${wanted.length} requested)${tie}`,
    };
  }

  const affinity = findAffinity(task.division);
  if (affinity) {
    const allowed = affinity.capabilities.filter(
      (capability) => task.controlMode !== 'surgical' || !isImplementation(capability),
    );
    for (const offer of byOrder) {
      const matched = allowed.filter((capability) => offer.capabilities.includes(capability));
      if (matched.length === 0) continue;
      return {
        offer,
        how: 'affinity',
        matched,
        note: `category match, not exact: no CLI offers '${taskType}'; ${offer.cli} offers ${matched.join(', ')} from the ${affinity.division} affinity`,
      };
    }
  }

  return { offer: null, how: 'internal', why: 'no-match', log: internalLog(taskType, task.division) };
}

export function matchCli(task: MatchTask, candidates: readonly Adapter[]): MatchResult {
  const offers = candidates
    .filter((adapter) => adapter.config.available)
    .map((adapter) => ({
      cli: adapter.cli,
      order: adapter.order,
      capabilities: adapter.config.capabilities,
      adapter,
    }));
  const match = matchOffers(task, offers);
  if (match.offer === null) return { adapter: null, how: 'internal', log: match.log };
  return { adapter: match.offer.adapter, how: match.how, note: match.note };
}

/**
 * The critic runs on a CLI other than the builder's whenever one offers code_review, because a
 * builder never reviews its own work if it can be helped. When none can, the builder's own CLI
 * reviews, flagged so the report says so.
 */
export function pickReviewer(builderCli: string, candidates: readonly Adapter[]): ReviewerChoice | null {
  const available = [...candidates]
    .filter((adapter) => adapter.config.available)
    .sort((a, b) => a.order - b.order);
  const other = available.find(
    (adapter) => adapter.cli !== builderCli && adapter.config.capabilities.includes('code_review'),
  );
  if (other) return { ...other, selfReview: false };
  const own = available.find((adapter) => adapter.cli === builderCli);
  return own ? { ...own, selfReview: true } : null;
}

function normalizeDivision(name: string): string {
  return name
    .trim()
    .toLowerCase()
    .replace(/[-_\s]+/g, ' ');
}
