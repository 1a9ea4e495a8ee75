import { canonicalJson, sha256Hex } from './canonical-json.js';

/**
 * The audit trail as a hash chain. Every entry of a mission carries
 *   chain.n       its place, 1-based, assigned by the script that appends it
 *   chain.prev    the previous entry's hash (the mission's genesis hash for entry 1)
 *   chain.content SHA-256 of the canonical JSON of the entry without `chain`
 *   chain.hash    SHA-256 of (prev ‖ content), the two hex strings concatenated
 * so an edited entry no longer matches its content hash, and a deleted, inserted or reordered one
 * breaks the link to its neighbour. The link hashes the content *hash*, not the content: Redis Lua
 * has no SHA-256, so the append script computes it itself (store/lua), and over 128 bytes that stays
 * cheap however large the prompt inside the entry is.
 */
export interface ChainLink {
  readonly n: number;
  readonly prev: string;
  readonly content: string;
  readonly hash: string;
}

export const CHAIN_VERSION = 1;

/** Entry 1's `prev`: binds the chain to its mission, so one mission's trail cannot pass for another's. */
export function genesisHash(missionId: string): string {
  return sha256Hex(`flotilla audit chain v${CHAIN_VERSION}\n${missionId}`);
}

export function linkHash(prev: string, contentHash: string): string {
  return sha256Hex(prev + contentHash);
}

/** The content hash of an entry: everything but its chain link. */
export function entryContentHash(entry: object): string {
  const { chain: _chain, ...content } = entry as { chain?: unknown };
  return sha256Hex(canonicalJson(content));
}

export type ChainProblem = 'unchained' | 'gap' | 'prev' | 'content' | 'hash';

export type ChainCheck =
  | { readonly ok: true; readonly count: number; readonly head: string; readonly hashes: readonly string[] }
  | {
      readonly ok: false;
      /** The entry number the chain expected: 1-based position in the trail as read. */
      readonly position: number;
      readonly problem: ChainProblem;
      readonly message: string;
    };

/**
 * Recomputes the chain over the trail as stored and names the first entry that does not hold.
 * An entry is named by the number the chain expected there, which is the number it had when it
 * was written: after a deletion, the entry found in the gap's place is reported, and it says which
 * number it carries instead.
 */
export function checkChain(missionId: string, entries: readonly object[]): ChainCheck {
  let prev = genesisHash(missionId);
  const hashes: string[] = [];
  for (const [i, entry] of entries.entries()) {
    const expected = i + 1;
    // A gap names the missing number alone: the entry found in its place is another one.
    const fail = (problem: ChainProblem, message: string): ChainCheck => ({
      ok: false,
      position: expected,
      problem,
      message: `audit entry ${expected}${problem === 'gap' ? '' : describe(entry)}: ${message}`,
    });
    const link = (entry as { chain?: Partial<ChainLink> }).chain;
    if (!link || typeof link.hash !== 'string') return fail('unchained', 'carries no chain link');
    if (link.n !== expected) {
      const later = entries
        .slice(i + 1)
        .some((e) => (e as { chain?: { n?: unknown } }).chain?.n === expected);
      return fail(
        'gap',
        later || link.n === undefined || link.n < expected
          ? `out of order: entry ${String(link.n)} found where entry ${expected} belongs`
          : `missing: the trail goes from entry ${expected - 1} to entry ${link.n} (deleted)`,
      );
    }
    if (link.prev !== prev)
      return fail('prev', 'does not follow the entry before it (removed, inserted or reordered)');
    const content = entryContentHash(entry);
    if (link.content !== content) return fail('content', 'its content was changed after it was written');
    if (link.hash !== linkHash(prev, content)) return fail('hash', 'its chain hash is wrong');
    prev = link.hash;
    hashes.push(link.hash);
  }
  return { ok: true, count: entries.length, head: prev, hashes };
}

function describe(entry: object): string {
  const e = entry as { stage?: unknown; taskId?: unknown; attempt?: unknown };
  if (typeof e.stage !== 'string') return '';
  const task = typeof e.taskId === 'string' && e.taskId ? ` ${e.taskId}` : '';
  const attempt = typeof e.attempt === 'number' && e.attempt > 0 ? ` attempt ${e.attempt}` : '';
  return ` (${e.stage}${task}${attempt})`;
}
