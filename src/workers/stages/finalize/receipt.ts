import { AFTER_RECEIPT_STAGES } from '../../../shared/audit.js';
import { hashJson, sha256Hex } from '../../../shared/canonical-json.js';
import type { AuditEntry } from '../../../shared/contracts.js';
import { RECEIPT_FORMAT, type ReceiptAttempt, type ReceiptBody } from '../../../shared/receipt.js';

/**
 * Builds a mission's receipt body from what mission state holds: pure, so `finalize` (which signs
 * it) and `flotilla verify` (which rebuilds it from Redis to find what a changed receipt claims)
 * compute the same thing. Every per-attempt fact is read from the audit trail, so the receipt
 * says nothing the chained trail does not.
 */
export interface ReceiptInput {
  readonly mission: {
    readonly id: string;
    readonly goal: string;
    readonly status: string;
    readonly repo: string;
    readonly baseCommit: string;
    readonly branch: string;
    readonly createdAt: string;
    readonly finishedAt: string | null;
  };
  /** The mission spec as submitted (its canonical JSON is hashed). */
  readonly spec: unknown;
  readonly integrationTip: string | null;
  /** In the spec's order. */
  readonly tasks: ReadonlyArray<{ readonly id: string; readonly status: string }>;
  /** The chained trail, in order (`checkChain` has passed on it). */
  readonly audit: readonly AuditEntry[];
}

export function buildReceipt(input: ReceiptInput): ReceiptBody {
  const signed = signedEntries(input.audit);
  const byAttempt = new Map<string, AuditEntry[]>();
  for (const entry of signed) {
    if (!entry.taskId || entry.attempt < 1) continue;
    const key = `${entry.taskId}\u0000${entry.attempt}`;
    const list = byAttempt.get(key) ?? [];
    list.push(entry);
    byAttempt.set(key, list);
  }
  const hashes = signed.map((entry) => entry.chain?.hash ?? '');
  return {
    format: RECEIPT_FORMAT,
    mission: { ...input.mission, specHash: hashJson(input.spec), integrationTip: input.integrationTip },
    tasks: input.tasks.map((task) => {
      const attempts = [...byAttempt.entries()]
        .filter(([key]) => key.startsWith(`${task.id}\u0000`))
        .map(([key, entries]) => attemptFacts(Number(key.split('\u0000')[1]), entries))
        .sort((a, b) => a.attempt - b.attempt);
      return { id: task.id, status: task.status, attempts };
    }),
    audit: { count: input.audit.length, head: hashes.at(-1) ?? '', hashes },
  };
}

/**
 * The trail a receipt signs: all of it but the delivery and on_finish entries at its end. Delivery happens after
 * the receipt is signed (the PR body carries the receipt), so a receipt rebuilt later, by
 * `flotilla verify` or a replayed finalize, is the same one.
 */
export function signedEntries(audit: readonly AuditEntry[]): readonly AuditEntry[] {
  let end = audit.length;
  while (end > 0 && AFTER_RECEIPT_STAGES.includes(audit[end - 1]?.stage ?? 'mission')) end--;
  return end === audit.length ? audit : audit.slice(0, end);
}

/** The facts of one attempt; the last entry of a stage wins (a run handed back and taken again). */
function attemptFacts(attempt: number, entries: readonly AuditEntry[]): ReceiptAttempt {
  const last = (stage: AuditEntry['stage'], withFile?: string) =>
    entries.filter((e) => e.stage === stage && (!withFile || e.files?.[withFile] !== undefined)).at(-1);
  const run = last('run', 'prompt.md') ?? last('run');
  const verify = last('verify');
  const critic = last('critic');
  const gate = last('gate');
  const runEvent = eventOf(run);
  const criteria = eventOf(verify).criteria;
  const verdictEntry = entries.filter((e) => e.stage === 'gate' && text(eventOf(e).approval)).at(-1);
  const verdict = eventOf(verdictEntry);
  return {
    attempt,
    host: run?.host ?? null,
    cli: run?.cli ?? null,
    cliVersion: text(runEvent.cliVersion),
    modelTier: text(runEvent.tier),
    model: text(runEvent.model),
    escalation: text(runEvent.escalation),
    promptHash: hashOf(run?.files?.['prompt.md']),
    resultHash: hashOf(run?.files?.['result.md']),
    criteriaHash: hashOf(verify?.files?.['criteria.txt']),
    criteriaPassed: Array.isArray(criteria) ? criteria.every(passed) : null,
    criticScore: num(eventOf(critic).score),
    gate: text(eventOf(gate).action),
    commit: text(runEvent.commit),
    mergeCommit: text(eventOf(gate).commit),
    ...(text(runEvent.platform) ? { platform: text(runEvent.platform) as string } : {}),
    ...(verdictEntry
      ? { approval: { verdict: text(verdict.approval) ?? '', by: text(verdict.by), at: verdictEntry.at } }
      : {}),
    entries: entries.map((e) => e.chain?.n ?? 0),
  };
}

function eventOf(entry: AuditEntry | undefined): Record<string, unknown> {
  const event = (entry as { event?: unknown } | undefined)?.event;
  return event && typeof event === 'object' ? (event as Record<string, unknown>) : {};
}

function passed(criterion: unknown): boolean {
  const c = criterion as { exitCode?: unknown; timedOut?: unknown };
  return c.exitCode === 0 && c.timedOut !== true;
}

function hashOf(value: string | undefined): string | null {
  return value === undefined ? null : sha256Hex(value);
}

function text(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}

function num(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}
