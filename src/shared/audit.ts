/**
 * The audit trail's entries carry a typed event; the sentence a person reads (`message`) is a
 * rendering of it, made once when the entry is written. The board, the metrics, the summary and
 * reports read the event's fields, so rewording a sentence can never zero a figure.
 */

export const AUDIT_STAGES = [
  'route',
  'run',
  'verify',
  'critic',
  'gate',
  'answer',
  'cancel',
  'mission',
  'delivery',
  'finish',
] as const;
export type AuditStage = (typeof AUDIT_STAGES)[number];

/**
 * What happens after the mission's end, and so after its receipt is signed: delivery (the pull
 * request carries the receipt) and the `on_finish` command. Their entries may follow the signed
 * trail; `flotilla verify` accepts them there and nothing else.
 */
export const AFTER_RECEIPT_STAGES: readonly AuditStage[] = ['delivery', 'finish'];

export const GATE_ACTIONS = ['approve', 'retry', 'fail', 'pause', 'hold', 'skip', 'cancel'] as const;
export type GateAction = (typeof GATE_ACTIONS)[number];

export interface AuditCriterion {
  readonly command: string;
  readonly exitCode: number | null;
  readonly timedOut: boolean;
  /** The last lines of its output. */
  readonly tail: string;
}

export type AuditEvent =
  /** A task attempt was put on a queue. */
  | {
      readonly kind: 'route';
      readonly attempt: number;
      readonly queue: string;
      /** Which routing rule chose the queue; `waiting` when no live host can serve the task yet. */
      readonly how: 'exact' | 'affinity' | 'internal' | 'pinned' | 'waiting';
      readonly reason: string;
      readonly delayMs?: number;
    }
  /** A CLI ran for an attempt. */
  | {
      readonly kind: 'run';
      readonly cli: string;
      readonly cliName: string;
      readonly exitCode: number | null;
      readonly timedOut: boolean;
      readonly durationMs: number;
      readonly resultStatus: string;
      readonly resultSource: string;
      readonly warnings: readonly string[];
      /** Files written outside the write scope and rolled back. */
      readonly rolledBack: readonly string[];
      readonly costUsd?: number;
      /** The model tier and model flag the CLI was given, and the version detection saw. */
      readonly tier?: string;
      readonly model?: string;
      readonly cliVersion?: string;
      /** The platform of the machine it ran on (`linux/x64`), as the host detected it. */
      readonly platform?: string;
      /** Why this attempt ran at this tier or on this CLI (escalate:), when it escalated. */
      readonly escalation?: string;
      /** The attempt's commit on its ref. */
      readonly commit?: string;
    }
  /** A CLI that was running when the mission was cancelled, and was stopped. */
  | {
      readonly kind: 'run-cancelled';
      readonly cli: string;
      readonly cliName: string;
      readonly durationMs: number;
    }
  /** An attempt that never started a CLI (budget spent, prompt too large). */
  | { readonly kind: 'run-refused'; readonly reason: string }
  /** A rate-limit reply: the attempt is not counted and the job goes back to the queue. */
  | {
      readonly kind: 'rate-limited';
      readonly cli: string;
      readonly reply: string;
      readonly cooldownMs: number;
    }
  /** The CLI is not logged in or misconfigured on this host. */
  | {
      readonly kind: 'cli-unusable';
      readonly cli: string;
      readonly cliName: string;
      readonly reply: string;
      readonly handedOver: boolean;
    }
  /**
   * The CLI changed the repository flotilla runs in, outside its checkout (files only its attempt
   * would write changed there); the run fails.
   */
  | {
      readonly kind: 'escaped-checkout';
      readonly cli: string;
      readonly cliName: string;
      /** That repository's top level. */
      readonly root: string;
      /** The paths `git status` shows changed there, relative to it. */
      readonly paths: readonly string[];
      /** The attempt's own dispatch or result files among them (older entries lack it). */
      readonly own?: readonly string[];
    }
  /**
   * The repository flotilla runs in changed while the CLI ran, but none of the changes is its
   * attempt's own file: someone else may have made them. The run goes on.
   */
  | {
      readonly kind: 'origin-changed';
      readonly cli: string;
      readonly cliName: string;
      readonly root: string;
      readonly paths: readonly string[];
    }
  /** The running CLI's checkout was saved to the attempt's work-in-progress ref. */
  | {
      readonly kind: 'checkpoint';
      readonly commit: string;
      readonly ref: string;
      readonly durationMs: number;
    }
  /** A checkpoint could not be saved, or a found one not resumed from; the run went on without. */
  | { readonly kind: 'checkpoint-failed'; readonly action: 'save' | 'resume'; readonly reason: string }
  /** A re-delivered run (its host crashed or lost the job) started from its attempt's last checkpoint. */
  | {
      readonly kind: 'resumed';
      readonly commit: string;
      /** The commit the interrupted run started from, and so this run too. */
      readonly baseCommit: string;
    }
  /** A task's setup failed in the run stage; the CLI never started. */
  | {
      readonly kind: 'setup-failed';
      readonly command: string;
      readonly exitCode: number | null;
      readonly timedOut: boolean;
    }
  | {
      readonly kind: 'verify';
      readonly passed: boolean;
      readonly criteria: readonly AuditCriterion[];
      /** True when the criteria ran in the run's own checkout on this host (no fetch, no checkout). */
      readonly inRunCheckout?: boolean;
    }
  | {
      readonly kind: 'critic';
      readonly cli: string;
      readonly cliName: string;
      readonly score: number | null;
      readonly verdict: 'approve' | 'reject' | null;
      readonly issues: readonly string[];
      readonly selfReview: boolean;
      readonly exitCode: number | null;
    }
  | {
      readonly kind: 'gate';
      readonly action: GateAction;
      readonly reason?: string;
      readonly delayMs?: number;
      readonly score?: number;
      /** The integration merge commit of an approved attempt. */
      readonly commit?: string;
      /** Where the retry goes after this failure (escalate:), and why. */
      readonly escalation?: string;
      /** A person's verdict on a held attempt (`approve: human`): which, whose, after how long. */
      readonly approval?: 'approved' | 'rejected' | 'timed out';
      readonly by?: string;
      readonly waitedMs?: number;
    }
  | { readonly kind: 'answer'; readonly text: string }
  /**
   * One step of the mission's delivery (`deliver:`, stages/deliver/): the branch pushed, a pull
   * request opened or updated, a try that failed (and whether another follows), or none at all.
   * Written after the receipt is signed, which therefore covers the trail up to the mission's end.
   */
  | {
      readonly kind: 'delivery';
      readonly action: 'pushed' | 'pull-request' | 'failed' | 'skipped';
      readonly remote?: string;
      readonly branch?: string;
      readonly commit?: string;
      readonly forge?: string;
      readonly number?: number;
      readonly url?: string;
      /** pull-request: opened by this delivery (false: an open one was updated). */
      readonly opened?: boolean;
      readonly reason?: string;
      /** failed: another automatic try follows. */
      readonly willRetry?: boolean;
      readonly tries?: number;
    }
  /** The mission's `on_finish` command ran (or could not start), once the end was told. */
  | {
      readonly kind: 'on-finish';
      readonly command: readonly string[];
      readonly exitCode: number | null;
      readonly timedOut: boolean;
      readonly durationMs: number;
      /** The last lines of its output, or why it did not start. */
      readonly tail: string;
    }
  | {
      readonly kind: 'mission';
      /** `workspace`: what preparing the workspace did that a person should hear about (`note`). */
      readonly action: 'submitted' | 'finished' | 'workspace';
      readonly note?: string;
      readonly status?: string;
      readonly tasks?: number;
      readonly repo?: string;
      readonly baseCommit?: string;
      readonly branch?: string;
    };

