import type { AuditEvent, AuditStage } from './audit.js';
/**
 * The one contract module for queues: names, job names, per-queue data and result types, and the
 * states a mission and its tasks move through. Producer, workers, CLI and board import this file.
 */

export const DEFAULT_PREFIX = '{flotilla}';

export const QUEUES = {
  mission: 'mission',
  verify: 'verify',
  critic: 'critic',
  internal: 'dispatch.internal',
  /** Webhook deliveries (`notify:`), taken by any host. */
  notify: 'notify',
} as const;

export const DISPATCH_PREFIX = 'dispatch.';

export function dispatchQueue(capability: string): string {
  return `${DISPATCH_PREFIX}${capability}`;
}

export const JOBS = {
  run: 'run',
  verify: 'verify',
  critic: 'critic',
  gate: 'gate',
  finalize: 'finalize',
  /** A person's verdict on an attempt held for approval (`approve: human`). */
  approval: 'approval',
  /** Delayed at the hold: fires when `approve_timeout` passes with no verdict. */
  approvalTimeout: 'approvalTimeout',
  /** One webhook delivery (`notify:`); its id is the delivery's (shared/notify.ts deliveryId). */
  notify: 'notify',
  deliver: 'deliver',
} as const;

/** Deterministic job ids: never a `:`, never all digits, the same on every host that computes them. */
export function attemptJobId(
  missionId: string,
  taskId: string,
  attempt: number,
  stage: keyof typeof JOBS,
): string {
  return `${missionId}.${taskId}.a${attempt}.${stage}`;
}

export function finalizeJobId(missionId: string): string {
  return `${missionId}.finalize`;
}

/** The mission's one delivery job (stages/deliver/); a second add while it exists is a no-op. */
export function deliverJobId(missionId: string): string {
  return `${missionId}.deliver`;
}

export function integrationBranch(missionId: string): string {
  return `flotilla/${missionId}`;
}

/** Where attempt refs live in the mission repo: outside `refs/heads/`, so `git branch` never lists them. */
export const ATTEMPT_REF_PREFIX = 'refs/flotilla/';

/**
 * Where an attempt's commit is published in the mission repo (docs/DISPATCH.md, "Write scope"). A 10,000-task
 * mission must not leave 10,000 branches in the user's repository, but every attempt stays
 * reachable for the audit trail: the user's repository gains one branch per mission, the
 * integration branch, and these refs, which `git branch` does not list.
 */
export function attemptRef(missionId: string, taskId: string, attempt: number): string {
  return `${ATTEMPT_REF_PREFIX}${missionId}/${taskId}/a${attempt}`;
}

/** Where checkpoints of running attempts live in the mission repo (docs/RECOVERY.md, "Checkpoints"). */
export const CHECKPOINT_REF_PREFIX = 'refs/flotilla-wip/';

/**
 * An attempt's work-in-progress ref: the last checkpoint of its running CLI's checkout, deleted
 * once the attempt's own commit is pushed. A tree of its own beside `refs/flotilla/`, because one
 * ref cannot be both a file and a folder: `refs/flotilla/<m>/<t>/a<n>/wip` would clash with
 * attemptRef().
 */
export function checkpointRef(missionId: string, taskId: string, attempt: number): string {
  return `${CHECKPOINT_REF_PREFIX}${missionId}/${taskId}/a${attempt}`;
}

/** The dispatch task id used for PROMPT/RESULT file names: unique per attempt. */
export function dispatchTaskId(taskId: string, attempt: number): string {
  return `${taskId}-a${attempt}`;
}

export const MISSION_STATUSES = ['running', 'done', 'partial', 'failed', 'cancelled'] as const;
export type MissionStatus = (typeof MISSION_STATUSES)[number];

export const TASK_STATUSES = [
  'pending',
  'queued',
  'running',
  'verifying',
  'reviewing',
  'retrying',
  'needs_input',
  'awaiting_approval',
  'completed',
  'failed',
  'skipped',
  'cancelled',
] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

export const TERMINAL_TASK_STATUSES: readonly TaskStatus[] = ['completed', 'failed', 'skipped', 'cancelled'];

/** Every job of an attempt carries the same small reference; the rest lives in mission state. */
export interface AttemptRef {
  readonly missionId: string;
  readonly taskId: string;
  readonly attempt: number;
}

export interface RunJobData extends AttemptRef {
  /** The capability queue this attempt was routed to. */
  readonly capability: string;
  /** A pinned CLI (task `cli:`), or the CLI the route chose. */
  readonly cli?: string;
  /** HMAC of the payload when FLOTILLA_SECRET is set. */
  sig?: string;
}

