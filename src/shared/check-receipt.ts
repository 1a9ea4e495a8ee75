import type { KeyObject } from 'node:crypto';
import { AFTER_RECEIPT_STAGES } from './audit.js';
import { type ChainCheck, checkChain } from './audit-chain.js';
import { canonicalJson } from './canonical-json.js';
import type { AuditEntry } from './contracts.js';
import { checkSignature, type Receipt, type ReceiptBody, receiptBody } from './receipt.js';

/**
 * `flotilla verify` as a pure function of the facts the command gathered: the receipt, a pinned key,
 * the trail and a rebuilt receipt from Redis when it was reachable, the repository's commits when
 * `--repo` was given. It returns what held, what did not (first divergence first) and how much was
 * checked, so the command only prints and picks the exit code.
 */
export interface VerifyFacts {
  readonly receipt: Receipt;
  readonly pinnedKey?: KeyObject;
  /** Null when Redis was not reachable or no longer holds the mission. */
  readonly store: { readonly audit: readonly AuditEntry[]; readonly rebuilt: ReceiptBody } | null;
  readonly storeNote?: string;
  /** Null without --repo. `exists` lists which of the receipt's commits the repository has. */
  readonly repo: {
    readonly path: string;
    readonly branchTip: string | null;
    readonly missing: readonly string[];
  } | null;
}

export interface VerifyReport {
  readonly ok: boolean;
  /** One line per check, in order: `✓ …` held, `✗ …` did not, `- …` not checked. */
  readonly lines: readonly string[];
  /** The first thing that did not hold, named (entry, field or commit); null when all held. */
  readonly firstProblem: string | null;
  readonly problemCount: number;
  /** `authenticated`: valid under a pinned key; `integrity`: valid under the embedded key only. */
  readonly level: 'authenticated' | 'integrity' | 'none';
}

export function checkReceipt(facts: VerifyFacts): VerifyReport {
  const lines: string[] = [];
  const problems: string[] = [];
  const fail = (message: string) => {
    problems.push(message);
    lines.push(`✗ ${message}`);
  };
  const { receipt } = facts;

  const signature = checkSignature(receipt, facts.pinnedKey);
  let level: VerifyReport['level'] = 'none';
  if (!signature.ok) fail(`signature: ${signature.message}`);
  else if (signature.pinned) {
    level = 'authenticated';
    lines.push(`✓ signature: valid, made by the pinned key ${signature.keyId.slice(0, 16)}…`);
  } else {
    level = 'integrity';
    lines.push(
      `✓ signature: valid under the key embedded in the receipt (${signature.keyId.slice(0, 16)}…); no key pinned (--public-key), so this checks integrity only, not who signed it`,
    );
  }

  if (facts.store) {
    const trail = compareTrail(receipt, checkChain(receipt.mission.id, facts.store.audit), facts.store.audit);
    if (trail) fail(trail);
    else {
      const after = facts.store.audit.length - receipt.audit.count;
      const delivery =
        after > 0 ? `; ${after} delivery or on_finish entr${after === 1 ? 'y' : 'ies'} follow it` : '';
      lines.push(
        `✓ audit trail: ${receipt.audit.count} entries recomputed from Redis, chain head matches${delivery}`,
      );
      const diff = firstDifference(receiptBody(receipt), facts.store.rebuilt);
      if (diff) fail(`receipt ${diff}`);
      else lines.push('✓ receipt facts: the same as rebuilt from the audit trail');
    }
  } else {
    lines.push(`- audit trail: not recomputed (${facts.storeNote ?? 'Redis not reachable'})`);
  }

  if (facts.repo) {
    const repoProblems = checkRepo(receipt, facts.repo);
    for (const problem of repoProblems) fail(problem);
    if (repoProblems.length === 0) {
      lines.push(
        `✓ repository ${facts.repo.path}: every named commit exists; ${receipt.mission.branch} is at the signed tip ${short(receipt.mission.integrationTip)}`,
      );
    }
  } else {
    lines.push('- repository: not checked (no --repo)');
  }

  return {
    ok: problems.length === 0,
    lines,
    firstProblem: problems[0] ?? null,
    problemCount: problems.length,
    level,
  };
}

/** The trail as stored against the receipt's list of entry hashes: the first entry that differs. */
function compareTrail(receipt: Receipt, chain: ChainCheck, audit: readonly AuditEntry[]): string | null {
  if (!chain.ok) return chain.message;
  const signed = receipt.audit.hashes;
  const limit = Math.min(signed.length, chain.hashes.length);
  for (let i = 0; i < limit; i++) {
    if (signed[i] !== chain.hashes[i]) {
      return `audit entry ${i + 1}${describe(audit[i])}: differs from the one the receipt signed (the trail was rewritten from here on)`;
    }
  }
  if (chain.hashes.length < signed.length) {
    return `audit entry ${chain.hashes.length + 1}: missing from the trail (the receipt signed ${signed.length} entries, Redis holds ${chain.hashes.length})`;
  }
  // Delivery and on_finish are recorded after the receipt is signed (the pull request carries it).
  const later = audit.slice(signed.length);
  const other = later.findIndex((entry) => !AFTER_RECEIPT_STAGES.includes(entry.stage));
  if (other !== -1) {
    const n = signed.length + other;
    return `audit entry ${n + 1}${describe(audit[n])}: written after the receipt was signed`;
  }
  const head = later.length > 0 ? chain.hashes[signed.length - 1] : chain.head;
  if (receipt.audit.head !== head) return 'audit trail: its head is not the one the receipt signed';
  return null;
}

