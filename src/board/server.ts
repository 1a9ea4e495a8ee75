import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type NextFunction, type Request, type Response } from 'express';
import { alreadyDecided, defaultPerson, sendVerdict } from '../producer/approve.js';
import { FlotillaError, isFlotillaError } from '../shared/errors.js';
import { QueueSet } from '../shared/queue/queues.js';
import type { RedisClient } from '../shared/redis.js';
import { MissionStore } from '../shared/store/mission-store.js';
import { listHosts } from '../shared/store/registry.js';
import { decideApiAccess } from './api/access.js';
import { API_BASE } from './api/openapi.js';
import type { ApiAccess, ApiOptions } from './api/options.js';
import { createApiRouter } from './api/router.js';
import { basicAuth, decideAuth, sameOriginWrites } from './auth.js';
import { BoardQueues } from './board-queues.js';
import { createMetricsCollector } from './collect-metrics.js';
import { renderHostsPage } from './hosts-page.js';
import type { SafeHtml } from './html.js';
import { PROMETHEUS_CONTENT_TYPE } from './metrics-format.js';
import { renderMissionList } from './mission-list-page.js';
import { FULL_GRAPH_LIMIT, renderMissionPage } from './mission-page.js';
import { MISSION_SCRIPT } from './mission-script.js';
import { renderOverview } from './overview-view.js';
import { renderPage } from './page.js';
import { MissionViewReader } from './read-mission-view.js';
import { readMissionRows } from './read-missions.js';
import { clampLevels, renderTaskDetail } from './task-detail.js';
import { criticalIndices, statusCodes } from './task-view-model.js';

export interface BoardServerOptions {
  /** The board's Redis connection; the caller owns it and closes it after `close()`. */
  readonly redis: RedisClient;
  readonly prefix: string;
  readonly user?: string;
  readonly password?: string;
  readonly host: string;
  /** 0 picks a free port; `url` tells which. */
  readonly port: number;
  /** Bull Board without retry, clean, pause, add or remove. Default true. */
  readonly readOnly?: boolean;
  /** Missions the list page and the metrics cover, newest first. Default 50. */
  readonly missionWindow?: number;
  /**
   * Lets a person approve or reject a task held by `approve: human` from its view (behind the
   * board's auth); the verdict's job is signed with `secret` as every job is. Absent: the view
   * names the command instead.
   */
  readonly verdicts?: { readonly secret: string | undefined };
  /** Where request errors are reported (the page shows only a short message). */
  readonly onError?: (error: unknown) => void;
  /**
   * The HTTP API at /api/v1 (api/router.ts), given the producer's client it submits with and the
   * bearer token (FLOTILLA_API_TOKEN). Without this option the board has no API.
   */
  readonly api?: Omit<ApiOptions, 'access' | 'onError'> & { readonly token?: string };
}

export interface BoardServer {
  readonly url: string;
  readonly authRequired: boolean;
  /** Who may use /api/v1; undefined when the board has no API. */
  readonly api?: ApiAccess;
  readonly queueNames: () => string[];
  close(): Promise<void>;
}

export const QUEUES_BASE = '/queues';
const MISSION_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

function contentSecurityPolicy(nonce: string): string {
  return [
    "default-src 'none'",
    // Inline style attributes carry the status colours; scripts need the per-response nonce.
    "style-src 'unsafe-inline'",
    `script-src 'nonce-${nonce}'`,
    "img-src 'self' data:",
    // The mission page fetches its live updates and a task's detail from the board itself.
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

function sendPage(
  res: Response,
  title: string,
  body: SafeHtml,
  options: { autoRefreshSec?: number; script?: string } = {},
): void {
  const nonce = randomBytes(16).toString('base64');
  res.setHeader('Content-Security-Policy', contentSecurityPolicy(nonce));
  res.setHeader('Cache-Control', 'no-store');
  res.type('html').send(renderPage({ title, body, nonce, ...options }));
}

function missionIdOf(raw: string): string {
  if (!MISSION_ID.test(raw)) throw new FlotillaError('mission/not-found', `no mission '${raw}'`);
  return raw;
}

function urlFor(address: AddressInfo): string {
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `http://${host}:${address.port}`;
}

function listen(server: Server, host: string, port: number): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => {
      if (error.code === 'EADDRINUSE') {
        reject(new FlotillaError('usage', `board: ${host}:${port} is already in use; choose another --port`));
      } else if (error.code === 'EADDRNOTAVAIL' || error.code === 'ENOTFOUND') {
        reject(new FlotillaError('usage', `board: cannot listen on ${host} (${error.code}); check --host`));
      } else reject(error);
    };
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve(server.address() as AddressInfo);
    });
  });
}

