/**
 * Escalation (mission `escalate: [tier, cli]`): after each failed attempt the next one takes the next
 * step of the list, on top of the steps before it — `tier` moves up one model tier
 * (execution → planning), `cli` moves to another CLI that offers the task's capability, another
 * vendor's first. Past the end of the list an attempt stays where the last step left it. Pure: the
 * gate calls it with the cluster's CLIs and stores the result in the task's state, so every host
 * runs the next attempt the same way and the audit says why.
 */
export const ESCALATION_STEPS = ['tier', 'cli'] as const;
export type EscalationStep = (typeof ESCALATION_STEPS)[number];

/** Model tiers, lowest first; an agent's `model_tier` names where a task starts. */
export const MODEL_TIERS = ['check', 'execution', 'planning'] as const;

export interface Escalation {
  /** How many failed attempts have been escalated past. */
  readonly level: number;
  /** The model tier the next attempt runs at; null: the agent's own tier. */
  readonly tier: string | null;
  /** The CLI the next attempt must run on; null: routing picks as for a first attempt. */
  readonly cli: string | null;
  /** One line for the audit, status and board. */
  readonly reason: string;
}

export interface CliOffer {
  readonly cli: string;
  /** Who makes the model behind it; a CLI without one counts as its own vendor. */
  readonly vendor?: string;
}

export interface EscalationInput {
  readonly steps: readonly EscalationStep[];
  /** Where the task is now (null before any escalation). */
  readonly current: Escalation | null;
  /** The attempt that just failed. */
  readonly failedAttempt: number;
  /** The tier the task starts at (the agent's `model_tier`, default execution). */
  readonly baseTier: string;
  /** The CLI the failed attempt ran on, and every CLI the task has run on so far. */
  readonly failedCli: string | null;
  readonly usedClis: readonly string[];
  /** CLIs live in the cluster that offer the task's capability, in adapter order. */
  readonly offers: readonly CliOffer[];
  /** A task pinned with `cli:` never moves. */
  readonly pinnedCli?: string;
}

export function nextTier(tier: string): string | null {
  const i = MODEL_TIERS.indexOf(tier as (typeof MODEL_TIERS)[number]);
  if (i < 0 || i === MODEL_TIERS.length - 1) return null;
  return MODEL_TIERS[i + 1] ?? null;
}

/** The escalation for the attempt after `failedAttempt`, or null when the task does not escalate. */
export function decideEscalation(input: EscalationInput): Escalation | null {
  if (input.steps.length === 0) return null;
  const level = (input.current?.level ?? 0) + 1;
  const step = input.steps[level - 1];
  const tier = input.current?.tier ?? null;
  const cli = input.current?.cli ?? null;
  const after = `attempt ${input.failedAttempt} failed`;
  if (!step) {
    return {
      level,
      tier,
      cli,
      reason: `${after}; escalation steps used up, staying ${where(tier ?? input.baseTier, cli ?? input.failedCli)}`,
    };
  }
  if (step === 'tier') {
    const from = tier ?? input.baseTier;
    const up = nextTier(from);
    return up
      ? { level, tier: up, cli, reason: `${after}; escalated to the ${up} tier (from ${from})` }
      : { level, tier, cli, reason: `${after}; already at the top tier (${from}), no tier to escalate to` };
  }
  if (input.pinnedCli) {
    return { level, tier, cli, reason: `${after}; pinned to ${input.pinnedCli} (cli:), so no other CLI` };
  }
  const other = pickOtherCli(input.offers, cli ?? input.failedCli, input.usedClis);
  if (!other) {
    return { level, tier, cli, reason: `${after}; no other CLI in the cluster offers the task's capability` };
  }
  return {
    level,
    tier,
    cli: other.offer.cli,
    reason: `${after}; escalated to ${other.offer.cli}${other.otherVendor ? ' (another vendor)' : ' (same vendor: no other vendor offers it)'}`,
  };
}

/** A CLI not used yet, whose vendor no used CLI shares if there is one; adapter order breaks ties. */
export function pickOtherCli(
  offers: readonly CliOffer[],
  failedCli: string | null,
  usedClis: readonly string[],
): { offer: CliOffer; otherVendor: boolean } | null {
  const used = new Set([...usedClis, ...(failedCli ? [failedCli] : [])]);
  const vendorOf = (name: string) => offers.find((o) => o.cli === name)?.vendor ?? name;
  const usedVendors = new Set([...used].map(vendorOf));
  const fresh = offers.filter((o) => !used.has(o.cli));
  const otherVendor = fresh.find((o) => !usedVendors.has(o.vendor ?? o.cli));
  if (otherVendor) return { offer: otherVendor, otherVendor: true };
  const any = fresh[0];
  return any ? { offer: any, otherVendor: false } : null;
}

function where(tier: string, cli: string | null): string {
  return cli ? `at the ${tier} tier on ${cli}` : `at the ${tier} tier`;
}