export type StageJobData = AttemptRef & { sig?: string };

/** What a person (or the clock) decided about an attempt held for approval. */
export interface PersonVerdict {
  readonly verdict: 'approve' | 'reject' | 'timeout';
  /** Who decided (`flotilla approve --by`, the board's user); absent for a timeout. */
  readonly by?: string;
  /** A rejection's words, fed to the next attempt's prompt. */
  readonly reason?: string;
  readonly at: string;
}

/** The job a person's verdict travels in: the gate's reference and the verdict, signed alike. */
export type ApprovalJobData = StageJobData & PersonVerdict;

/** Who approved or rejected a held attempt, and when (kept on the task, shown in status). */
export interface ApprovalRecord {
  readonly verdict: 'approved' | 'rejected' | 'timed out';
  readonly by: string | null;
  readonly at: string;
  readonly reason?: string;
  /** How long the attempt waited for it. */
  readonly waitedMs: number;
}

export interface FinalizeJobData {
  readonly missionId: string;
  sig?: string;
}

export interface DeliverJobData {
  readonly missionId: string;
  sig?: string;
}

/**
 * Where a mission's delivery stands (`deliver:`), the status JSON's `delivery`: `pending` until the
 * delivery job runs, `retrying` between its tries, then `delivered`, `failed` (after its last try,
 * or at once when no retry can help) or `skipped` (the mission ended in a status `deliver.when`
 * leaves out). `flotilla deliver <id>` tries a failed one again.
 */
export interface DeliveryStatus {
  state: 'pending' | 'retrying' | 'delivered' | 'failed' | 'skipped';
  /** The remote as given (`origin`, a URL) and the URL it names, without credentials. */
  remote: string | null;
  branch: string;
  /** The commit the remote's branch holds after the push. */
  pushedCommit: string | null;
  pullRequest: {
    forge: 'github' | 'gitlab' | 'gitea';
    number: number;
    url: string;
    /** `opened` by this delivery, or `updated`: an open one for the same branches already existed. */
    action: 'opened' | 'updated';
  } | null;
  /** Tries so far, the automatic ones and `flotilla deliver`'s. */
  tries: number;
  /** Why the last try failed (or why it was skipped); null once delivered. */
  error: string | null;
  /** When a `retrying` delivery tries next. */
  nextTryAt?: string | null;
  at: string;
}

/** Status values of the result contract, mapped. */
export type ResultStatus = 'success' | 'success_with_warnings' | 'failure' | 'unknown';

export interface RunResult {
  /** done: the CLI produced work to verify; failed: an attempt that failed; needs_input: paused. */
  readonly outcome: 'done' | 'failed' | 'needs_input' | 'cancelled';
  readonly cli: string;
  readonly host: string;
  /** The attempt's ref in the mission repo (attemptRef(): `refs/flotilla/<m>/<t>/a<n>`). */
  readonly branch?: string;
  /** The ref's commit: the work plus flotilla's PROMPT/RESULT files, the attempt's audit record. */
  readonly commit?: string;
  /**
   * The parent of `commit`: the agent's work alone, without `.planning/dispatch/`. The gate merges
   * this one, so the integration branch holds the work only.
   */
  readonly workCommit?: string;
  readonly resultStatus: ResultStatus;
  /** At most a few hundred characters; the whole result is in the audit trail. */
  readonly summary: string;
  /** Capped; handed to dependents as handoff context. */
  readonly outputs?: string;
  readonly findings?: string;
  readonly error?: string;
  /** No retry can help (the CLI is not logged in and no live host can serve the task). */
  readonly fatal?: boolean;
  /** needs_input: the questions the agent asked (agent-dispatch's `<questions>`). */
  readonly questions?: unknown;
  readonly costUsd?: number;
  readonly durationMs: number;
}

export interface CriterionResult {
  readonly command: string;
  readonly exitCode: number | null;
  readonly timedOut: boolean;
  /** The last lines of combined output, capped. */
  readonly tail: string;
}

export interface VerifyResult {
  readonly run: RunResult;
  /** False when the run did not produce work, so nothing was verified. */
  readonly ran: boolean;
  readonly passed: boolean;
  readonly criteria: readonly CriterionResult[];
}

export interface CriticVerdict {
  readonly score: number;
  readonly verdict: 'approve' | 'reject';
  readonly issues: readonly string[];
}

export interface CriticResult {
  readonly verify: VerifyResult;
  readonly ran: boolean;
  readonly cli?: string;
  readonly verdict?: CriticVerdict;
  readonly error?: string;
  readonly costUsd?: number;
}

