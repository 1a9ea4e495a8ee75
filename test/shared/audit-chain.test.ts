import { describe, expect, it } from 'vitest';
import { checkChain, entryContentHash, genesisHash, linkHash } from '../../src/shared/audit-chain.js';

type Entry = { at: string; taskId: string; attempt: number; stage: string; message: string; chain?: unknown };

/** Builds a trail the way the append script does, in TypeScript. */
function chained(missionId: string, contents: Omit<Entry, 'chain'>[]): Entry[] {
  let prev = genesisHash(missionId);
  return contents.map((content, i) => {
    const hash = linkHash(prev, entryContentHash(content));
    const entry = { ...content, chain: { n: i + 1, prev, content: entryContentHash(content), hash } };
    prev = hash;
    return entry;
  });
}

const contents = ['route', 'run', 'verify', 'critic', 'gate'].map((stage, i) => ({
  at: `2026-12-01T09:00:0${i}.000Z`,
  taskId: 'mean',
  attempt: 1,
  stage,
  message: `${stage} happened`,
}));

describe('checkChain', () => {
  it('accepts an untouched trail and reports its head and count', () => {
    const trail = chained('m1', contents);
    const check = checkChain('m1', trail);
    expect(check).toMatchObject({
      ok: true,
      count: 5,
      head: (trail[4]?.chain as { hash: string } | undefined)?.hash,
    });
  });

  it('accepts an empty trail with the genesis hash as head', () => {
    expect(checkChain('m1', [])).toMatchObject({ ok: true, count: 0, head: genesisHash('m1') });
  });

  const cases: Array<[string, (t: Entry[]) => Entry[], number, string, RegExp]> = [
    [
      'an edited message',
      (t) => t.map((e, i) => (i === 2 ? { ...e, message: 'verify happened!' } : e)),
      3,
      'content',
      /audit entry 3 \(verify mean attempt 1\): its content was changed/,
    ],
    [
      'a deleted entry',
      (t) => t.filter((_, i) => i !== 1),
      2,
      'gap',
      /^audit entry 2: missing: the trail goes from entry 1 to entry 3 \(deleted\)/,
    ],
    [
      'two entries swapped',
      (t) => [t[0], t[2], t[1], t[3], t[4]] as Entry[],
      2,
      'gap',
      /out of order: entry 3/,
    ],
    [
      'an entry re-linked by hand after an edit',
      (t) =>
        t.map((e, i) => {
          if (i !== 3) return e;
          const edited = { ...e, message: 'critic: score 10' };
          const link = e.chain as { n: number; prev: string };
          const content = entryContentHash(edited);
          return { ...edited, chain: { ...link, content, hash: linkHash(link.prev, content) } };
        }),
      5,
      'prev',
      /audit entry 5 \(gate mean attempt 1\): does not follow the entry before it/,
    ],
    [
      'a forged hash',
      (t) =>
        t.map((e, i) => (i === 0 ? { ...e, chain: { ...(e.chain as object), hash: 'f'.repeat(64) } } : e)),
      1,
      'hash',
      /audit entry 1 .*chain hash is wrong/,
    ],
    [
      'an entry without a link',
      (t) => t.map((e, i) => (i === 4 ? { ...e, chain: undefined } : e)),
      5,
      'unchained',
      /carries no chain link/,
    ],
  ];

  it.each(cases)('names the first divergent entry after %s', (_name, tamper, position, problem, message) => {
    const check = checkChain('m1', tamper(chained('m1', contents)));
    expect(check.ok).toBe(false);
    if (check.ok) return;
    expect(check.position).toBe(position);
    expect(check.problem).toBe(problem);
    expect(check.message).toMatch(message);
  });

  it("refuses another mission's trail: the genesis hash binds the mission id", () => {
    const check = checkChain('m2', chained('m1', contents));
    expect(check).toMatchObject({ ok: false, position: 1, problem: 'prev' });
  });

  it('ignores key order: the content hash is over the canonical form', () => {
    const trail = chained('m1', contents);
    const reordered = trail.map((e) => Object.fromEntries(Object.entries(e).reverse()));
    expect(checkChain('m1', reordered).ok).toBe(true);
  });
});
