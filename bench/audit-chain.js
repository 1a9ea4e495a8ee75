/**
 * The hash-chained audit trail's cost (docs/RECEIPTS.md, docs/BENCHMARKS.md): appending an entry
 * with its chain link (one EVAL of store/lua/append-audit-3.lua: SHA-256 in Lua over 128 bytes,
 * content hash in Node) against what it replaced — the indexed append (an EVAL that RPUSHes the JSON
 * and records its position under its task, the script before the chain) — and a bare RPUSH, for a small entry
 * (a gate row) and a large one (a run row with a 20 kB prompt and 20 kB of output); then the
 * verifier's side: recomputing the chain of a long trail, and signing and checking a receipt.
 * Round trips are the same (one per entry); what grows is time in Redis and in the appender.
 */
import { generateKeyPairSync } from 'node:crypto';
import { Redis } from 'ioredis';
import { renderAuditEvent } from '../dist/shared/audit.js';
import { checkChain } from '../dist/shared/audit-chain.js';
import { checkSignature, signReceipt } from '../dist/shared/receipt.js';
import { missionKeys } from '../dist/shared/store/keys.js';
import { MissionStore } from '../dist/shared/store/mission-store.js';
import { buildReceipt } from '../dist/workers/stages/finalize/receipt.js';
import { startRedis } from './lib/redis.js';
import { fmtStats, printTable, summarize, uniquePrefix } from './lib/util.js';

const SPEC = {
  goal: 'bench',
  workspace: '/tmp/x',
  agents: {},
  tasks: [
    {
      id: 't',
      title: 't',
      description: '',
      capability: 'code_implementation',
      kind: 'coding',
      languages: [],
      frameworks: [],
      dependsOn: [],
      exitCriteria: ['true'],
      files: [],
      critic: false,
      controlMode: 'guarded',
      maxAttempts: 3,
      timeoutMs: 1000,
      minScore: 7,
      backoffMs: 0,
    },
  ],
};

function gateEntry(i) {
  return {
    at: new Date().toISOString(),
    taskId: `t${i}`,
    attempt: 1,
    stage: 'gate',
    host: 'bench-host',
    cli: 'flotilla-sim',
    event: { kind: 'gate', action: 'approve', score: 8, commit: 'c'.repeat(40) },
  };
}

function runEntry(i) {
  const text = (tag) => `${tag} ${i}\n${'lorem ipsum dolor sit amet '.repeat(740)}`; // ~20 kB
  return {
    at: new Date().toISOString(),
    taskId: `t${i}`,
    attempt: 1,
    stage: 'run',
    host: 'bench-host',
    cli: 'flotilla-sim',
    event: {
      kind: 'run',
      cli: 'flotilla-sim',
      cliName: 'Flotilla Sim',
      exitCode: 0,
      timedOut: false,
      durationMs: 1000,
      resultStatus: 'success',
      resultSource: 'result file',
      warnings: [],
      rolledBack: [],
      tier: 'execution',
      model: 'sim-medium',
    },
    files: { 'prompt.md': text('prompt'), 'result.md': 'ok', 'stdout.txt': text('stdout'), 'stderr.txt': '' },
  };
}

/** The append before the chain (store/lua/audit-2.lua at the time): push, then index by task. */
const INDEXED_APPEND = `local n = redis.call('RPUSH', KEYS[1], ARGV[2])
local at = tostring(n - 1)
local known = redis.call('HGET', KEYS[2], ARGV[1])
if known then at = known .. ',' .. at end
redis.call('HSET', KEYS[2], ARGV[1], at)
return n - 1`;

function parseStats(info) {
  const out = {};
  for (const line of info.split('\r\n')) {
    const match = /^cmdstat_(\w+):calls=(\d+),usec=(\d+)/.exec(line);
    if (match) out[match[1]] = { calls: Number(match[2]), usec: Number(match[3]) };
  }
  return out;
}

/** Microseconds Redis spent per call of `command` between two INFO readings. */
function usecPerCall(before, after, command) {
  const a = after[command] ?? { calls: 0, usec: 0 };
  const b = before[command] ?? { calls: 0, usec: 0 };
  return (a.usec - b.usec) / Math.max(1, a.calls - b.calls);
}