function checkRepo(receipt: Receipt, repo: NonNullable<VerifyFacts['repo']>): string[] {
  const problems: string[] = [];
  for (const named of namedCommits(receipt)) {
    if (repo.missing.includes(named.commit))
      problems.push(`commit ${short(named.commit)} (${named.what}): not in ${repo.path}`);
  }
  const tip = receipt.mission.integrationTip;
  if (repo.branchTip === null) problems.push(`branch ${receipt.mission.branch}: not in ${repo.path}`);
  else if (tip && repo.branchTip !== tip) {
    problems.push(
      `branch ${receipt.mission.branch}: at ${short(repo.branchTip)}, but the receipt signed ${short(tip)} (the integration branch was rewritten or moved)`,
    );
  }
  return problems;
}

/** Every commit a receipt names, with what it is, for `--repo`. */
export function namedCommits(receipt: ReceiptBody): Array<{ commit: string; what: string }> {
  const out: Array<{ commit: string; what: string }> = [];
  if (receipt.mission.baseCommit) out.push({ commit: receipt.mission.baseCommit, what: 'base commit' });
  if (receipt.mission.integrationTip)
    out.push({ commit: receipt.mission.integrationTip, what: 'integration tip' });
  for (const task of receipt.tasks) {
    for (const a of task.attempts) {
      if (a.commit) out.push({ commit: a.commit, what: `${task.id} attempt ${a.attempt}` });
      if (a.mergeCommit) out.push({ commit: a.mergeCommit, what: `${task.id} attempt ${a.attempt} merge` });
    }
  }
  return out;
}

/**
 * The first place where the receipt says something the trail does not, named by task id and attempt
 * number rather than array index, with the audit entries the rebuilt value came from.
 */
export function firstDifference(claimed: ReceiptBody, rebuilt: ReceiptBody): string | null {
  const mission = diffValue(claimed.mission, rebuilt.mission, 'mission');
  if (mission) return mission;
  for (const task of rebuilt.tasks) {
    const other = claimed.tasks.find((t) => t.id === task.id);
    if (!other) return `tasks: leaves out task ${task.id}`;
    if (other.status !== task.status)
      return `tasks[${task.id}].status says ${show(other.status)}; mission state says ${show(task.status)}`;
    for (const attempt of task.attempts) {
      const mine = other.attempts.find((a) => a.attempt === attempt.attempt);
      const where = `tasks[${task.id}].attempts[${attempt.attempt}]`;
      if (!mine) return `${where}: missing (audit entries ${attempt.entries.join(', ')})`;
      for (const key of Object.keys(attempt) as Array<keyof typeof attempt>) {
        if (canonicalJson(mine[key] ?? null) !== canonicalJson(attempt[key] ?? null)) {
          return `${where}.${key} says ${show(mine[key])}; the audit trail (entries ${attempt.entries.join(', ')}) says ${show(attempt[key])}`;
        }
      }
    }
    if (other.attempts.length !== task.attempts.length)
      return `tasks[${task.id}].attempts: lists attempts the audit trail does not have`;
  }
  if (claimed.tasks.length !== rebuilt.tasks.length) return 'tasks: lists tasks the mission does not have';
  return diffValue(claimed, rebuilt, 'receipt') === null ? null : 'has fields the rebuilt receipt does not';
}

function diffValue(a: unknown, b: unknown, path: string): string | null {
  if (canonicalJson(a ?? null) === canonicalJson(b ?? null)) return null;
  if (a && b && typeof a === 'object' && typeof b === 'object' && !Array.isArray(a)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const key of [...keys].sort()) {
      const inner = diffValue(
        (a as Record<string, unknown>)[key],
        (b as Record<string, unknown>)[key],
        `${path}.${key}`,
      );
      if (inner) return inner;
    }
  }
  return `${path} says ${show(a)}; mission state says ${show(b)}`;
}

function describe(entry: AuditEntry | undefined): string {
  if (!entry) return '';
  const task = entry.taskId ? ` ${entry.taskId}` : '';
  const attempt = entry.attempt > 0 ? ` attempt ${entry.attempt}` : '';
  return ` (${entry.stage}${task}${attempt})`;
}

function show(value: unknown): string {
  const text = JSON.stringify(value ?? null);
  return text.length > 80 ? `${text.slice(0, 77)}…` : text;
}

function short(commit: string | null): string {
  return commit ? commit.slice(0, 12) : '(none)';
}
