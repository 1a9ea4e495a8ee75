import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type Router } from 'express';
import { describe, expect, it } from 'vitest';
import { decideApiAccess, describeApiAccess } from '../../src/board/api/access.js';
import { API_BASE, documentedRoutes, openApiDocument } from '../../src/board/api/openapi.js';
import { createApiRouter } from '../../src/board/api/router.js';
import type { FlotillaClient } from '../../src/producer/client.js';

/**
 * The OpenAPI document against the router it describes, and who may use the API. The served
 * document is fetched over HTTP from the router and compared with the routes the router really
 * registered, read from express's own route table.
 */

interface RouteLayer {
  route?: { path: string; methods: Record<string, boolean> };
}

function registeredRoutes(router: Router): string[] {
  const stack = (router as unknown as { stack: RouteLayer[] }).stack;
  return stack.flatMap((layer) =>
    layer.route
      ? Object.keys(layer.route.methods).map((method) => `${method.toUpperCase()} ${layer.route?.path}`)
      : [],
  );
}

/** `GET /missions/:id` for each operation of the document's paths. */
function pathsOf(doc: { paths: Record<string, Record<string, unknown>> }): string[] {
  return Object.entries(doc.paths).flatMap(([path, operations]) =>
    Object.keys(operations).map((method) => `${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`),
  );
}

describe('the OpenAPI document', () => {
  it('served at /api/v1/openapi.json, documents exactly the routes the router serves', async () => {
    // The routes are only listed and the document fetched: no client or Redis is needed.
    const router = createApiRouter({ client: {} as FlotillaClient, access: { kind: 'open' } });
    const app = express();
    app.use(API_BASE, router);
    const server = createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const response = await fetch(`http://127.0.0.1:${port}${API_BASE}/openapi.json`);
      expect(response.status).toBe(200);
      const served = (await response.json()) as { paths: Record<string, Record<string, unknown>> };
      const registered = registeredRoutes(router);
      expect(registered.length).toBeGreaterThanOrEqual(7);
      expect(pathsOf(served).sort()).toEqual([...registered].sort());
      expect(documentedRoutes().sort()).toEqual([...registered].sort());
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('is OpenAPI 3.1 with schemas generated from the zod schemas, the mission file’s included', () => {
    const doc = openApiDocument() as {
      openapi: string;
      servers: { url: string }[];
      components: { schemas: Record<string, Record<string, unknown>> };
    };
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.servers).toEqual([{ url: API_BASE }]);
    const { schemas } = doc.components;
    expect(Object.keys(schemas).sort()).toEqual(
      [
        'Answer',
        'Answered',
        'Approve',
        'Approved',
        'Cancelled',
        'Error',
        'Mission',
        'MissionEvent',
        'MissionList',
        'MissionStatus',
        'Problem',
        'Submitted',
        'TaskStatus',
      ].sort(),
    );
    // The mission's own schema: the file's spellings, and a duration as a string or a number.
    const mission = schemas.Mission as { required: string[]; properties: Record<string, unknown> };
    expect(mission.required).toEqual(expect.arrayContaining(['goal', 'tasks']));
    expect(Object.keys(mission.properties)).toEqual(
      expect.arrayContaining(['goal', 'workspace', 'defaults', 'tasks']),
    );
    const task = (mission.properties.tasks as { items: { properties: Record<string, unknown> } }).items;
    expect(task.properties.depends_on).toMatchObject({ type: 'array' });
    expect(task.properties.timeout).toEqual({ type: ['string', 'number'] });
    // Component schemas reference one another; every reference resolves.
    const refs = JSON.stringify(doc).match(/"#\/components\/schemas\/(\w+)"/g) ?? [];
    for (const ref of refs)
      expect(Object.keys(schemas)).toContain(ref.slice('"#/components/schemas/'.length, -1));
    expect(JSON.stringify(schemas)).not.toContain('"$id"');
  });
});

describe('decideApiAccess', () => {
  it('needs the token whenever one is set, on any host', () => {
    expect(decideApiAccess({ host: '0.0.0.0', token: 't0k', boardCredentials: true })).toEqual({
      kind: 'token',
      token: 't0k',
    });
    expect(decideApiAccess({ host: '127.0.0.1', token: 't0k', boardCredentials: false }).kind).toBe('token');
  });

  it('is open without a token only where the board needs no credentials', () => {
    expect(decideApiAccess({ host: '127.0.0.1', boardCredentials: false })).toEqual({ kind: 'open' });
    expect(decideApiAccess({ host: '::1', token: '', boardCredentials: false })).toEqual({ kind: 'open' });
  });

  it('is off beyond loopback, or behind board credentials, without a token, and says why', () => {
    const beyond = decideApiAccess({ host: '0.0.0.0', boardCredentials: true });
    expect(beyond.kind).toBe('off');
    expect(describeApiAccess(beyond)).toMatch(
      /0\.0\.0\.0, beyond loopback, and FLOTILLA_API_TOKEN is not set/,
    );
    const guarded = decideApiAccess({ host: '127.0.0.1', boardCredentials: true });
    expect(describeApiAccess(guarded)).toMatch(
      /requires FLOTILLA_BOARD_USER .* FLOTILLA_API_TOKEN is not set/,
    );
  });

  it('never names the token when it describes itself', () => {
    const access = decideApiAccess({ host: '0.0.0.0', token: 'very-secret-token', boardCredentials: true });
    expect(describeApiAccess(access)).not.toContain('very-secret-token');
  });
});