export type AuditEventKind = AuditEvent['kind'];

/** The sentence for an event, as `report`, `status` and the board show it. */
export function renderAuditEvent(event: AuditEvent): string {
  switch (event.kind) {
    case 'route':
      return `attempt ${event.attempt} → ${event.queue}: ${event.reason}${event.delayMs ? ` (starts in ${Math.round(event.delayMs / 1000)}s)` : ''}`;
    case 'run': {
      const notes = [
        ...event.warnings,
        ...(event.rolledBack.length ? [`rolled back ${event.rolledBack.length} file(s) outside scope`] : []),
      ];
      const escalated = event.escalation
        ? `; at the ${event.tier ?? '?'} tier${event.model ? ` (${event.model})` : ''}: ${event.escalation}`
        : '';
      return `${event.cliName} exited ${event.exitCode ?? 'by signal'}${event.timedOut ? ' (timed out)' : ''} after ${Math.round(event.durationMs / 1000)}s; result ${event.resultStatus} from ${event.resultSource}${notes.length ? `; ${notes.join('; ')}` : ''}${escalated}`;
    }
    case 'run-cancelled':
      return `${event.cliName} stopped by the mission's cancel after ${Math.round(event.durationMs / 1000)}s`;
    case 'run-refused':
      return event.reason;
    case 'rate-limited':
      return `rate limited (attempt not counted, back to the queue): ${event.reply}`;
    case 'cli-unusable':
      return `${event.cliName}: ${event.reply}${event.handedOver ? ' (another host will take the task)' : ' (no live host can serve the task)'}`;
    case 'checkpoint':
      return `checkpoint ${event.commit.slice(0, 12)} saved to ${event.ref} (${event.durationMs} ms)`;
    case 'checkpoint-failed':
      return event.action === 'save'
        ? `checkpoint not saved (the run goes on): ${event.reason}`
        : `checkpoint not resumed from (the run starts from the base): ${event.reason}`;
    case 'resumed':
      return `resumed from checkpoint ${event.commit.slice(0, 12)} of the interrupted run, on its base ${event.baseCommit.slice(0, 12)} (the same attempt)`;
    case 'setup-failed':
      return `setup failed before the CLI started: $ ${event.command} (${event.timedOut ? 'timed out' : `exit ${event.exitCode ?? 'by signal'}`})`;
    case 'escaped-checkout': {
      const own = event.own?.length ? ` (this attempt's own ${shownPaths(event.own)} among them)` : '';
      return `${event.cliName} wrote outside its checkout: ${event.paths.length} path(s) changed in ${event.root}, the repository flotilla runs in: ${shownPaths(event.paths)}${own}. Left as they are; check them before anything else uses that directory.`;
    }
    case 'origin-changed':
      return `${event.paths.length} path(s) changed in ${event.root}, the repository flotilla runs in, while ${event.cliName} ran: ${shownPaths(event.paths)}. None is a file only this attempt would write, so someone else (a person editing that repository, another CLI) may have changed them; the attempt goes on. Left as they are; check them if no one should have.`;
    case 'verify':
      return `exit criteria ${event.passed ? 'passed' : 'failed'}: ${event.criteria
        .map((c) => `${c.exitCode === 0 && !c.timedOut ? '✓' : '✗'} ${c.command}`)
        .join('; ')}${event.inRunCheckout ? " (in the run's checkout)" : ''}`;
    case 'critic': {
      const self = event.selfReview ? ' (no other reviewer CLI in the cluster: self-review)' : '';
      if (event.score === null)
        return `critic ${event.cliName}: no verdict could be read (exit ${event.exitCode})`;
      const issues = event.issues.length ? ` — ${event.issues.join('; ')}` : '';
      return `critic ${event.cliName}${self}: score ${event.score}/10, ${event.verdict ?? 'no verdict'}${issues}`;
    }
    case 'gate':
      return renderGate(event);
    case 'answer':
      return `answered: ${event.text}`;
    case 'delivery':
      return renderDelivery(event);
    case 'on-finish':
      return `on_finish ${event.command.join(' ')}: ${event.timedOut ? 'timed out' : `exited ${event.exitCode ?? 'by signal'}`} after ${Math.round(event.durationMs / 1000)}s${event.tail ? ` — ${event.tail.split('\n').filter(Boolean).slice(-1)[0] ?? ''}` : ''}`;
    case 'mission':
      if (event.action === 'workspace') return event.note ?? 'workspace prepared';
      return event.action === 'submitted'
        ? `submitted: ${event.tasks ?? 0} tasks, workspace ${event.repo ?? '?'} at ${(event.baseCommit ?? '').slice(0, 12)}, integration branch ${event.branch ?? '?'}`
        : `mission ${event.status ?? 'finished'}`;
  }
}

