import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { parseByteSize } from './byte-size.js';
import { DEFAULT_PREFIX } from './contracts.js';
import { FlotillaError } from './errors.js';

/** The package root: where the shipped `adapters/` folder lives. */
export const PACKAGE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * Recovery after a host dies (docs/RECOVERY.md): its jobs run again elsewhere between
 * lock − renew and lock + stalled interval after the crash, so these defaults give 7.5–12.5 s,
 * inside the 15 s flotilla promises. The price: each host renews its running jobs' locks every
 * 2.5 s and runs a stalled check per queue every 2.5 s (one short script each), and a host
 * whose event loop is blocked for more than lock − renew (7.5 s) loses its jobs to another host.
 */
const DEFAULT_LOCK_MS = 10_000;
const LOCK_FRACTION = 4;

/**
 * Agent CLIs a host runs at once when `--slots` is not given. Each is a process of its own that
 * mostly waits on a model; four keeps a 2-core host responsive while its checkouts, criteria and
 * reviews run beside them, and an adapter's own max_concurrent lowers it per CLI.
 */
export const DEFAULT_SLOTS = 4;

/**
 * A forge that is down is usually back within minutes: with five tries, 10 s doubling waits 10, 20,
 * 40 and 80 s, two and a half minutes in all, before the delivery is reported failed for good.
 */
const DEFAULT_DELIVER_BACKOFF_MS = 10_000;

const CLUSTER_URL = /^redis\+cluster:\/\/[^,\s/]+(,[^,\s/]+)*\/?$/;

