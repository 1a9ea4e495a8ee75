import { z } from 'zod';
import { JSON_TYPES, MAX_BODY_BYTES, YAML_TYPES } from './read-body.js';
import { apiRegistry } from './schemas.js';

/**
 * The API's OpenAPI 3.1 document. Its schemas are generated from the zod schemas the API parses
 * and answers with (schemas.ts, the mission file's own schema among them) by zod's
 * z.toJSONSchema; only the paths are written here, and a test holds them to the router's routes.
 */
export const API_BASE = '/api/v1';

const ref = (id: string) => ({ $ref: `#/components/schemas/${id}` });
const json = (id: string) => ({ 'application/json': { schema: ref(id) } });
const errorResponse = (description: string) => ({ description, content: json('Error') });
const respond = (name: string) => ({ $ref: `#/components/responses/${name}` });

const missionId = {
  name: 'id',
  in: 'path',
  required: true,
  description: 'The mission id, as submit returned it.',
  schema: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$' },
};

/** Every request may meet these. */
const common = { '401': respond('Unauthorized'), '403': respond('Refused'), '503': respond('RedisDown') };

const paths = {
  '/missions': {
    post: {
      operationId: 'submitMission',
      summary: 'Validate and submit a mission (YAML or JSON, the mission file’s fields)',
      description: `Validated by the same schema and rules as a mission file, and signed with the board's FLOTILLA_SECRET as the CLI signs it. Nothing is stored when it is invalid. The body is at most ${MAX_BODY_BYTES} bytes.`,
      requestBody: {
        required: true,
        content: Object.fromEntries(
          [...JSON_TYPES, ...YAML_TYPES].map((type) => [type, { schema: ref('Mission') }]),
        ),
      },
      responses: {
        '201': {
          description: 'Stored and enqueued; Location names its status.',
          headers: { Location: { schema: { type: 'string' } } },
          content: json('Submitted'),
        },
        '400': respond('BadRequest'),
        '413': errorResponse(`The body is larger than ${MAX_BODY_BYTES} bytes.`),
        '415': errorResponse('Not a JSON or YAML body, or not UTF-8.'),
        '422': respond('Invalid'),
        ...common,
      },
    },
    get: {
      operationId: 'listMissions',
      summary: 'The latest missions, newest first',
      parameters: [
        {
          name: 'limit',
          in: 'query',
          required: false,
          schema: { type: 'integer', minimum: 1, maximum: 500, default: 50 },
        },
      ],
      responses: { '200': { description: 'The missions.', content: json('MissionList') }, ...common },
    },
  },
  '/missions/{id}': {
    get: {
      operationId: 'getMission',
      summary: 'The status object, as `flotilla status <id> --json` prints it',
      parameters: [missionId],
      responses: {
        '200': { description: 'The status.', content: json('MissionStatus') },
        '404': respond('NotFound'),
        ...common,
      },
    },
  },
  '/missions/{id}/events': {
    get: {
      operationId: 'followMission',
      summary: "The mission's events as Server-Sent Events, until it has finished",
      description:
        "Each message's `id` is the event's Redis stream id, `event` its type (submitted, task, mission, log) and `data` a MissionEvent. The stream ends after the mission's final event once its summary is written. Resume with `Last-Event-ID` (or `?after=`); a resume after the end answers 204.",
      parameters: [
        missionId,
        { name: 'Last-Event-ID', in: 'header', required: false, schema: { type: 'string' } },
        { name: 'after', in: 'query', required: false, schema: { type: 'string' } },
      ],
      responses: {
        '200': {
          description: 'A text/event-stream whose data are MissionEvent objects.',
          content: { 'text/event-stream': { schema: { type: 'string' } } },
        },
        '204': { description: 'The mission had finished and nothing came after Last-Event-ID.' },
        '400': respond('BadRequest'),
        '404': respond('NotFound'),
        ...common,
      },
    },
  },
  '/missions/{id}/cancel': {
    post: {
      operationId: 'cancelMission',
      summary: 'Stop the mission on every host (as `flotilla cancel`)',
      parameters: [missionId],
      responses: {
        '200': { description: 'Cancelled.', content: json('Cancelled') },
        '404': respond('NotFound'),
        '409': errorResponse('The mission had already finished: nothing was cancelled.'),
        ...common,
      },
    },
  },
  '/missions/{id}/answer': {
    post: {
      operationId: 'answerTask',
      summary: 'Answer a task paused with needs_input (as `flotilla answer`)',
      parameters: [missionId],
      requestBody: { required: true, content: json('Answer') },
      responses: {
        '200': { description: 'The task resumes as a continuation attempt.', content: json('Answered') },
        '400': respond('BadRequest'),
        '404': respond('NotFound'),
        '409': errorResponse('The task is not waiting for an answer, or had its two answered rounds.'),
        '415': errorResponse('Not a JSON body.'),
        '422': respond('Invalid'),
        ...common,
      },
    },
  },
  '/missions/{id}/approve': {
    post: {
      operationId: 'approveTask',
      summary: 'Approve or reject a task held by approve: human (as `flotilla approve`)',
      parameters: [missionId],
      requestBody: { required: true, content: json('Approve') },
      responses: {
        '200': {
          description: 'The verdict was sent; a worker host merges the attempt or retries it.',
          content: json('Approved'),
        },
        '400': respond('BadRequest'),
        '404': respond('NotFound'),
        '409': errorResponse(
          'The task is not waiting for approval, or another verdict for the attempt came first.',
        ),
        '415': errorResponse('Not a JSON body.'),
        '422': respond('Invalid'),
        ...common,
      },
    },
  },
  '/openapi.json': {
    get: {
      operationId: 'openApi',
      summary: 'This document (no token needed)',
      security: [],
      responses: { '200': { description: 'The OpenAPI document.', content: { 'application/json': {} } } },
    },
  },
} as const;