function renderDelivery(event: Extract<AuditEvent, { kind: 'delivery' }>): string {
  switch (event.action) {
    case 'pushed':
      return `delivery: ${event.branch ?? 'the branch'} at ${(event.commit ?? '').slice(0, 12)} is on ${event.remote ?? 'the remote'}`;
    case 'pull-request':
      return `delivery: ${event.opened ? 'opened' : 'updated'} ${event.forge ?? ''} pull request #${event.number ?? '?'} ${event.url ?? ''}`.replace(
        /\s+$/,
        '',
      );
    case 'failed':
      return `delivery failed (try ${event.tries ?? 1}${event.willRetry ? ', tries again' : ''}): ${event.reason ?? ''}`;
    case 'skipped':
      return `delivery skipped: ${event.reason ?? ''}`;
  }
}

/** The first ten paths, and how many there are when there are more. */
function shownPaths(paths: readonly string[]): string {
  const more = paths.length > 10 ? `, … (${paths.length} in all)` : '';
  return `${paths.slice(0, 10).join(', ')}${more}`;
}

function renderGate(event: Extract<AuditEvent, { kind: 'gate' }>): string {
  switch (event.action) {
    case 'approve':
      return `approved${event.by ? ` by ${event.by}` : ''}${event.score !== undefined ? ` (score ${event.score})` : ''}`;
    case 'hold':
      return `passed its gates${event.score !== undefined ? ` (score ${event.score})` : ''}; waiting for a person's approval`;
    case 'skip':
      return `skipped: ${event.reason ?? ''}`;
    case 'retry':
      return `retry in ${Math.round((event.delayMs ?? 0) / 1000)}s: ${event.reason ?? ''}${event.escalation ? `; next attempt: ${event.escalation}` : ''}`;
    case 'fail':
      return `failed: ${event.reason ?? ''}`;
    case 'pause':
      return `paused: ${event.reason ?? ''}`;
    case 'cancel':
      return 'cancelled';
  }
}

/** True when the event records a CLI process that really ran (the summary's count of them). */
export function spawnedCli(event: AuditEvent | undefined): boolean {
  return (
    event?.kind === 'run' ||
    event?.kind === 'run-cancelled' ||
    event?.kind === 'critic' ||
    event?.kind === 'rate-limited' ||
    event?.kind === 'cli-unusable' ||
    event?.kind === 'escaped-checkout'
  );
}