const envSchema = z.object({
  /**
   * Redis to use; unset, every command uses the home's own redis-server (shared/home-redis.ts),
   * started when down. `unix:///path` is a Redis on a unix socket. `redis+cluster://h1:p1,h2:p2`
   * names a Redis Cluster by its seed nodes, which the WHATWG URL parser rejects (a comma-separated
   * host list has no single port), so that form is checked by its own pattern.
   */
  REDIS_URL: z
    .string()
    .refine(
      (url) => CLUSTER_URL.test(url) || URL.canParse(url),
      'expected redis://host:port, unix:///path/to/redis.sock or redis+cluster://host:port,host:port',
    )
    .optional(),
  /** Queue and key prefix; the braces make it a Redis Cluster hash tag so every key of flotilla shares a slot. */
  FLOTILLA_PREFIX: z.string().min(1).default(DEFAULT_PREFIX),
  FLOTILLA_ADAPTERS: z.string().optional(),
  FLOTILLA_AGENTS: z.string().optional(),
  /** HMAC key for job payloads and mission specs; hosts refuse unsigned or altered ones when set. */
  FLOTILLA_SECRET: z.string().min(1).optional(),
  /** An Ed25519 private key (PEM file) that signs mission receipts on the host that finalizes. */
  FLOTILLA_SIGNING_KEY: z.string().min(1).optional(),
  FLOTILLA_BOARD_USER: z.string().optional(),
  FLOTILLA_BOARD_PASSWORD: z.string().optional(),
  /** Signs webhook bodies (`notify:`, X-Flotilla-Signature-256) on the hosts that deliver them. */
  FLOTILLA_WEBHOOK_SECRET: z.string().min(1).optional(),
  /**
   * The bearer token of the board's HTTP API (/api/v1). Unset, the API answers only when the board
   * itself needs no credentials (loopback, no board user); it is never logged nor seen by a child.
   */
  FLOTILLA_API_TOKEN: z.string().optional(),
  /** Host caches (repo clones, warm checkouts) and, without REDIS_URL, the machine's Redis (`redis/`). */
  FLOTILLA_HOME: z.string().optional(),
  /**
   * Warm checkouts' file-system monitor (shared/file-monitor.ts): `auto` (the default on Linux:
   * the host's own inotify watches of trees of 10,000 entries or more), `inotify` (every tree),
   * `watchman`, or `off`. Unset, a FLOTILLA_WATCHMAN that asks for Watchman gets it.
   */
  FLOTILLA_MONITOR: z.enum(['auto', 'inotify', 'watchman', 'off']).optional(),
  /**
   * Watchman for warm checkouts (shared/watchman.ts), opt-in: `on` (the `watchman` on PATH) or a
   * Watchman socket path; unset or `off`, checkouts are scanned or walked (FLOTILLA_MONITOR first).
   */
  FLOTILLA_WATCHMAN: z.string().optional(),
  /**
   * Without a monitor, how a warm checkout finds what an attempt left that git does not track
   * (workspace/dir-record.ts): `auto` scans its changed directories on trees of 50,000 files or
   * more and lets git walk smaller ones, `on` always scans, `off` always walks.
   */
  FLOTILLA_CHECKOUT_SCAN: z.enum(['auto', 'on', 'off']).default('auto'),
  /**
   * `cli`: git commands only, every in-process replacement of git off (workspace/git-mode.ts);
   * `auto` (the default): in-process where each replacement's own checks allow.
   */
  FLOTILLA_GIT: z.enum(['auto', 'cli']).default('auto'),
  /** Host caches (repo clones, warm checkouts) unused this many days are pruned when a worker starts. */
  FLOTILLA_CACHE_DAYS: z.coerce.number().positive().default(14),
  /** BullMQ lock duration for every job; a crashed host's job moves on after about this long. */
  FLOTILLA_LOCK_MS: z.coerce.number().int().positive().default(DEFAULT_LOCK_MS),
  /** How often a host renews the locks of its running jobs; default a quarter of the lock. */
  FLOTILLA_LOCK_RENEW_MS: z.coerce.number().int().positive().optional(),
  /** How often the cluster checks for jobs whose lock expired; default a quarter of the lock. */
  FLOTILLA_STALLED_INTERVAL_MS: z.coerce.number().int().positive().optional(),
  /**
   * A cap on what one agent CLI run may print, stdout and stderr together (`500MB`, `2GB`, or
   * bytes; binary units). Past it flotilla kills the CLI's process group and the attempt fails
   * with "printed more than 500 MB; stopped by flotilla". Unset: no cap, as output is streamed
   * and only its tail kept.
   */
  FLOTILLA_MAX_OUTPUT: z
    .string()
    .optional()
    .refine((value) => value === undefined || parseByteSize(value) !== undefined, {
      message: 'expected a size such as 500MB, 2GB or a number of bytes',
    })
    .transform((value) => (value === undefined ? undefined : parseByteSize(value))),
  /** OpenTelemetry traces through bullmq-otel: `1`/`true` turns them on. */
  FLOTILLA_OTEL: z
    .string()
    .optional()
    .transform((value) => value === '1' || value?.toLowerCase() === 'true'),
  /**
   * The token delivery opens pull requests with (`deliver.pull_request`), on any forge; without it,
   * the forge's own variable. Each is kept from every agent CLI and criterion (agent/private-env.ts).
   */
  FLOTILLA_FORGE_TOKEN: z.string().min(1).optional(),
  GITHUB_TOKEN: z.string().min(1).optional(),
  GITLAB_TOKEN: z.string().min(1).optional(),
  GITEA_TOKEN: z.string().min(1).optional(),
  FORGEJO_TOKEN: z.string().min(1).optional(),
  /** The first wait between a failed delivery's automatic tries; it doubles each time. */
  FLOTILLA_DELIVER_BACKOFF_MS: z.coerce.number().int().positive().default(DEFAULT_DELIVER_BACKOFF_MS),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

/** The tokens delivery may use, by forge; `any` (FLOTILLA_FORGE_TOKEN) wins over the forge's own. */
export interface ForgeTokens {
  readonly any?: string;
  readonly github?: string;
  readonly gitlab?: string;
  readonly gitea?: string;
}

export interface Config {
  readonly redisUrl?: string;
  readonly prefix: string;
  readonly adaptersDir: string;
  readonly agentsDir?: string;
  readonly secret?: string;
  /** Path of the receipt signing key (FLOTILLA_SIGNING_KEY); read by hosts at start. */
  readonly signingKeyFile?: string;
  readonly boardUser?: string;
  readonly boardPassword?: string;
  readonly webhookSecret?: string;
  /** FLOTILLA_API_TOKEN: `Authorization: Bearer …` for the board's API; '' counts as unset. */
  readonly apiToken?: string;
  readonly home: string;
  readonly cacheMaxAgeMs: number;
  readonly lockMs: number;
  readonly lockRenewMs: number;
  readonly stalledIntervalMs: number;
  readonly otel: boolean;
  /** FLOTILLA_MAX_OUTPUT in bytes; undefined when unset (no cap). */
  readonly maxOutputBytes?: number;
  readonly forgeTokens: ForgeTokens;
  readonly deliverBackoffMs: number;
  readonly logLevel: z.output<typeof envSchema>['LOG_LEVEL'];
}

/** Reads the environment once, before any connection opens; the result is frozen. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
    throw new FlotillaError('usage', `invalid environment: ${lines.join('; ')}`);
  }
  const e = parsed.data;
  const lockRenewMs = e.FLOTILLA_LOCK_RENEW_MS ?? Math.round(e.FLOTILLA_LOCK_MS / LOCK_FRACTION);
  if (lockRenewMs >= e.FLOTILLA_LOCK_MS) {
    throw new FlotillaError(
      'usage',
      `invalid environment: FLOTILLA_LOCK_RENEW_MS (${lockRenewMs}) must be less than FLOTILLA_LOCK_MS (${e.FLOTILLA_LOCK_MS}), or every lock expires before it is renewed`,
    );
  }
  return Object.freeze({
    redisUrl: e.REDIS_URL,
    prefix: e.FLOTILLA_PREFIX,
    adaptersDir: resolve(e.FLOTILLA_ADAPTERS ?? join(PACKAGE_ROOT, 'adapters')),
    agentsDir: e.FLOTILLA_AGENTS,
    secret: e.FLOTILLA_SECRET,
    ...(e.FLOTILLA_SIGNING_KEY ? { signingKeyFile: resolve(e.FLOTILLA_SIGNING_KEY) } : {}),
    boardUser: e.FLOTILLA_BOARD_USER,
    boardPassword: e.FLOTILLA_BOARD_PASSWORD,
    webhookSecret: e.FLOTILLA_WEBHOOK_SECRET,
    apiToken: e.FLOTILLA_API_TOKEN || undefined,
    home: resolve(e.FLOTILLA_HOME ?? join(homedir(), '.cache', 'flotilla')),
    cacheMaxAgeMs: e.FLOTILLA_CACHE_DAYS * 86_400_000,
    lockMs: e.FLOTILLA_LOCK_MS,
    lockRenewMs,
    stalledIntervalMs: e.FLOTILLA_STALLED_INTERVAL_MS ?? Math.round(e.FLOTILLA_LOCK_MS / LOCK_FRACTION),
    otel: e.FLOTILLA_OTEL,
    ...(e.FLOTILLA_MAX_OUTPUT !== undefined ? { maxOutputBytes: e.FLOTILLA_MAX_OUTPUT } : {}),
    forgeTokens: Object.freeze({
      ...(e.FLOTILLA_FORGE_TOKEN ? { any: e.FLOTILLA_FORGE_TOKEN } : {}),
      ...(e.GITHUB_TOKEN ? { github: e.GITHUB_TOKEN } : {}),
      ...(e.GITLAB_TOKEN ? { gitlab: e.GITLAB_TOKEN } : {}),
      ...((e.GITEA_TOKEN ?? e.FORGEJO_TOKEN) ? { gitea: e.GITEA_TOKEN ?? e.FORGEJO_TOKEN } : {}),
    }),
    deliverBackoffMs: e.FLOTILLA_DELIVER_BACKOFF_MS,
    logLevel: e.LOG_LEVEL,
  });
}