async function appendRun(redis, client, store, variant, make, n, round) {
  const id = `m-${variant}-${round}-${Math.random().toString(36).slice(2, 8)}`;
  await store.createMission({
    id,
    spec: SPEC,
    repo: '/r',
    baseCommit: 'b',
    roots: [],
    now: new Date().toISOString(),
  });
  const entries = Array.from({ length: n }, (_, i) => make(i));
  const keys = missionKeys(store.prefix, id);
  const before = parseStats(await redis.admin.info('commandstats'));
  const started = performance.now();
  for (const entry of entries) {
    const json = () => JSON.stringify({ ...entry, message: renderAuditEvent(entry.event) });
    if (variant === 'rpush') await client.rpush(keys.audit, json());
    else if (variant === 'indexed')
      await client.eval(INDEXED_APPEND, 2, keys.audit, keys.auditIndex, entry.taskId, json());
    else await store.audit(id, entry);
  }
  const ms = performance.now() - started;
  const after = parseStats(await redis.admin.info('commandstats'));
  return {
    id,
    perEntryMs: ms / n,
    redisUsec: usecPerCall(before, after, variant === 'rpush' ? 'rpush' : 'eval'),
  };
}

const VARIANTS = ['rpush', 'indexed', 'chained'];
const LABELS = { rpush: 'bare RPUSH', indexed: 'indexed EVAL (before)', chained: 'chained + indexed EVAL' };

export async function run(options = {}) {
  const n = options.n ?? 2_000;
  const runs = options.runs ?? 3;
  const redis = await startRedis();
  const client = new Redis(redis.url);
  const store = new MissionStore(client, uniquePrefix('audit'));
  const results = {};
  try {
    const rows = [['entry', 'append', 'ms per entry (client)', 'µs per call in Redis']];
    for (const [size, make] of [
      ['gate (~0.5 kB)', gateEntry],
      ['run (~40 kB)', runEntry],
    ]) {
      const samples = { rpush: [], indexed: [], chained: [] };
      for (let round = 0; round < runs; round++) {
        // Interleaved, so load from other processes hits both alike.
        for (const variant of VARIANTS)
          samples[variant].push(
            await appendRun(
              redis,
              client,
              store,
              variant,
              make,
              size.startsWith('run') ? Math.min(n, 300) : n,
              round,
            ),
          );
      }
      for (const variant of VARIANTS) {
        const client_ = summarize(samples[variant].map((s) => s.perEntryMs));
        const server = summarize(samples[variant].map((s) => s.redisUsec));
        results[`${size} ${variant}`] = { clientMs: client_, redisUsec: server };
        rows.push([size, LABELS[variant], fmtStats(client_, 3), fmtStats(server, 1)]);
      }
      if (size.startsWith('gate')) results.lastChainedGateMission = samples.chained.at(-1)?.id;
    }
    printTable(rows);

    // The verifier's side: recompute a long trail's chain, build, sign and check its receipt.
    const id = results.lastChainedGateMission;
    const audit = await store.getAudit(id);
    const checks = [];
    for (let round = 0; round < runs; round++) {
      const started = performance.now();
      const check = checkChain(id, audit);
      checks.push(performance.now() - started);
      if (!check.ok) throw new Error(`bench trail does not check: ${check.message}`);
    }
    const keys = generateKeyPairSync('ed25519');
    const signs = [];
    const verifies = [];
    let bytes = 0;
    for (let round = 0; round < runs; round++) {
      const body = buildReceipt({
        mission: {
          id,
          goal: 'bench',
          status: 'done',
          repo: '/r',
          baseCommit: 'b',
          branch: `flotilla/${id}`,
          createdAt: '',
          finishedAt: '',
        },
        spec: SPEC,
        integrationTip: null,
        tasks: Array.from({ length: n }, (_, i) => ({ id: `t${i}`, status: 'completed' })),
        audit,
      });
      let started = performance.now();
      const receipt = signReceipt(body, keys.privateKey);
      signs.push(performance.now() - started);
      bytes = JSON.stringify(receipt).length;
      started = performance.now();
      if (!checkSignature(receipt, keys.publicKey).ok) throw new Error('bench receipt does not verify');
      verifies.push(performance.now() - started);
    }
    results.checkChainMs = summarize(checks);
    results.signMs = summarize(signs);
    results.verifySignatureMs = summarize(verifies);
    results.receiptBytes = bytes;
    printTable([
      ['verifier step', `trail of ${audit.length} entries`],
      ['recompute the chain (checkChain)', fmtStats(results.checkChainMs, 1, 'ms')],
      [`sign the receipt (${Math.round(bytes / 1024)} kB, ${n} tasks)`, fmtStats(results.signMs, 1, 'ms')],
      ['check its signature', fmtStats(results.verifySignatureMs, 1, 'ms')],
    ]);
    return results;
  } finally {
    await client.quit();
    await redis.stop();
  }
}