/** OpenAPI path templates (`/missions/{id}`) as the router spells them (`/missions/:id`). */
export function documentedRoutes(): string[] {
  return Object.entries(paths).flatMap(([path, operations]) =>
    Object.keys(operations).map((method) => `${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`),
  );
}

function componentSchemas(): Record<string, unknown> {
  const generated = z.toJSONSchema(apiRegistry, {
    io: 'input',
    metadata: apiRegistry,
    // The mission's checkpoint_interval accepts any value and checks it in a transform: {} here.
    unrepresentable: 'any',
    uri: (id) => `#/components/schemas/${id}`,
  });
  return Object.fromEntries(
    Object.entries(generated.schemas).map(([id, { $schema: _schema, $id: _id, ...schema }]) => [id, schema]),
  );
}

let document: Record<string, unknown> | undefined;

export function openApiDocument(): Record<string, unknown> {
  document ??= {
    openapi: '3.1.0',
    info: {
      title: 'flotilla board API',
      version: '1',
      description:
        'Submit, follow, cancel and answer missions over HTTP. Authenticate with `Authorization: Bearer <FLOTILLA_API_TOKEN>`.',
    },
    servers: [{ url: API_BASE }],
    security: [{ bearer: [] }],
    paths,
    components: {
      schemas: componentSchemas(),
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      responses: {
        BadRequest: errorResponse('Malformed JSON, or a malformed parameter.'),
        Unauthorized: errorResponse('No bearer token, or a wrong one (see WWW-Authenticate).'),
        Refused: errorResponse(
          'The API is off (the board is reachable beyond loopback, or needs board credentials, and FLOTILLA_API_TOKEN is not set), or the request came from another site.',
        ),
        NotFound: errorResponse('No such mission (or task).'),
        Invalid: errorResponse('An invalid mission or answer: `problems` lists every problem.'),
        RedisDown: errorResponse('Redis is unreachable.'),
      },
    },
  };
  return document;
}
