import type { KeyObject } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { checkReceipt, namedCommits, type VerifyFacts } from '../../shared/check-receipt.js';
import type { Config } from '../../shared/config.js';
import { FlotillaError, isFlotillaError } from '../../shared/errors.js';
import { chooseRedis } from '../../shared/home-redis.js';
import { parsePublicKey, type Receipt } from '../../shared/receipt.js';
import { parseReceipt } from '../../shared/receipt-schema.js';
import { connectOrFail } from '../../shared/redis.js';
import { MissionStore } from '../../shared/store/mission-store.js';
import { collectReceipt } from '../../workers/stages/finalize/collect-receipt.js';
import { resolveCommit, runGit } from '../../workers/workspace/git.js';
import type { Io } from '../io.js';

/** `flotilla receipt <id> [-o FILE]`: the signed receipt finalize wrote, as JSON. */
export async function receipt(args: { id: string; out?: string }, given: Config, io: Io): Promise<number> {
  const { config, home } = await chooseRedis(given);
  const redis = await connectOrFail(config.redisUrl ?? '').catch(async (error: unknown) => {
    await home?.release();
    throw error;
  });
  try {
    const store = new MissionStore(redis, config.prefix, config.secret);
    if (!(await store.missionExists(args.id)))
      throw new FlotillaError('mission/not-found', `no mission '${args.id}'`);
    const found = await store.getReceipt(args.id);
    if (!found) {
      io.err(`flotilla: mission ${args.id} has no receipt yet: finalize writes it when the mission ends`);
      return 1;
    }
    const text = `${JSON.stringify(found, null, 2)}\n`;
    if (args.out) {
      await writeFile(resolve(args.out), text);
      io.err(
        `receipt of ${args.id} written to ${args.out}${found.signature ? '' : ' (not signed: FLOTILLA_SIGNING_KEY was not set)'}`,
      );
    } else {
      io.out(text.trimEnd());
    }
    return 0;
  } finally {
    redis.disconnect();
    await home?.release();
  }
}

/**
 * `flotilla verify <receipt.json> [--public-key PEM] [--repo PATH]`: exit 0 when every check held,
 * 2 naming the first that did not. Redis being unreachable is not a failure of the receipt: the
 * trail is then simply not recomputed, and the output says so.
 */
export async function verify(
  args: { file: string; publicKey?: string; repo?: string },
  config: Config,
  io: Io,
): Promise<number> {
  const text = await readFile(args.file, 'utf8').catch((error: NodeJS.ErrnoException) => {
    throw new FlotillaError('usage', `${args.file}: cannot read (${error.code ?? error.message})`);
  });
  const parsed = parseReceipt(text, args.file);
  const pinnedKey = args.publicKey ? await readPublicKey(args.publicKey) : undefined;
  const { store, note } = await storeFacts(parsed, config);
  const facts: VerifyFacts = {
    receipt: parsed,
    ...(pinnedKey ? { pinnedKey } : {}),
    store,
    ...(note ? { storeNote: note } : {}),
    repo: args.repo ? await repoFacts(parsed, resolve(args.repo)) : null,
  };
  const report = checkReceipt(facts);
  for (const line of report.lines) io.out(line);
  if (!report.ok) {
    const more = report.problemCount > 1 ? ` (and ${report.problemCount - 1} more above)` : '';
    io.out(`receipt of ${parsed.mission.id}: FAILED — ${report.firstProblem}${more}`);
    return 2;
  }
  io.out(
    report.level === 'authenticated'
      ? `receipt of ${parsed.mission.id}: verified (signature by the pinned key${store ? ', audit trail' : ''}${facts.repo ? ', repository' : ''})`
      : `receipt of ${parsed.mission.id}: intact, integrity only — pin the signer's key with --public-key to check who signed it`,
  );
  return 0;
}

async function readPublicKey(file: string): Promise<KeyObject> {
  const pem = await readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) => {
    throw new FlotillaError('usage', `--public-key ${file}: cannot read (${error.code ?? error.message})`);
  });
  return parsePublicKey(pem, file);
}

async function storeFacts(
  parsed: Receipt,
  given: Config,
): Promise<{ store: VerifyFacts['store']; note?: string }> {
  let chosen: Awaited<ReturnType<typeof chooseRedis>>;
  let redis: Awaited<ReturnType<typeof connectOrFail>>;
  try {
    chosen = await chooseRedis(given);
  } catch (error) {
    if (isFlotillaError(error, 'redis/unreachable')) return { store: null, note: error.message };
    throw error;
  }
  const { config, home } = chosen;
  try {
    redis = await connectOrFail(config.redisUrl ?? '', 1_500);
  } catch (error) {
    await home?.release();
    if (isFlotillaError(error, 'redis/unreachable')) return { store: null, note: error.message };
    throw error;
  }
  try {
    const store = new MissionStore(redis, config.prefix, config.secret);
    if (!(await store.missionExists(parsed.mission.id))) {
      return {
        store: null,
        note: `mission ${parsed.mission.id} is not in this Redis (prefix ${config.prefix})`,
      };
    }
    const [audit, rebuilt] = await Promise.all([
      store.getAudit(parsed.mission.id),
      collectReceipt(store, parsed.mission.id, parsed.mission.integrationTip),
    ]);
    return { store: { audit, rebuilt } };
  } finally {
    redis.disconnect();
    await home?.release();
  }
}

async function repoFacts(parsed: Receipt, path: string): Promise<NonNullable<VerifyFacts['repo']>> {
  const inside = await runGit(['rev-parse', '--git-dir'], { cwd: path, allowFailure: true }).catch(
    () => null,
  );
  if (inside?.exitCode !== 0) throw new FlotillaError('usage', `--repo ${path}: not a git repository`);
  const missing: string[] = [];
  for (const { commit } of namedCommits(parsed)) {
    if ((await resolveCommit(path, commit)) !== commit) missing.push(commit);
  }
  return { path, branchTip: await resolveCommit(path, `refs/heads/${parsed.mission.branch}`), missing };
}
