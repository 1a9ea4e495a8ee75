import type { AuditCriterion, AuditEvent, GateAction } from '../shared/audit.js';
import { type AuditEntry, attemptJobId, dispatchQueue, type JOBS, QUEUES } from '../shared/contracts.js';
import { requirementQueue, splitRequirementQueue } from '../shared/host-facts.js';

/**
 * What the board shows of an attempt, read from the typed events of the audit trail (entries
 * written before events were typed show their sentence only).
 */
export interface CriterionView {
  readonly command: string;
  readonly exit: string;
  readonly timedOut: boolean;
  readonly passed: boolean;
  readonly tail: string;
}

export interface CriticView {
  readonly score: number | null;
  readonly verdict: 'approve' | 'reject' | null;
  readonly issues: readonly string[];
  readonly cli?: string;
  readonly message: string;
}

export interface AttemptView {
  readonly attempt: number;
  /** The queue the run job went to, from the route entry. */
  readonly queue?: string;
  readonly host?: string;
  readonly cli?: string;
  /** The model tier and model the run was given, and why it escalated (from the run event). */
  readonly tier?: string;
  readonly model?: string;
  readonly escalation?: string;
  readonly durationSec?: number;
  readonly criteria: readonly CriterionView[];
  readonly verifyMessage?: string;
  readonly critic?: CriticView;
  readonly gate?: { readonly action: GateAction | null; readonly message: string };
  /** Every audit sentence of the attempt, oldest first. */
  readonly timeline: readonly AuditEntry[];
}

type EventOf<K extends AuditEvent['kind']> = Extract<AuditEvent, { kind: K }>;

function eventOf<K extends AuditEvent['kind']>(
  entry: AuditEntry | undefined,
  kind: K,
): EventOf<K> | undefined {
  return entry?.event?.kind === kind ? (entry.event as EventOf<K>) : undefined;
}

export function criterionView(criterion: AuditCriterion): CriterionView {
  return {
    command: criterion.command,
    exit: criterion.exitCode === null ? 'none' : String(criterion.exitCode),
    timedOut: criterion.timedOut,
    passed: criterion.exitCode === 0 && !criterion.timedOut,
    tail: criterion.tail.trim(),
  };
}

export function attemptsByTask(audit: readonly AuditEntry[]): Map<string, AttemptView[]> {
  const grouped = new Map<string, Map<number, AuditEntry[]>>();
  for (const entry of audit) {
    if (!entry.taskId || entry.attempt < 1) continue;
    const attempts = grouped.get(entry.taskId) ?? new Map<number, AuditEntry[]>();
    grouped.set(entry.taskId, attempts);
    const list = attempts.get(entry.attempt) ?? [];
    list.push(entry);
    attempts.set(entry.attempt, list);
  }
  const out = new Map<string, AttemptView[]>();
  for (const [taskId, attempts] of grouped) {
    const views = [...attempts.entries()]
      .sort(([a], [b]) => a - b)
      .map(([n, entries]) => attemptView(n, entries));
    out.set(taskId, views);
  }
  return out;
}

function attemptView(attempt: number, entries: readonly AuditEntry[]): AttemptView {
  const last = <K extends AuditEvent['kind']>(kind: K) =>
    entries.filter((e) => e.event?.kind === kind).at(-1);
  const route = eventOf(last('route'), 'route');
  // A rate-limited run writes its own kind of entry, so the last `run` event is the CLI's real run.
  const runEntry = last('run');
  const run = eventOf(runEntry, 'run');
  const verifyEntry = last('verify');
  const verify = eventOf(verifyEntry, 'verify');
  const criticEntry = last('critic');
  const critic = eventOf(criticEntry, 'critic');
  const gateEntry = last('gate');
  const gate = eventOf(gateEntry, 'gate');
  return {
    attempt,
    queue: route?.queue,
    host: runEntry?.host,
    cli: runEntry?.cli,
    ...(run?.tier ? { tier: run.tier } : {}),
    ...(run?.model ? { model: run.model } : {}),
    ...(run?.escalation ? { escalation: run.escalation } : {}),
    durationSec: run ? Math.round(run.durationMs / 1000) : undefined,
    criteria: verify ? verify.criteria.map(criterionView) : [],
    verifyMessage: verifyEntry?.message,
    critic:
      critic && criticEntry
        ? {
            score: critic.score,
            verdict: critic.verdict,
            issues: critic.issues,
            cli: critic.cli,
            message: criticEntry.message,
          }
        : undefined,
    gate: gate && gateEntry ? { action: gate.action, message: gateEntry.message } : undefined,
    timeline: entries,
  };
}

export interface JobLink {
  readonly stage: keyof typeof JOBS;
  readonly queue: string;
  readonly jobId: string;
  readonly href: string;
}

/** Bull Board's UI route for one job: `<base>/queue/<queue name>/<job id>`, both URI-encoded. */
export function bullBoardJobHref(basePath: string, queue: string, jobId: string): string {
  return `${basePath}/queue/${encodeURIComponent(queue)}/${encodeURIComponent(jobId)}`;
}

/** The four jobs of an attempt's flow (docs/ARCHITECTURE.md, one attempt), with links into Bull Board. */
export function attemptJobLinks(
  basePath: string,
  input: { missionId: string; taskId: string; attempt: number; runQueue?: string; capability: string },
): JobLink[] {
  // A task with `requires` has its verify and critic in the queues of its requirement key.
  const key = input.runQueue ? splitRequirementQueue(input.runQueue).key : undefined;
  const stages: [keyof typeof JOBS, string][] = [
    ['run', input.runQueue ?? dispatchQueue(input.capability)],
    ['verify', requirementQueue(QUEUES.verify, key)],
    ['critic', requirementQueue(QUEUES.critic, key)],
    ['gate', QUEUES.mission],
  ];
  return stages.map(([stage, queue]) => {
    const jobId = attemptJobId(input.missionId, input.taskId, input.attempt, stage);
    return { stage, queue, jobId, href: bullBoardJobHref(basePath, queue, jobId) };
  });
}
