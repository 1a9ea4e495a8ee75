import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { type Config, DEFAULT_SLOTS } from '../../shared/config.js';
import { dispatchQueue, JOBS, QUEUES } from '../../shared/contracts.js';
import { requirementQueue, splitRequirementQueue, unmet } from '../../shared/host-facts.js';
import { createLogger, type Logger } from '../../shared/logger.js';
import { QueueSet } from '../../shared/queue/queues.js';
import { readSigningKey } from '../../shared/receipt.js';
import { createRedis } from '../../shared/redis.js';
import { Semaphore } from '../../shared/semaphore.js';
import { MissionStore } from '../../shared/store/mission-store.js';
import { clusterId, type HostInfo, publishHost, removeHost } from '../../shared/store/registry.js';
import { createTelemetry } from '../../shared/telemetry.js';
import { detectClis } from '../agent/adapters/detect.js';
import { loadAdaptersOrThrow } from '../agent/adapters/load-adapters.js';
import { cliGroupsDir, createCliGroups } from '../agent/cli-groups.js';
import { detectFacts, type FactsOptions } from '../agent/host-facts.js';
import { keepFromChildren, redisUrlSecrets } from '../agent/private-env.js';
import { assertSandboxWorks, type Sandbox } from '../agent/sandbox.js';
import { forgetEndedMissions, type HostCli, type HostContext } from '../stages/context.js';
import { reviewAttempt } from '../stages/critic/processor.js';
import { deliverJobFailed, deliverMission } from '../stages/deliver/processor.js';
import { finalizeMission } from '../stages/finalize/processor.js';
import { gateJobFailed } from '../stages/gate/job-failed.js';
import { gateAttempt, verdictOnHeld } from '../stages/gate/processor.js';
import { deliverNotification } from '../stages/notify/processor.js';
import { runAttempt } from '../stages/run/processor.js';
import { verifyAttempt } from '../stages/verify/processor.js';
import { claimCheckoutRoot } from '../workspace/checkout-root.js';
import { SCANNED_TREE_FILES, type ScanSetting, scanSetting } from '../workspace/dir-record.js';
import { fileMonitor } from '../workspace/file-monitor.js';
import { assertGitVersion } from '../workspace/git.js';
import { InotifyMonitor } from '../workspace/inotify-monitor.js';
import { pruneHostCaches } from '../workspace/prune.js';
import { agePriorities } from './age-priorities.js';
import { listenForControl } from './control.js';
import { claimHostId } from './host-claim.js';
import { createPools, type Processor } from './pools.js';
import { type CloseOutcome, createClose } from './shutdown.js';
import { sweepMissions } from './sweep.js';

export interface HostOptions {
  readonly config: Config;
  readonly redisUrl: string;
  readonly adaptersDir?: string;
  readonly hostId?: string;
  /** Host-wide number of CLI processes at once. */
  readonly slots?: number;
  /** The adapter (by `cli`) that serves dispatch.internal on this host. */
  readonly internalCli?: string;
  readonly logger?: Logger;
  /** Grace period for running CLIs on the first shutdown signal. */
  readonly graceMs?: number;
  readonly heartbeatMs?: number;
  /** How often one host of the cluster re-adds jobs a crashed process never added. */
  readonly sweepMs?: number;
  /** False where nobody else can reach Redis (`flotilla run`'s private redis-server). */
  readonly warnUnsigned?: boolean;
  /** Prune this machine's host caches before serving (`flotilla worker` and `flotilla run` do). */
  readonly pruneCaches?: boolean;
  /** Run every agent CLI under bwrap (`flotilla worker --sandbox`); checked before anything starts. */
  readonly sandbox?: Sandbox;
  /** The toolchains to probe, the operator's labels and a facts file (agent/host-facts.ts). */
  readonly facts?: FactsOptions;
}

export type { CloseOutcome } from './shutdown.js';

