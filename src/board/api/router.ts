import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { alreadyDecided } from '../../producer/approve.js';
import { checkMissionObject, checkMissionText, type LoadedMission } from '../../producer/load.js';
import { isFlotillaError, type Problem } from '../../shared/errors.js';
import { isCrossSiteWrite } from '../auth.js';
import { apiAccess } from './access.js';
import { API_ERROR_CODES, ApiError, apiErrorHandler } from './errors.js';
import { streamEvents } from './event-stream.js';
import { openApiDocument } from './openapi.js';
import type { ApiOptions } from './options.js';
import { parseJsonBody, readBody } from './read-body.js';
import { answerRequestSchema, approveRequestSchema } from './schemas.js';

/**
 * The board's HTTP API, mounted at /api/v1: what `flotilla submit`, `status`, `status --watch`,
 * `cancel` and `answer` do, for producers that are not Node. It submits through the producer's
 * client, so a mission is validated by the same loader and signed with the same secret as the
 * CLI's. openapi.ts documents these routes; a test holds the two to each other.
 */
export type { ApiOptions } from './options.js';

const MISSION_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const DEFAULT_LIST = 50;
const MAX_LIST = 500;

function missionIdOf(req: Request): string {
  const id = String(req.params.id);
  if (!MISSION_ID.test(id)) throw new ApiError(404, 'mission/not-found', `no mission '${id}'`);
  return id;
}

function invalid(problems: readonly Problem[], what = 'mission'): ApiError {
  const count = problems.length;
  return new ApiError(
    422,
    'mission/invalid',
    `invalid ${what} (${count} ${count === 1 ? 'problem' : 'problems'})`,
    problems,
  );
}

function crossSite(req: Request, _res: Response, next: NextFunction): void {
  if (isCrossSiteWrite(req)) {
    next(new ApiError(403, API_ERROR_CODES.crossSite, 'cross-site request refused'));
    return;
  }
  next();
}

export function createApiRouter(options: ApiOptions): Router {
  const { client } = options;
  const router = express.Router();
  const loadOptions = {
    dir: null,
    ...(options.agentsDir ? { agentsDir: options.agentsDir } : {}),
    ...(options.adapterCapabilities ? { adapterCapabilities: options.adapterCapabilities } : {}),
  };

  router.use((_req, res, next) => {
    res.setHeader('Cache-Control', 'no-store');
    next();
  });

  // The document tells how to authenticate, so it is readable without.
  router.get('/openapi.json', (_req, res) => {
    res.json(openApiDocument());
  });

  router.use(apiAccess(options.access), crossSite);

  router.post('/missions', async (req, res) => {
    const body = await readBody(req, res, ['json', 'yaml']);
    const checked: LoadedMission =
      body.kind === 'json'
        ? await checkMissionObject(parseJsonBody(body.text), loadOptions)
        : await checkMissionText(body.text, loadOptions);
    if (!checked.mission) throw invalid(checked.problems);
    // Preparing the workspace touches git before the first write to Redis: ask Redis first.
    await client.redis.ping();
    const submitted = await client.submitSpec(checked.mission);
    res
      .status(201)
      .location(`${req.baseUrl}/missions/${encodeURIComponent(submitted.id)}`)
      .json({ ...submitted, warnings: checked.warnings.map(({ file: _file, ...rest }) => rest) });
  });

  router.get('/missions', async (req, res) => {
    const asked = Number(req.query.limit ?? DEFAULT_LIST);
    if (!Number.isInteger(asked) || asked < 1 || asked > MAX_LIST) {
      throw new ApiError(
        400,
        API_ERROR_CODES.badRequest,
        `limit must be a whole number from 1 to ${MAX_LIST}`,
      );
    }
    const ids = await client.store.listMissions(asked);
    // A mission whose spec went away (or fails its signature) is left out, as `flotilla status` does.
    const all = await Promise.all(ids.map((id) => client.status(id).catch(() => null)));
    const missions = all
      .filter((status) => status !== null)
      .map(({ tasks, ...rest }) => ({ ...rest, tasks: tasks.length }));
    res.json({ missions });
  });

  router.get('/missions/:id', async (req, res) => {
    res.json(await client.status(missionIdOf(req)));
  });

  router.get('/missions/:id/events', async (req, res) => {
    await streamEvents(req, res, client, missionIdOf(req), { pollMs: options.pollMs });
  });

  router.post('/missions/:id/cancel', async (req, res) => {
    const id = missionIdOf(req);
    const current = await client.status(id);
    if (current.status !== 'running') {
      throw new ApiError(
        409,
        API_ERROR_CODES.missionFinished,
        `mission ${id} is already ${current.status}; nothing to cancel`,
      );
    }
    const { cancelled, running } = await client.cancel(id);
    res.json({ cancelled, running });
  });

  router.post('/missions/:id/answer', async (req, res) => {
    const id = missionIdOf(req);
    const body = await readBody(req, res, ['json']);
    const parsed = answerRequestSchema.safeParse(parseJsonBody(body.text));
    if (!parsed.success) {
      const problems = parsed.error.issues.map((issue) => ({
        file: '',
        path: issue.path.join('.'),
        message: issue.message,
      }));
      throw invalid(problems, 'answer');
    }
    const { task, text } = parsed.data;
    const { spec } = await client.store.getMission(id);
    if (!spec.tasks.some((t) => t.id === task)) {
      throw new ApiError(404, API_ERROR_CODES.taskNotFound, `mission ${id} has no task '${task}'`);
    }
    try {
      const { attempt } = await client.answer(id, task, text);
      res.json({ task, attempt });
    } catch (error) {
      // The client says `usage` for a task that is not (or no longer) waiting for an answer.
      if (isFlotillaError(error, 'usage'))
        throw new ApiError(409, API_ERROR_CODES.taskNotWaiting, error.message);
      throw error;
    }
  });

  router.post('/missions/:id/approve', async (req, res) => {
    const id = missionIdOf(req);
    const body = await readBody(req, res, ['json']);
    const parsed = approveRequestSchema.safeParse(parseJsonBody(body.text));
    if (!parsed.success) {
      const problems = parsed.error.issues.map((issue) => ({
        file: '',
        path: issue.path.join('.'),
        message: issue.message,
      }));
      throw invalid(problems, 'verdict');
    }
    const { task, reject, by } = parsed.data;
    const { spec } = await client.store.getMission(id);
    if (!spec.tasks.some((t) => t.id === task)) {
      throw new ApiError(404, API_ERROR_CODES.taskNotFound, `mission ${id} has no task '${task}'`);
    }
    try {
      const sent = await client.approve(id, task, {
        ...(reject !== undefined ? { reject } : {}),
        by: by ?? 'the HTTP API',
      });
      if (!sent.counted) {
        throw new ApiError(409, API_ERROR_CODES.taskNotWaiting, alreadyDecided(task, sent));
      }
      res.json({ task, attempt: sent.attempt, verdict: sent.sent.verdict, by: sent.sent.by ?? '' });
    } catch (error) {
      // The client says `usage` for a task that is not (or no longer) waiting for approval.
      if (isFlotillaError(error, 'usage'))
        throw new ApiError(409, API_ERROR_CODES.taskNotWaiting, error.message);
      throw error;
    }
  });

  router.use((req, _res, next) => {
    next(new ApiError(404, API_ERROR_CODES.notFound, `no API route ${req.method} ${req.baseUrl}${req.path}`));
  });
  router.use(apiErrorHandler(options.onError));
  return router;
}
