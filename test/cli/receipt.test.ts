import { createHash, generateKeyPairSync } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Io } from '../../src/cli/io.js';
import { main } from '../../src/cli/main.js';
import { checkChain } from '../../src/shared/audit-chain.js';
import { checkSignature, type Receipt } from '../../src/shared/receipt.js';
import { missionKeys } from '../../src/shared/store/keys.js';
import { collectReceipt } from '../../src/workers/stages/finalize/collect-receipt.js';
import { indent, sim, startCluster, type TestCluster } from '../helpers/flotilla.js';

/**
 * A real mission on the stand-in agent ends with a signed receipt; `flotilla verify` passes on it,
 * and fails naming the place on one changed byte, a deleted audit row, a rewritten integration
 * branch and a different key.
 */

const MISSION = [
  'goal: receipt mission',
  'workspace: ./ws',
  'defaults: { max_attempts: 3, backoff: 100ms }',
  'tasks:',
  '  - id: first',
  '    title: first',
  '    critic: true',
  '    exit_criteria: ["test -f first.txt"]',
  '    description: |',
  indent(sim('- fail_until_attempt: 2\n- write: {path: first.txt, content: "one {attempt}\\n"}')),
  '  - id: second',
  '    title: second',
  '    critic: false',
  '    depends_on: [first]',
  '    exit_criteria: ["test -f second.txt"]',
  '    description: |',
  indent(sim('- write: {path: second.txt, content: "two\\n"}')),
].join('\n');

function captureIo(): Io & { lines: string[] } {
  const lines: string[] = [];
  return { lines, out: (text) => lines.push(text), err: (text) => lines.push(text), isTTY: false };
}