export interface Host {
  readonly hostId: string;
  readonly clis: readonly HostCli[];
  readonly capabilities: readonly string[];
  /** The missions whose specs this host holds in memory (dropped when a mission ends). */
  cachedMissions(): string[];
  /** Stops taking jobs, lets running CLIs finish up to the grace period, then kills them. */
  close(options?: { force?: boolean }): Promise<CloseOutcome>;
}

/** How often a host lifts aged run jobs to the top priority (age-priorities.ts): a fraction of the age. */
const AGE_CHECK_MS = 15_000;
/** A host re-advertises itself this often; its registry entry expires after a few missed beats. */
const HEARTBEAT_MS = 5_000;
/** How often one host looks for state whose job a crashed process never added (host/sweep.ts). */
const SWEEP_MS = 30_000;
/** How long running CLIs may finish after the first stop signal before they are killed. */
const DEFAULT_GRACE_MS = 30_000;

/** How warm checkouts find what git does not track, without a monitor (workspace/dir-record.ts). */
function scanNote(setting: ScanSetting): string {
  if (setting === 'off') return 'are walked (FLOTILLA_CHECKOUT_SCAN=off)';
  if (setting === 'on') return 'scan their changed folders (FLOTILLA_CHECKOUT_SCAN=on)';
  return `of ${SCANNED_TREE_FILES.toLocaleString('en-US')} files or more scan their changed folders, smaller ones are walked`;
}

function watchesNote(monitor: InotifyMonitor): string {
  const from =
    monitor.minEntries > 0
      ? ` of trees of ${monitor.minEntries.toLocaleString('en-US')} entries or more`
      : '';
  return `the host's own inotify watches${from}`;
}

/**
 * A worker host: detects its CLIs once, serves one pool per capability they offer plus verify,
 * critic and mission, advertises itself in the registry, and obeys cancel messages.
 */