/** What the gate decides, a pure function of the attempt's results and the task's settings. */
export type GateDecision =
  | { readonly action: 'approve'; readonly score?: number }
  | { readonly action: 'retry'; readonly feedback: string; readonly delayMs: number; readonly reason: string }
  | { readonly action: 'fail'; readonly feedback: string; readonly reason: string }
  | { readonly action: 'pause'; readonly reason: string }
  /** The gates passed and the task asks a person (`approve: human`): held, not merged. */
  | { readonly action: 'hold'; readonly score?: number }
  /** No verdict came in time and the author chose to skip the task (`on_approve_timeout: skip`). */
  | { readonly action: 'skip'; readonly reason: string }
  | { readonly action: 'cancel' };

/** Task state as stored in Redis and shown by `status`. */
export interface TaskState {
  status: TaskStatus;
  attempts: number;
  cli: string | null;
  host: string | null;
  score: number | null;
  error: string | null;
  /** Text fed into the next attempt's prompt (failing criteria, critic issues). */
  feedback?: string | null;
  /** Why the task went to the queue it did, or why it waits. */
  route?: string | null;
  /** Where escalation (`escalate:`) has taken the task, and why; the next attempt runs so. */
  escalated?: {
    level: number;
    tier: string | null;
    cli: string | null;
    reason: string;
    tried: readonly string[];
  } | null;
  costUsd?: number;
  questions?: unknown;
  answers?: string[];
  /** The questions each answered round answered, as the agent's JSON text, in round order. */
  asked?: string[];
  /** What an approved task hands to its dependents' prompts. */
  handoff?: { summary: string; outputs: string; findings: string };
  /** Dependents this task's approval released; kept so a re-delivered gate re-adds the same. */
  released?: string[];
  /**
   * awaiting_approval: the attempt's results (CriticResult as JSON text: Lua would turn its empty
   * lists into objects), so the merge a person approves needs nothing the gate job had.
   */
  held?: string | null;
  /** When the attempt was held for a person's approval. */
  heldAt?: string | null;
  /** A person's verdict on the current or last held attempt. */
  approval?: ApprovalRecord | null;
  startedAt?: string | null;
  finishedAt?: string | null;
}

/** The status JSON that `flotilla status <id> --json` prints and scripts parse. */
export interface MissionStatusJson {
  id: string;
  goal: string;
  status: MissionStatus;
  createdAt: string;
  finishedAt: string | null;
  branch: string;
  /** The repository the branch is in: an absolute path or a URL, as hosts clone it (always set by the store). */
  workspace?: string;
  costUsd?: number;
  /** Present only for a mission with `deliver:`, from the moment it ended. */
  delivery?: DeliveryStatus;
  tasks: Array<{
    id: string;
    title?: string;
    status: TaskStatus;
    attempts: number;
    cli: string | null;
    host: string | null;
    score: number | null;
    error: string | null;
    route?: string | null;
    /** The model tier escalation moved the task to (null: the agent's own), and why. */
    tier?: string | null;
    escalation?: string | null;
    costUsd?: number;
    questions?: unknown;
    /** awaiting_approval: since when the attempt waits for a person. */
    heldAt?: string;
    /** Who approved or rejected the task's last held attempt, when, and after how long. */
    approval?: ApprovalRecord;
    startedAt?: string | null;
    finishedAt?: string | null;
  }>;
}

/** One entry of the audit trail: what a person reads to know what happened and why. */
export interface AuditEntry {
  at: string;
  taskId: string;
  attempt: number;
  stage: AuditStage;
  host?: string;
  cli?: string;
  /** What happened, as data (absent only in entries written before events were typed). */
  event?: AuditEvent;
  /** The event rendered as a sentence when the entry was written. */
  message: string;
  /** Large texts (prompt, result, criteria output); `report` writes them to files. */
  files?: Record<string, string>;
  /** Set by the store when the entry is appended: its place in the mission's hash chain. */
  chain?: { n: number; prev: string; content: string; hash: string };
}

/** Events published on the mission's stream, for `run`, `status --watch` and the board. */
export interface MissionEvent {
  at: string;
  missionId: string;
  taskId?: string;
  attempt?: number;
  type: 'submitted' | 'task' | 'mission' | 'log';
  status?: string;
  message: string;
}

/** flotilla's PROMPT/RESULT files (and their archive) in a checkout: an attempt's audit record, never its work. */
export const DISPATCH_DIR = '.planning/dispatch';
