import { type AuditEntry, attemptJobId, dispatchQueue, type JOBS, QUEUES } from '../shared/contracts.js';
import { parseVerdict } from '../stages/critic/verdict.js';

/**
 * What the board shows of an attempt, read from the audit trail. The workers write the audit as
 * sentences for people (plus `criteria.txt`); these parsers read those sentences back, and fall
 * back to showing the sentence itself when one does not match.
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

export type GateAction = 'approve' | 'retry' | 'fail' | 'pause' | 'cancel';

export interface AttemptView {
  readonly attempt: number;
  /** The queue the run job went to, from the route entry. */
  readonly queue?: string;
  readonly host?: string;
  readonly cli?: string;
  readonly durationSec?: number;
  readonly criteria: readonly CriterionView[];
  readonly verifyMessage?: string;
  readonly critic?: CriticView;
  readonly gate?: { readonly action: GateAction | null; readonly message: string };
  /** Every audit sentence of the attempt, oldest first. */
  readonly timeline: readonly AuditEntry[];
}

export function gateActionOf(message: string): GateAction | null {
  if (message.startsWith('approved')) return 'approve';
  if (message.startsWith('retry')) return 'retry';
  if (message.startsWith('failed')) return 'fail';
  if (message.startsWith('paused')) return 'pause';
  if (message.startsWith('cancelled')) return 'cancel';
  return null;
}

/** `… exited 0 after 12s; …` → 12. */
export function runDurationSec(message: string): number | undefined {
  const match = /\bafter (\d+(?:\.\d+)?)s\b/.exec(message);
  return match ? Number(match[1]) : undefined;
}

/** `attempt 2 → dispatch.testing: reason` → `dispatch.testing`. */
export function routedQueue(message: string): string | undefined {
  return /→ (\S+?):/.exec(message)?.[1];
}

/**
 * `critic Codex CLI: score 8/10, approve — issue one; issue two`. The sentence joins issues with
 * `; `, which an issue may contain too, so when the reviewer's own result (`review.md`) holds the
 * same score, its issue list is the one shown.
 */
export function parseCritic(message: string, cli?: string, review?: string): CriticView {
  const match = /score (\d+(?:\.\d+)?)\/10, (approve|reject)(?: — ([\s\S]*))?$/.exec(message);
  if (!match) return { score: null, verdict: null, issues: [], cli, message };
  const score = Number(match[1]);
  const fromReview = review ? parseVerdict(review) : null;
  const issues =
    fromReview && fromReview.score === score
      ? [...fromReview.issues]
      : (match[3] ?? '')
          .split('; ')
          .map((s) => s.trim())
          .filter(Boolean);
  return { score, verdict: match[2] === 'approve' ? 'approve' : 'reject', issues, cli, message };
}

/**
 * `criteria.txt` as verify writes it: per command `$ <command>`, `# exit <code>[ (timed out)]`,
 * then the output tail. A `$ ` line counts as a header only when an `# exit` line follows it,
 * so output that happens to start with `$ ` stays output.
 */
export function parseCriteria(text: string): CriterionView[] {
  const lines = text.split('\n');
  const out: { command: string; exit: string; timedOut: boolean; tail: string[] }[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    const exit = /^# exit (\S+)( \(timed out\))?$/.exec(lines[i + 1] ?? '');
    if (line.startsWith('$ ') && exit) {
      out.push({
        command: line.slice(2),
        exit: exit[1] ?? 'none',
        timedOut: exit[2] !== undefined,
        tail: [],
      });
      i++;
    } else {
      out.at(-1)?.tail.push(line);
    }
  }
  return out.map((c) => ({
    command: c.command,
    exit: c.exit,
    timedOut: c.timedOut,
    passed: c.exit === '0' && !c.timedOut,
    tail: c.tail.join('\n').trim(),
  }));
}

/** Without `criteria.txt`, the verify sentence still says ✓ or ✗ per command. */
function criteriaFromMessage(message: string): CriterionView[] {
  const list = message.replace(/^exit criteria (passed|failed): /, '');
  if (list === message) return [];
  return list.split(/; (?=[✓✗] )/).map((item) => ({
    command: item.slice(2),
    exit: item.startsWith('✓') ? '0' : '?',
    timedOut: false,
    passed: item.startsWith('✓'),
    tail: '',
  }));
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
  const last = (stage: AuditEntry['stage']) => entries.filter((e) => e.stage === stage).at(-1);
  const route = last('route');
  // A rate-limited run writes a run entry without a duration before the real one.
  const runs = entries.filter((e) => e.stage === 'run');
  const run = runs.filter((e) => runDurationSec(e.message) !== undefined).at(-1) ?? runs.at(-1);
  const verify = last('verify');
  const critic = last('critic');
  const gate = last('gate');
  const criteriaText = verify?.files?.['criteria.txt'];
  const criteria = verify
    ? criteriaText
      ? parseCriteria(criteriaText)
      : criteriaFromMessage(verify.message)
    : [];
  return {
    attempt,
    queue: route ? routedQueue(route.message) : undefined,
    host: run?.host,
    cli: run?.cli,
    durationSec: run ? runDurationSec(run.message) : undefined,
    criteria,
    verifyMessage: verify?.message,
    critic: critic ? parseCritic(critic.message, critic.cli, critic.files?.['review.md']) : undefined,
    gate: gate ? { action: gateActionOf(gate.message), message: gate.message } : undefined,
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

/** The four jobs of an attempt's flow (DESIGN.md §2), with links into Bull Board. */
export function attemptJobLinks(
  basePath: string,
  input: { missionId: string; taskId: string; attempt: number; runQueue?: string; capability: string },
): JobLink[] {
  const stages: [keyof typeof JOBS, string][] = [
    ['run', input.runQueue ?? dispatchQueue(input.capability)],
    ['verify', QUEUES.verify],
    ['critic', QUEUES.critic],
    ['gate', QUEUES.mission],
  ];
  return stages.map(([stage, queue]) => {
    const jobId = attemptJobId(input.missionId, input.taskId, input.attempt, stage);
    return { stage, queue, jobId, href: bullBoardJobHref(basePath, queue, jobId) };
  });
}