export async function startHost(options: HostOptions): Promise<Host> {
  const config = options.config;
  await assertGitVersion();
  const hostId = options.hostId ?? `${hostname()}-${process.pid}-${randomBytes(2).toString('hex')}`;
  const logger = (options.logger ?? createLogger({ level: config.logLevel })).child({ host: hostId });
  // Before any child starts (detection included): what this host holds never reaches one.
  keepFromChildren([
    ...redisUrlSecrets(options.redisUrl),
    ...redisUrlSecrets(config.redisUrl),
    config.secret,
    config.signingKeyFile,
    config.boardPassword,
    config.webhookSecret,
    config.apiToken,
    ...Object.values(config.forgeTokens),
  ]);
  // Before anything else: a host asked to sandbox its CLIs must not start without a sandbox.
  if (options.sandbox) {
    await assertSandboxWorks(options.sandbox);
    logger.info(`sandbox: agent CLIs run under ${options.sandbox.bwrap}, writable only in their checkout`);
  }
  const monitor = await fileMonitor();
  logger.info(
    monitor
      ? `file monitor: ${monitor instanceof InotifyMonitor ? watchesNote(monitor) : 'Watchman'}; warm checkouts and the start directory are watched, not walked`
      : `file monitor: none; warm checkouts ${scanNote(scanSetting())} (FLOTILLA_MONITOR=inotify or watchman to watch them)`,
  );
  const adaptersDir = options.adaptersDir ?? config.adaptersDir;
  const { adapters } = await loadAdaptersOrThrow(adaptersDir);
  const detected = await detectClis(adapters, { logger: { info: (msg: string) => logger.info(msg) } });
  const clis: HostCli[] = detected
    .filter((d) => d.available)
    .map((d) => ({ adapter: d.adapter, ...(d.version ? { version: d.version } : {}) }));
  if (!config.secret && options.warnUnsigned !== false) {
    logger.warn(
      'FLOTILLA_SECRET is not set: jobs are not signed, and anyone who can write to this Redis can make this host run commands',
    );
  }
  const facts = await detectFacts(options.facts);
  const signingKey = config.signingKeyFile ? await readSigningKey(config.signingKeyFile) : undefined;
  const internalCli = options.internalCli ?? clis.find((c) => c.adapter.config.internal)?.adapter.cli;
  const slots = options.slots ?? DEFAULT_SLOTS;

  const redis = createRedis({ url: options.redisUrl, role: 'worker' });
  redis.on('error', (error: Error) => logger.debug({ err: error.message }, 'redis connection error'));
  // One live host per id and cluster on this machine; then, before any job, the CLIs a killed
  // host of this id and cluster left running (agent/cli-groups.ts). Another cluster's are not ours.
  const cluster = await clusterId(redis, config.prefix);
  const claim = await claimHostId(config.home, hostId, cluster).catch((error: Error) => {
    redis.disconnect();
    throw error;
  });
  const cliGroups = createCliGroups(cliGroupsDir(config.home, hostId), cluster);
  const leftovers = await cliGroups.killOrphans();
  if (leftovers.length > 0) {
    logger.warn(
      { pgids: leftovers },
      `killed ${leftovers.length} CLI process group(s) left running by a previous run of host ${hostId}`,
    );
  }
  const store = new MissionStore(redis, config.prefix, config.secret);
  const telemetry = createTelemetry(config.otel);
  const queues = new QueueSet(redis, config.prefix, telemetry);
  const disabled = new Map<string, string>();
  const coolingUntil = new Map<string, number>();
  const startedAt = new Date().toISOString();
  // The slots are made before the pools that plan from them; each take and give-back replans.
  let replan = () => {};
  const hostSlots = new Semaphore(slots, () => replan());
  const cliSlots = new Map(
    clis.map((c) => [c.adapter.cli, new Semaphore(c.adapter.config.max_concurrent ?? slots, () => replan())]),
  );
  const pools = createPools({
    redis,
    config,
    telemetry,
    logger,
    capacity: () => ({ hostSlots, cliSlots, clisFor: clisServing }),
  });
  const { workers, active, serve, hold } = pools;
  replan = pools.replan;

  const info = (): HostInfo => ({
    hostId,
    hostname: hostname(),
    pid: process.pid,
    startedAt,
    heartbeatAt: new Date().toISOString(),
    slots,
    running: active.size,
    internal: internalCli !== undefined && !disabled.has(internalCli),
    clis: clis
      .filter((c) => !disabled.has(c.adapter.cli))
      .map((c) => ({
        cli: c.adapter.cli,
        displayName: c.adapter.displayName,
        ...(c.version ? { version: c.version } : {}),
        ...(c.adapter.vendor ? { vendor: c.adapter.vendor } : {}),
        capabilities: [...c.adapter.config.capabilities],
        order: c.adapter.order,
      })),
    disabled: [...disabled].map(([cli, reason]) => ({ cli, reason })),
    coolingDown: [...coolingUntil]
      .filter(([, until]) => until > Date.now())
      .map(([cli, until]) => ({ cli, until: new Date(until).toISOString() })),
    facts,
  });
  const heartbeatMs = options.heartbeatMs ?? HEARTBEAT_MS;
  const publish = () => publishHost(redis, config.prefix, info(), heartbeatMs * 3);

  const checkoutRoot = await claimCheckoutRoot(config.home);
  if (checkoutRoot.orphansKilled.length > 0) {
    logger.warn(
      { pids: checkoutRoot.orphansKilled },
      `killed ${checkoutRoot.orphansKilled.length} process(es) a dead host left running in ${checkoutRoot.dir}`,
    );
  }
  if (options.pruneCaches) {
    const removed = await pruneHostCaches({
      home: config.home,
      ownRoot: checkoutRoot.dir,
      keep: slots,
      maxAgeMs: config.cacheMaxAgeMs,
    }).catch((error: Error) => {
      logger.warn({ err: error.message }, 'pruning host caches failed');
      return [];
    });
    if (removed.length > 0) logger.info({ removed }, `pruned ${removed.length} host cache folder(s)`);
  }

  const ctx: HostContext = {
    hostId,
    config,
    secret: config.secret,
    logger,
    store,
    queues,
    clis,
    internalCli,
    slots: hostSlots,
    cliSlots,
    cacheDir: join(config.home, 'repos'),
    cliGroups,
    workRoot: join(config.home, 'work', hostId),
    checkoutRoot: checkoutRoot.dir,
    disabled,
    coolingUntil,
    onAdvertisedChange: async () => {
      await publish();
      await reconcileDispatchWorkers();
    },
    missions: new Map(),
    holdFetching: hold,
    ...(options.sandbox ? { sandbox: withHidden(options.sandbox, config.home) } : {}),
    ...(signingKey ? { signingKey } : {}),
    platform: `${facts.os}/${facts.arch}`,
  };

  const servedCapabilities = () => {
    const usable = clis.filter((c) => !disabled.has(c.adapter.cli));
    const caps = new Set(usable.flatMap((c) => c.adapter.config.capabilities));
    return [...caps];
  };
  /** The CLIs that can run a dispatch queue's jobs here: not disabled, offering its capability. */
  function clisServing(requirementVariant: string): string[] {
    const queue = splitRequirementQueue(requirementVariant).base;
    if (queue === QUEUES.internal) return internalCli && !disabled.has(internalCli) ? [internalCli] : [];
    return clis
      .filter((c) => !disabled.has(c.adapter.cli))
      .filter((c) => c.adapter.config.capabilities.some((cap) => dispatchQueue(cap) === queue))
      .map((c) => c.adapter.cli);
  }
  const runProcessor: Processor = (job, token, signal) => runAttempt(ctx, job, token, signal);
  // Dispatch queues are fetched on demand: a job only when a slot of a CLI that can run it is free.
  // A requirement set this host satisfies adds its variants of every queue the host would serve.
  let satisfied: string[] = [];
  async function reconcileDispatchWorkers() {
    const plain = servedCapabilities().map(dispatchQueue);
    if (internalCli && !disabled.has(internalCli)) plain.push(QUEUES.internal);
    const wanted = new Set([
      ...plain,
      ...satisfied.flatMap((key) => plain.map((q) => requirementQueue(q, key))),
    ]);
    for (const queue of wanted) serve(queue, runProcessor, { onDemand: true });
    for (const key of satisfied) serveStages(key);
    for (const queue of [...workers.keys()]) {
      if (queue.startsWith('dispatch.') && !wanted.has(queue)) {
        pools.unserve(queue);
        logger.info(`no longer serving ${queue}`);
      }
    }
    pools.replan();
  }

  /** The verify and critic queues of a requirement key (none: the plain ones every host serves). */
  function serveStages(key?: string) {
    serve(requirementQueue(QUEUES.verify, key), (job, _token, signal) => verifyAttempt(ctx, job, signal), {
      concurrency: slots,
    });
    // Most critic jobs pass straight through (no critic, or verify failed), so the queue is not
    // planned from the slots; a review that finds none free is handed to a host with one (critic/).
    serve(
      requirementQueue(QUEUES.critic, key),
      (job, token, signal) => reviewAttempt(ctx, job, token, signal),
      {
        concurrency: slots,
        takesSlots: true,
      },
    );
  }
  /** Re-reads the cluster's requirement sets and serves the queues of each one this host satisfies. */
  async function reconcileRequirements() {
    const sets = await store.requirementSets();
    const now = [...sets].filter(([, requires]) => unmet(facts, requires).length === 0).map(([key]) => key);
    const added = now.filter((key) => !satisfied.includes(key));
    satisfied = [...new Set([...satisfied, ...now])];
    if (added.length > 0) {
      logger.info(
        { keys: added },
        `serving the queues of ${added.length} requirement set(s) this host satisfies`,
      );
      await reconcileDispatchWorkers();
    }
  }

  serveStages();
  await reconcileRequirements();
  await reconcileDispatchWorkers();
  serve(
    QUEUES.mission,
    (job, token) => {
      if (job.name === JOBS.finalize) return finalizeMission(ctx, job);
      if (job.name === JOBS.deliver) return deliverMission(ctx, job);
      if (job.name === JOBS.approval || job.name === JOBS.approvalTimeout)
        return verdictOnHeld(ctx, job, token);
      return gateAttempt(ctx, job, token);
    },
    { concurrency: Math.max(2, slots) },
  );
  // Webhook deliveries (`notify:`): any host, a few at a time; they only wait on the network.
  serve(QUEUES.notify, (job) => deliverNotification(ctx, job), { concurrency: 4 });
  // A gate job out of tries settles its task as failed, so its mission goes on (gate/job-failed.ts).
  workers.get(QUEUES.mission)?.on('failed', (job) => {
    if (job?.name === JOBS.deliver && job.attemptsMade >= (job.opts.attempts ?? 1)) {
      deliverJobFailed(ctx, job).catch((error: Error) =>
        logger.warn({ jobId: job.id, err: error.message }, 'recording a failed delivery job failed'),
      );
      return;
    }
    if (job?.name !== JOBS.gate) return;
    gateJobFailed(ctx, job).catch((error: Error) =>
      logger.warn(
        { jobId: job.id, err: error.message },
        'settling a failed gate job failed; the sweep retries',
      ),
    );
  });
  await publish();
  const heartbeat = setInterval(() => {
    publish().catch((error: Error) => logger.debug({ err: error.message }, 'heartbeat failed'));
  }, heartbeatMs);
  heartbeat.unref();
  const sweepMs = options.sweepMs ?? SWEEP_MS;
  const sweeper = setInterval(() => {
    // A control message may be missed (a reconnect); the sweep's interval catches up.
    reconcileRequirements().catch((error: Error) =>
      logger.debug({ err: error.message }, 'reading requirement sets failed'),
    );
    sweepMissions(ctx, sweepMs).catch((error: Error) => logger.debug({ err: error.message }, 'sweep failed'));
    forgetEndedMissions(ctx).catch((error: Error) => logger.debug({ err: error.message }, 'forget failed'));
  }, sweepMs);
  sweeper.unref();
  const ager = setInterval(() => {
    const dispatch = [...workers.keys()].filter((queue) => queue.startsWith('dispatch.'));
    agePriorities({ redis, queues, hostId }, dispatch, { intervalMs: AGE_CHECK_MS }).catch((error: Error) =>
      logger.debug({ err: error.message }, 'priority aging failed'),
    );
  }, AGE_CHECK_MS);
  ager.unref();

  const subscriber = await listenForControl(redis, config.prefix, {
    missions: ctx.missions,
    active,
    onRequirements: () =>
      void reconcileRequirements().catch((error: Error) =>
        logger.debug({ err: error.message }, 'reading requirement sets failed'),
      ),
  });
  logger.info(
    { capabilities: servedCapabilities(), slots, internal: internalCli ?? null },
    `host ${hostId} serving ${clis.length} CLI(s): ${clis.map((c) => c.adapter.displayName).join(', ') || 'none'}`,
  );

  const close = createClose({
    workers: () => [...workers.values()],
    activeJobs: () => [...active.keys()],
    timers: [heartbeat, sweeper, ager],
    graceMs: options.graceMs ?? DEFAULT_GRACE_MS,
    logger,
    killLeftovers: () => cliGroups.killRunning(),
    redis,
    subscriber,
    queues,
    // The checkout slot goes first: its checkouts are free for the next host on this machine.
    unregister: async () => {
      await checkoutRoot.release();
      return removeHost(redis, config.prefix, hostId);
    },
  });

  return {
    hostId,
    clis,
    capabilities: servedCapabilities(),
    cachedMissions: () => [...ctx.missions.keys()],
    // The claim on the id goes last, whatever Redis did: the id is free once this host is gone.
    close: (closeOptions) => close(closeOptions).finally(() => claim.release()),
  };
}

/** The sandbox with what the host keeps of the cluster hidden from agents: the machine's Redis folder. */
function withHidden(sandbox: Sandbox, home: string): Sandbox {
  const redisDir = join(home, 'redis');
  return existsSync(redisDir) ? { ...sandbox, hidden: [...(sandbox.hidden ?? []), redisDir] } : sandbox;
}