/**
 * The board: flotilla's mission view (list, mission page with the task graph and every attempt,
 * status JSON, hosts), Prometheus metrics, and Bull Board at /queues for the queues themselves.
 * Refuses (FlotillaError 'usage') to listen beyond loopback without credentials.
 */
export async function createBoardServer(options: BoardServerOptions): Promise<BoardServer> {
  const credentials = decideAuth(options);
  const readOnly = options.readOnly ?? true;
  const window = options.missionWindow ?? 50;
  const store = new MissionStore(options.redis, options.prefix);
  const reader = new MissionViewReader(store);
  const queues = new BoardQueues(options.redis, options.prefix, readOnly, QUEUES_BASE);
  const collectMetrics = createMetricsCollector({
    store,
    redis: options.redis,
    prefix: options.prefix,
    queues,
    window,
  });

  const verdictQueues = options.verdicts ? new QueueSet(options.redis, options.prefix) : null;
  const app = express();
  app.disable('x-powered-by');
  app.use((_req, res, next) => {
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Referrer-Policy', 'no-referrer');
    res.setHeader('X-Frame-Options', 'DENY');
    next();
  });
  // Before the board's Basic auth: the API has its own (a bearer token), and JSON errors.
  const api = options.api
    ? decideApiAccess({
        host: options.host,
        token: options.api.token,
        boardCredentials: credentials !== null,
      })
    : undefined;
  if (options.api && api) {
    const { token: _token, ...apiOptions } = options.api;
    app.use(API_BASE, createApiRouter({ ...apiOptions, access: api, onError: options.onError }));
  }
  if (credentials) app.use(basicAuth(credentials));
  app.use(sameOriginWrites);

  app.use(
    QUEUES_BASE,
    (_req, _res, next) => {
      queues.refresh().then(() => next(), next);
    },
    queues.serverAdapter.getRouter(),
  );

  app.get('/', async (req, res) => {
    const limit = Math.min(500, Math.max(1, Number(req.query.limit) || window));
    const rows = await readMissionRows(store, limit);
    sendPage(res, 'Missions', renderMissionList(rows, limit), {
      autoRefreshSec: rows.some((r) => r.status === 'running') ? 10 : undefined,
    });
  });

  app.get('/missions/:id', async (req, res) => {
    const raw = String(req.params.id);
    const json = raw.endsWith('.json');
    const id = missionIdOf(json ? raw.slice(0, -'.json'.length) : raw);
    if (json) {
      res.setHeader('Cache-Control', 'no-store');
      res.json(await store.status(id));
      return;
    }
    const live = await reader.read(id);
    const small = live.shape.tasks.length <= FULL_GRAPH_LIMIT;
    const [summary, full] = await Promise.all([
      store.getMetaField(id, 'summary'),
      small
        ? Promise.all([store.status(id), store.getMission(id), store.getAudit(id)]).then(
            ([status, record, audit]) => ({ status, spec: record.spec, audit }),
          )
        : null,
    ]);
    const body = renderMissionPage({
      live,
      summary,
      full,
      queuesBase: QUEUES_BASE,
      verdicts: verdictQueues !== null,
    });
    sendPage(res, live.shape.goal, body, { script: MISSION_SCRIPT });
  });

  // The page's live update: the overview as HTML, and the task statuses once the event stream moved.
  app.get('/missions/:id/live.json', async (req, res) => {
    const id = missionIdOf(String(req.params.id));
    const live = await reader.read(id);
    const since = typeof req.query.since === 'string' ? req.query.since : '';
    res.setHeader('Cache-Control', 'no-store');
    res.json({
      event: live.eventId,
      running: live.status === 'running',
      overview: renderOverview(live.overview, {
        id,
        status: live.status,
        finishedAt: live.finishedAt,
        queuesBase: QUEUES_BASE,
        delivery: live.delivery,
      }).value,
      ...(since === live.eventId ? {} : { s: statusCodes(live), cp: criticalIndices(live) }),
    });
  });

  // One task's detail and neighbourhood, fetched when a task is chosen.
  app.get('/missions/:id/tasks/:task', async (req, res) => {
    const id = missionIdOf(String(req.params.id));
    const taskId = String(req.params.task);
    const live = await reader.read(id);
    if (!live.shape.byId.has(taskId))
      throw new FlotillaError('mission/not-found', `mission ${id} has no task '${taskId}'`);
    const detail = renderTaskDetail({
      live,
      taskId,
      audit: await store.getTaskAudit(id, taskId),
      levels: clampLevels(req.query.levels),
      queuesBase: QUEUES_BASE,
      verdicts: verdictQueues !== null,
    });
    res.setHeader('Cache-Control', 'no-store');
    res.type('html').send(detail?.value ?? '');
  });

  // A person's verdict on a held task, posted by the task view's buttons (same origin only:
  // sameOriginWrites). Who decided is the board's user when it has one.
  if (verdictQueues) {
    app.post('/missions/:id/tasks/:task/verdict', express.json({ limit: '16kb' }), async (req, res) => {
      const id = missionIdOf(String(req.params.id));
      const body = (req.body ?? {}) as { verdict?: unknown; reason?: unknown };
      if (body.verdict !== 'approve' && body.verdict !== 'reject') {
        res.status(400).json({ error: "expected { verdict: 'approve' | 'reject', reason? }" });
        return;
      }
      const reason = typeof body.reason === 'string' ? body.reason.trim() : '';
      if (body.verdict === 'reject' && !reason) {
        res.status(400).json({ error: 'say why the work is rejected: the next attempt reads it' });
        return;
      }
      const by = `${credentials?.user ?? defaultPerson()} (board)`;
      try {
        const sent = await sendVerdict(
          { store, queues: verdictQueues, secret: options.verdicts?.secret },
          id,
          String(req.params.task),
          { by, ...(body.verdict === 'reject' ? { reject: reason } : {}) },
        );
        res.status(sent.counted ? 200 : 409).json({
          counted: sent.counted,
          message: sent.counted
            ? `attempt ${sent.attempt} ${sent.sent.verdict === 'approve' ? 'approved' : 'rejected'} by ${by}`
            : alreadyDecided(String(req.params.task), sent),
        });
      } catch (error) {
        if (isFlotillaError(error, 'usage')) {
          res.status(409).json({ counted: false, message: error.message });
          return;
        }
        throw error;
      }
    });
  }

  // A running task's live output after `after` (a stream id), for the task detail's tail.
  app.get('/missions/:id/tasks/:task/live.json', async (req, res) => {
    const id = missionIdOf(String(req.params.id));
    const attempt = Number(req.query.attempt);
    if (!Number.isInteger(attempt) || attempt < 1) {
      res.status(400).json({ error: 'expected ?attempt=N' });
      return;
    }
    const after =
      typeof req.query.after === 'string' && /^\d+-\d+$/.test(req.query.after) ? req.query.after : '0';
    const ref = { missionId: id, taskId: String(req.params.task), attempt };
    const entries = await store.readLiveOutput(ref, after, 0);
    const ended = entries.find((e) => e.end !== undefined)?.end ?? null;
    res.setHeader('Cache-Control', 'no-store');
    res.json({
      last: entries.at(-1)?.id ?? after,
      text: entries
        .map(
          (e) => (e.skipped ? `[… ${e.skipped} bytes not shown …]\n` : '') + (e.data?.toString('utf8') ?? ''),
        )
        .join(''),
      ended,
      live: ended === null && (entries.length > 0 || (await store.liveOutputExists(ref))),
    });
  });

  app.get('/hosts', async (_req, res) => {
    sendPage(res, 'Hosts', renderHostsPage(await listHosts(options.redis, options.prefix)), {
      autoRefreshSec: 10,
    });
  });

  app.get('/metrics', async (_req, res) => {
    await queues.refresh();
    res.setHeader('Cache-Control', 'no-store');
    res.type(PROMETHEUS_CONTENT_TYPE).send(await collectMetrics());
  });

  app.use((_req, res) => {
    res.status(404).type('text/plain').send('not found\n');
  });
  app.use((error: unknown, _req: Request, res: Response, _next: NextFunction) => {
    if (isFlotillaError(error, 'mission/not-found')) {
      res.status(404).type('text/plain').send(`${error.message}\n`);
      return;
    }
    options.onError?.(error);
    res
      .status(500)
      .type('text/plain')
      .send(`board error: ${error instanceof Error ? error.message : String(error)}\n`);
  });

  const server = createServer(app);
  let address: AddressInfo;
  try {
    address = await listen(server, options.host, options.port);
  } catch (error) {
    await queues.close();
    throw error;
  }

  let closing: Promise<void> | undefined;
  return {
    url: urlFor(address),
    authRequired: credentials !== null,
    ...(api ? { api } : {}),
    queueNames: () => queues.names(),
    close() {
      closing ??= (async () => {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        // Browsers keep connections open; without this, close() would wait for them to time out.
        server.closeAllConnections();
        await closed;
        await queues.close();
        await verdictQueues?.close();
      })();
      return closing;
    },
  };
}
