import { type AuditEvent, renderAuditEvent } from '../audit.js';
import { entryContentHash, genesisHash } from '../audit-chain.js';
import { canonicalJson } from '../canonical-json.js';
import type { AuditEntry } from '../contracts.js';
import type { Receipt } from '../receipt.js';
import type { RedisClient } from '../redis.js';
import { missionKeys } from './keys.js';
import { APPEND_AUDIT_SCRIPT } from './scripts.js';

/** An audit entry as a stage writes it: the event, without its rendered message. */
export type AuditInput = Omit<AuditEntry, 'message' | 'event'> & { readonly event: AuditEvent };

/**
 * An entry as audit-append.lua takes it: canonical JSON, its content hash, the genesis hash. The
 * settle script (transitions.ts) appends the gate's entry with the same arguments.
 */
export function chainArgs(id: string, entry: AuditInput): [string, string, string] {
  const { chain: _ignored, ...rest } = entry as AuditInput & { chain?: unknown };
  const content: AuditEntry = { ...rest, message: renderAuditEvent(entry.event) };
  return [canonicalJson(content), entryContentHash(content), genesisHash(id)];
}

/**
 * A mission's audit trail: a hash chain (shared/audit-chain.ts) appended by Lua, an index of each
 * task's positions in it, and the receipt finalize signs over it.
 */
export class AuditLog {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  /**
   * Appends an entry to the mission's hash-chained trail and indexes it under its task: one script
   * links, pushes and indexes it, the one round trip a plain RPUSH took. Its message is the
   * rendering of its event. Returns the entry's number in the chain.
   */
  async audit(id: string, entry: AuditInput): Promise<number> {
    const keys = missionKeys(this.prefix, id);
    const n = await this.redis.eval(
      APPEND_AUDIT_SCRIPT,
      3,
      keys.meta,
      keys.audit,
      keys.auditIndex,
      entry.taskId,
      ...chainArgs(id, entry),
    );
    return Number(n);
  }

  /**
   * One task's audit entries, oldest first, read by their positions: the board's task detail
   * reads this on a click, and the whole trail of a 10,000-task mission is tens of megabytes.
   * A mission written before the index existed is read whole and filtered.
   */
  async getTaskAudit(id: string, taskId: string): Promise<AuditEntry[]> {
    const keys = missionKeys(this.prefix, id);
    const [positions, indexed] = await Promise.all([
      this.redis.hget(keys.auditIndex, taskId),
      this.redis.exists(keys.auditIndex),
    ]);
    if (positions === null) {
      if (indexed === 1) return [];
      return (await this.getAudit(id)).filter((entry) => entry.taskId === taskId);
    }
    const pipeline = this.redis.pipeline();
    for (const at of positions.split(',')) pipeline.lindex(keys.audit, Number(at));
    const replies = (await pipeline.exec()) ?? [];
    return replies
      .map(([, raw]) => (typeof raw === 'string' ? (JSON.parse(raw) as AuditEntry) : null))
      .filter((entry): entry is AuditEntry => entry !== null);
  }

  async getAudit(id: string): Promise<AuditEntry[]> {
    const raw = await this.redis.lrange(missionKeys(this.prefix, id).audit, 0, -1);
    return raw.map((json) => JSON.parse(json) as AuditEntry);
  }

  /** The trail's head as the append script left it: its last hash and how many entries it wrote. */
  async getAuditHead(id: string): Promise<{ count: number; head: string | null }> {
    const [count, head] = await this.redis.hmget(
      missionKeys(this.prefix, id).meta,
      'auditCount',
      'auditHead',
    );
    return { count: Number(count ?? 0), head: head ?? null };
  }

  /** The receipt finalize wrote (flotilla receipt <id>), or null before the mission finished. */
  async getReceipt(id: string): Promise<Receipt | null> {
    const raw = await this.redis.hget(missionKeys(this.prefix, id).meta, 'receipt');
    return raw ? (JSON.parse(raw) as Receipt) : null;
  }

  async setReceipt(id: string, receipt: Receipt): Promise<void> {
    await this.redis.hset(missionKeys(this.prefix, id).meta, 'receipt', JSON.stringify(receipt));
  }
}