describe('mission receipt', () => {
  let cluster: TestCluster;
  let id: string;
  let receiptFile: string;
  let receipt: Receipt;
  let repo: string;
  let publicKeyFile: string;
  let otherKeyFile: string;
  let redis: Redis;

  beforeAll(async () => {
    const keys = generateKeyPairSync('ed25519');
    const other = generateKeyPairSync('ed25519');
    const { mkdtemp } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    const keyDir = await mkdtemp(join(tmpdir(), 'flotilla-keys-'));
    const privateKeyFile = join(keyDir, 'signing.pem');
    publicKeyFile = join(keyDir, 'signing.pub.pem');
    otherKeyFile = join(keyDir, 'other.pub.pem');
    await writeFile(privateKeyFile, keys.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
    await writeFile(publicKeyFile, keys.publicKey.export({ type: 'spki', format: 'pem' }).toString());
    await writeFile(otherKeyFile, other.publicKey.export({ type: 'spki', format: 'pem' }).toString());
    cluster = await startCluster({ env: { FLOTILLA_SIGNING_KEY: privateKeyFile } });
    id = await cluster.submit(MISSION);
    const final = await cluster.client.wait(id, { pollMs: 200 });
    expect(final.status).toBe('done');
    // finalize runs after the status turns done; wait for its receipt.
    for (let i = 0; i < 100 && !(await cluster.client.store.getReceipt(id)); i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
    vi.stubEnv('REDIS_URL', cluster.redis.url);
    vi.stubEnv('FLOTILLA_PREFIX', cluster.config.prefix);
    receiptFile = join(cluster.dir, 'receipt.json');
    const io = captureIo();
    expect(await main(['receipt', id, '-o', receiptFile], io)).toBe(0);
    receipt = JSON.parse(await readFile(receiptFile, 'utf8')) as Receipt;
    repo = receipt.mission.repo;
    redis = new Redis(cluster.redis.url);
  }, 120_000);

  afterAll(async () => {
    vi.unstubAllEnvs();
    await redis?.quit();
    await cluster?.stop();
  });

  async function verify(file: string, ...flags: string[]): Promise<{ code: number; text: string }> {
    const io = captureIo();
    const code = await main(['verify', file, ...flags], io);
    return { code, text: io.lines.join('\n') };
  }

  async function tampered(name: string, edit: (text: string) => string): Promise<string> {
    const file = join(cluster.dir, name);
    await writeFile(file, edit(await readFile(receiptFile, 'utf8')));
    return file;
  }

  it('is signed, covers every attempt, and matches the chained trail', async () => {
    expect(checkSignature(receipt).ok).toBe(true);
    const first = receipt.tasks.find((t) => t.id === 'first');
    expect(first?.attempts.map((a) => a.gate)).toEqual(['retry', 'approve']);
    expect(first?.attempts[1]).toMatchObject({ cli: 'flotilla-sim', criteriaPassed: true });
    expect(first?.attempts[1]?.promptHash).toMatch(/^[0-9a-f]{64}$/);
    expect(first?.attempts[1]?.mergeCommit).toMatch(/^[0-9a-f]{40}$/);
    const trail = await cluster.client.store.getAudit(id);
    const chain = checkChain(id, trail);
    expect(chain).toMatchObject({ ok: true, count: receipt.audit.count, head: receipt.audit.head });
    const { signature: _s, ...body } = receipt;
    expect(await collectReceipt(cluster.client.store, id, receipt.mission.integrationTip)).toEqual(body);
  });

  it('verifies: signature under the pinned key, the trail from Redis, the commits in the repository', async () => {
    const { code, text } = await verify(receiptFile, '--public-key', publicKeyFile, '--repo', repo);
    expect(text).toMatch(/✓ signature: valid, made by the pinned key/);
    expect(text).toMatch(/✓ audit trail: \d+ entries recomputed from Redis, chain head matches/);
    expect(text).toMatch(/✓ receipt facts: the same as rebuilt from the audit trail/);
    expect(text).toMatch(/✓ repository .*: every named commit exists; flotilla\/.* is at the signed tip/);
    expect(code).toBe(0);
  });

  it('without a pinned key says it checked integrity only', async () => {
    const { code, text } = await verify(receiptFile);
    expect(code).toBe(0);
    expect(text).toMatch(/no key pinned \(--public-key\), so this checks integrity only/);
    expect(text).toMatch(/intact, integrity only/);
  });

  it('one changed byte fails, naming the field the trail contradicts', async () => {
    const file = await tampered('byte.json', (text) => text.replace('"gate": "retry"', '"gate": "retrx"'));
    const { code, text } = await verify(file, '--public-key', publicKeyFile);
    expect(code).toBe(2);
    expect(text).toMatch(
      /✗ signature: the signature does not match the receipt: it was altered after signing/,
    );
    expect(text).toMatch(
      /✗ receipt tasks\[first\]\.attempts\[1\]\.gate says "retrx"; the audit trail \(entries [\d, ]+\) says "retry"/,
    );
    expect(text).toMatch(/FAILED — signature: /);
  });

  it('a different key fails', async () => {
    const { code, text } = await verify(receiptFile, '--public-key', otherKeyFile);
    expect(code).toBe(2);
    expect(text).toMatch(/FAILED — signature: signed by another key/);
  });

  it('a rewritten integration branch fails, naming the branch and both commits', async () => {
    const branch = receipt.mission.branch;
    const tip = receipt.mission.integrationTip ?? '';
    const rewritten = (
      await execa('git', ['commit-tree', `${tip}^{tree}`, '-p', `${tip}^`, '-m', 'rewritten'], {
        cwd: repo,
        env: {
          GIT_AUTHOR_NAME: 't',
          GIT_AUTHOR_EMAIL: 't@t',
          GIT_COMMITTER_NAME: 't',
          GIT_COMMITTER_EMAIL: 't@t',
        },
      })
    ).stdout.trim();
    await execa('git', ['update-ref', `refs/heads/${branch}`, rewritten, tip], { cwd: repo });
    try {
      const { code, text } = await verify(receiptFile, '--public-key', publicKeyFile, '--repo', repo);
      expect(code).toBe(2);
      expect(text).toMatch(
        new RegExp(
          `FAILED — branch ${branch}: at ${rewritten.slice(0, 12)}, but the receipt signed ${tip.slice(0, 12)}`,
        ),
      );
    } finally {
      await execa('git', ['update-ref', `refs/heads/${branch}`, tip], { cwd: repo });
    }
  });

  it('a deleted audit row fails, naming the entry', async () => {
    const key = missionKeys(cluster.config.prefix, id).audit;
    const row = (await redis.lindex(key, 4)) ?? '';
    await redis.lrem(key, 1, row);
    try {
      const { code, text } = await verify(receiptFile, '--public-key', publicKeyFile);
      expect(code).toBe(2);
      expect(text).toMatch(
        /FAILED — audit entry 5: missing: the trail goes from entry 4 to entry 6 \(deleted\)/,
      );
    } finally {
      await redis.linsert(key, 'BEFORE', (await redis.lindex(key, 4)) ?? '', row);
    }
    expect((await verify(receiptFile, '--public-key', publicKeyFile)).code).toBe(0);
  });

  it('a file that is not a receipt is a usage error', async () => {
    const file = await tampered('not.json', () => '{"format":"x"}');
    const { code, text } = await verify(file);
    expect(code).toBe(2);
    expect(text).toMatch(/not\.json: format: .*expected a flotilla-receipt\/1 receipt/);
  });

  it('report writes the receipt beside the texts it hashes', async () => {
    const out = join(cluster.dir, 'report');
    expect(await main(['report', id, '--out', out], captureIo())).toBe(0);
    const copy = JSON.parse(await readFile(join(out, 'receipt.json'), 'utf8')) as Receipt;
    expect(copy).toEqual(receipt);
    const prompt = await readFile(join(out, 'first', 'a2', 'prompt.md'));
    const hash = createHash('sha256').update(prompt).digest('hex');
    expect(receipt.tasks.find((t) => t.id === 'first')?.attempts[1]?.promptHash).toBe(hash);
  });

  it('receipt of an unknown mission is exit 2 with its name', async () => {
    const io = captureIo();
    expect(await main(['receipt', 'no-such-mission'], io)).toBe(2);
    expect(io.lines.join('\n')).toMatch(/no mission 'no-such-mission'/);
  });
});
