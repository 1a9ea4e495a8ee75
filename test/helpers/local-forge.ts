/**
 * A local forge on loopback, for delivery tests: real git remotes (bare repositories served over
 * smart HTTP by `git http-backend`, so a push is git's own) and the REST endpoints delivery uses,
 * each request held to the forge's documented shape — method, path, auth header form, JSON fields
 * and their types — and answered with the fields delivery reads. Anything else gets the forge's
 * 4xx, so a request delivery gets wrong fails the test instead of passing silently. Every request
 * is logged (token replaced by ***) for the tests to assert and for docs to show.
 *
 * Shapes, from the forges' REST references:
 * - GitHub (docs.github.com/rest/pulls/pulls, 2022-11-28): `Authorization: Bearer <token>`,
 *   `Accept: application/vnd.github+json`, `X-GitHub-Api-Version`, a User-Agent;
 *   GET/POST /repos/{owner}/{repo}/pulls (list: state, head=owner:branch, base; create: title, head,
 *   base, body, draft → 201; an open one for the same head and base → 422), PATCH …/pulls/{number}
 *   (title, body, state, base, maintainer_can_modify), POST …/issues/{number}/labels { labels }.
 * - GitLab (docs.gitlab.com/api/merge_requests): `PRIVATE-TOKEN: <token>`; GET/POST
 *   /projects/{url-encoded path}/merge_requests (list: state=opened, source_branch, target_branch;
 *   create: source_branch, target_branch, title, description, labels as a comma-separated string →
 *   201; an open one for the same branches → 409), PUT …/merge_requests/{iid} (title,
 *   description, add_labels).
 * - Gitea/Forgejo (gitea.com/api/swagger): `Authorization: token <token>`; GET
 *   /repos/{owner}/{repo}/pulls?state=open, POST …/pulls (head, base, title, body, labels as ids →
 *   201; an open one for the same branches → 409), PATCH …/pulls/{index} (title, body, labels as
 *   ids), GET …/labels.
 */
import { spawn } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { execa } from 'execa';

export type ForgeKind = 'github' | 'gitlab' | 'gitea';

export interface LoggedRequest {
  readonly method: string;
  /** Path and query as sent. */
  readonly url: string;
  /** The auth header as sent, token replaced by `***` (`Bearer ***`, `token ***`). */
  readonly auth: string | null;
  readonly body: unknown;
  readonly status: number;
}

export interface StoredPull {
  number: number;
  head: string;
  base: string;
  title: string;
  body: string;
  draft: boolean;
  labels: string[];
  state: 'open' | 'closed';
}

export interface LocalForge {
  readonly kind: ForgeKind;
  /** http://127.0.0.1:<port> */
  readonly url: string;
  /** The REST API root delivery is configured with (`deliver.api_url`). */
  readonly apiUrl: string;
  readonly log: LoggedRequest[];
  /** Pull requests (merge requests) by project `owner/repo`. */
  readonly pulls: Map<string, StoredPull[]>;
  /** Creates a bare repository served at `<url>/<owner>/<repo>.git`; returns that URL. */
  createRepo(project: string, options?: { defaultBranch?: string }): Promise<string>;
  /** The bare repository's folder, to read with git. */
  repoDir(project: string): string;
  /** The next `count` API requests matching `method path-prefix` are answered with `status`. */
  failNext(match: string, status: number, count?: number): void;
  /** Called after a pull request is created, before the reply is sent (a test may kill a host there). */
  onCreate?: (pull: StoredPull) => Promise<void> | void;
  /** The API log as lines: `POST /repos/acme/calc/pulls 201 {"title":…}`. */
  formatLog(): string;
  stop(): Promise<void>;
}

export async function startLocalForge(options: {
  kind: ForgeKind;
  token: string;
  root: string;
  /** Gitea labels that exist, by name (ids are their position + 1). */
  labels?: readonly string[];
}): Promise<LocalForge> {
  const { kind, token } = options;
  const root = join(options.root, 'forge-repos');
  await mkdir(root, { recursive: true });
  const log: LoggedRequest[] = [];
  const pulls = new Map<string, StoredPull[]>();
  const failures: { method: string; prefix: string; status: number; left: number }[] = [];
  const labels = options.labels ?? [];
  let server: Server | undefined;
  const apiRoot = kind === 'github' ? '/api/v3' : kind === 'gitlab' ? '/api/v4' : '/api/v1';

  const forge: LocalForge = {
    kind,
    url: '',
    apiUrl: '',
    log,
    pulls,
    async createRepo(project, repoOptions = {}) {
      const dir = forge.repoDir(project);
      await execa('git', [
        'init',
        '--bare',
        '--quiet',
        `--initial-branch=${repoOptions.defaultBranch ?? 'main'}`,
        dir,
      ]);
      await execa('git', ['-C', dir, 'config', 'http.receivepack', 'true']);
      return `${forge.url}/${project}.git`;
    },
    repoDir: (project) => join(root, `${project}.git`),
    failNext(match, status, count = 1) {
      const [method = '', prefix = ''] = match.split(' ');
      failures.push({ method, prefix, status, left: count });
    },
    formatLog: () =>
      log
        .map(
          (r) =>
            `${r.method} ${r.url} ${r.status}${r.auth ? ` [${r.auth}]` : ''}${r.body === undefined ? '' : ` ${abbreviate(r.body)}`}`,
        )
        .join('\n'),
    async stop() {
      await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    },
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = req.url ?? '/';
    const raw = await readBody(req);
    if (!url.startsWith(`${apiRoot}/`)) return serveGit(root, req, res, raw);
    const path = url.slice(apiRoot.length);
    const authHeader = kind === 'gitlab' ? header(req, 'private-token') : header(req, 'authorization');
    const entry = { method: req.method ?? '', url: path, auth: redactAuth(authHeader, token) };
    let body: unknown;
    if (raw.length > 0) {
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        return reply(res, log, entry, undefined, 400, { message: 'Problems parsing JSON' });
      }
    }
    const failure = failures.find((f) => f.left > 0 && f.method === req.method && path.startsWith(f.prefix));
    if (failure) {
      failure.left--;
      return reply(res, log, entry, body, failure.status, { message: `injected ${failure.status}` });
    }
    const problem = checkHeaders(kind, req, token, raw.length > 0);
    if (problem) return reply(res, log, entry, body, problem.status, { message: problem.message });
    const answer = await route(kind, { method: req.method ?? '', path, body, pulls, labels, forge, root });
    return reply(res, log, entry, body, answer.status, answer.json);
  };

  server = createServer((req, res) => {
    handle(req, res).catch((error: Error) => {
      res.statusCode = 500;
      res.end(JSON.stringify({ message: `local forge: ${error.message}` }));
    });
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  Object.assign(forge, { url: `http://127.0.0.1:${port}`, apiUrl: `http://127.0.0.1:${port}${apiRoot}` });
  return forge;
}

function abbreviate(body: unknown): string {
  const text = JSON.stringify(body, (key, value) =>
    (key === 'body' || key === 'description') && typeof value === 'string' && value.length > 60
      ? `${value.slice(0, 40)}… (${value.length} chars)`
      : value,
  );
  return text;
}

function header(req: IncomingMessage, name: string): string | null {
  const value = req.headers[name];
  return typeof value === 'string' ? value : null;
}

function redactAuth(value: string | null, token: string): string | null {
  if (value === null) return null;
  return token ? value.split(token).join('***') : value;
}

/** The auth header in the forge's documented form, with the right token; the media headers. */
function checkHeaders(
  kind: ForgeKind,
  req: IncomingMessage,
  token: string,
  hasBody: boolean,
): { status: number; message: string } | null {
  if (hasBody && !(header(req, 'content-type') ?? '').startsWith('application/json')) {
    return { status: 415, message: 'expected Content-Type: application/json' };
  }
  if (kind === 'github') {
    if (!header(req, 'user-agent'))
      return { status: 403, message: 'Request forbidden: a User-Agent is required' };
    if (header(req, 'accept') !== 'application/vnd.github+json') {
      return { status: 415, message: 'expected Accept: application/vnd.github+json' };
    }
    if (header(req, 'x-github-api-version') !== '2022-11-28') {
      return { status: 400, message: 'expected X-GitHub-Api-Version: 2022-11-28' };
    }
    if (header(req, 'authorization') !== `Bearer ${token}`)
      return { status: 401, message: 'Bad credentials' };
    return null;
  }
  if (kind === 'gitlab') {
    if (header(req, 'private-token') !== token) return { status: 401, message: '401 Unauthorized' };
    return null;
  }
  if (header(req, 'authorization') !== `token ${token}`) return { status: 401, message: 'token is required' };
  return null;
}

interface RouteInput {
  readonly method: string;
  readonly path: string;
  readonly body: unknown;
  readonly pulls: Map<string, StoredPull[]>;
  readonly labels: readonly string[];
  readonly forge: LocalForge;
  readonly root: string;
}

type Answer = { status: number; json: unknown };

async function route(kind: ForgeKind, input: RouteInput): Promise<Answer> {
  if (kind === 'github') return github(input);
  if (kind === 'gitlab') return gitlab(input);
  return gitea(input);
}

/** Fields of a JSON body: each one named and of its type, nothing else (the reference's schema). */
function fields(
  body: unknown,
  spec: Record<string, 'string' | 'boolean' | 'string[]' | 'number[]'>,
  required: readonly string[],
): string | null {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return 'expected a JSON object';
  const record = body as Record<string, unknown>;
  for (const name of Object.keys(record)) {
    const type = spec[name];
    if (!type) return `unexpected field '${name}'`;
    const value = record[name];
    const ok =
      type === 'string[]'
        ? Array.isArray(value) && value.every((v) => typeof v === 'string')
        : type === 'number[]'
          ? Array.isArray(value) && value.every((v) => typeof v === 'number')
          : typeof value === type;
    if (!ok) return `'${name}' must be ${type}`;
  }
  for (const name of required) if (!(name in record)) return `'${name}' is required`;
  return null;
}

async function branchExists(root: string, project: string, branch: string): Promise<boolean> {
  const result = await execa(
    'git',
    ['-C', join(root, `${project}.git`), 'rev-parse', '--verify', '--quiet', `refs/heads/${branch}`],
    {
      reject: false,
    },
  );
  return result.exitCode === 0;
}

function listOf(pulls: Map<string, StoredPull[]>, project: string): StoredPull[] {
  let list = pulls.get(project);
  if (!list) {
    list = [];
    pulls.set(project, list);
  }
  return list;
}

async function github(input: RouteInput): Promise<Answer> {
  const { method, path, body, pulls, root, forge } = input;
  const [pathname = '', query = ''] = path.split('?');
  const params = new URLSearchParams(query);
  const pr = /^\/repos\/([^/]+)\/([^/]+)\/pulls(?:\/(\d+))?$/.exec(pathname);
  const labelsPath = /^\/repos\/([^/]+)\/([^/]+)\/issues\/(\d+)\/labels$/.exec(pathname);
  const view = (owner: string, repo: string, p: StoredPull) => ({
    number: p.number,
    html_url: `${forge.url}/${owner}/${repo}/pull/${p.number}`,
    state: p.state,
    title: p.title,
    body: p.body,
    draft: p.draft,
    head: { ref: p.head, label: `${owner}:${p.head}` },
    base: { ref: p.base, label: `${owner}:${p.base}` },
    labels: p.labels.map((name) => ({ name })),
  });
  if (pr && !pr[3] && method === 'GET') {
    const [, owner = '', repo = ''] = pr;
    const head = params.get('head');
    if (head !== null && !head.includes(':'))
      return { status: 422, json: { message: 'head must be user:ref-name' } };
    const found = listOf(pulls, `${owner}/${repo}`).filter(
      (p) =>
        (params.get('state') ?? 'open') === p.state &&
        (head === null || head === `${owner}:${p.head}`) &&
        (params.get('base') === null || params.get('base') === p.base),
    );
    return { status: 200, json: found.map((p) => view(owner, repo, p)) };
  }
  if (pr && !pr[3] && method === 'POST') {
    const [, owner = '', repo = ''] = pr;
    const problem = fields(
      body,
      {
        title: 'string',
        head: 'string',
        head_repo: 'string',
        base: 'string',
        body: 'string',
        maintainer_can_modify: 'boolean',
        draft: 'boolean',
        issue: 'string',
      },
      ['head', 'base', 'title'],
    );
    if (problem) return { status: 422, json: { message: 'Validation Failed', errors: [problem] } };
    const b = body as { title: string; head: string; base: string; body?: string; draft?: boolean };
    const project = `${owner}/${repo}`;
    if (!(await branchExists(root, project, b.head)) || !(await branchExists(root, project, b.base))) {
      return {
        status: 422,
        json: {
          message: 'Validation Failed',
          errors: [{ resource: 'PullRequest', field: 'head', code: 'invalid' }],
        },
      };
    }
    const list = listOf(pulls, project);
    if (list.some((p) => p.state === 'open' && p.head === b.head && p.base === b.base)) {
      return {
        status: 422,
        json: {
          message: 'Validation Failed',
          errors: [{ message: `A pull request already exists for ${owner}:${b.head}.` }],
        },
      };
    }
    const stored: StoredPull = {
      number: list.length + 1,
      head: b.head,
      base: b.base,
      title: b.title,
      body: b.body ?? '',
      draft: b.draft ?? false,
      labels: [],
      state: 'open',
    };
    list.push(stored);
    await forge.onCreate?.(stored);
    return { status: 201, json: view(owner, repo, stored) };
  }
  if (pr?.[3] && method === 'PATCH') {
    const [, owner = '', repo = '', n = ''] = pr;
    const problem = fields(
      body,
      { title: 'string', body: 'string', state: 'string', base: 'string', maintainer_can_modify: 'boolean' },
      [],
    );
    if (problem) return { status: 422, json: { message: 'Validation Failed', errors: [problem] } };
    const stored = listOf(pulls, `${owner}/${repo}`).find((p) => p.number === Number(n));
    if (!stored) return { status: 404, json: { message: 'Not Found' } };
    Object.assign(stored, body);
    return { status: 200, json: view(owner, repo, stored) };
  }
  if (labelsPath && method === 'POST') {
    const [, owner = '', repo = '', n = ''] = labelsPath;
    const problem = fields(body, { labels: 'string[]' }, ['labels']);
    if (problem) return { status: 422, json: { message: 'Validation Failed', errors: [problem] } };
    const stored = listOf(pulls, `${owner}/${repo}`).find((p) => p.number === Number(n));
    if (!stored) return { status: 404, json: { message: 'Not Found' } };
    for (const name of (body as { labels: string[] }).labels)
      if (!stored.labels.includes(name)) stored.labels.push(name);
    return { status: 200, json: stored.labels.map((name) => ({ name })) };
  }
  return { status: 404, json: { message: 'Not Found' } };
}

async function gitlab(input: RouteInput): Promise<Answer> {
  const { method, path, body, pulls, root, forge } = input;
  const [pathname = '', query = ''] = path.split('?');
  const params = new URLSearchParams(query);
  const mr = /^\/projects\/([^/]+)\/merge_requests(?:\/(\d+))?$/.exec(pathname);
  if (!mr) return { status: 404, json: { message: '404 Not Found' } };
  // The project id is the URL-encoded path: a raw slash would have split the route.
  const project = decodeURIComponent(mr[1] ?? '');
  if (!project.includes('/')) return { status: 404, json: { message: '404 Project Not Found' } };
  const view = (p: StoredPull) => ({
    iid: p.number,
    id: 1000 + p.number,
    web_url: `${forge.url}/${project}/-/merge_requests/${p.number}`,
    state: p.state === 'open' ? 'opened' : 'closed',
    title: p.title,
    description: p.body,
    source_branch: p.head,
    target_branch: p.base,
    labels: p.labels,
    draft: p.title.startsWith('Draft:'),
  });
  if (!mr[2] && method === 'GET') {
    const state = params.get('state');
    const found = listOf(pulls, project).filter(
      (p) =>
        (state === null || state === 'all' || (state === 'opened') === (p.state === 'open')) &&
        (params.get('source_branch') === null || params.get('source_branch') === p.head) &&
        (params.get('target_branch') === null || params.get('target_branch') === p.base),
    );
    return { status: 200, json: found.map(view) };
  }
  if (!mr[2] && method === 'POST') {
    const problem = fields(
      body,
      {
        source_branch: 'string',
        target_branch: 'string',
        title: 'string',
        description: 'string',
        labels: 'string',
        remove_source_branch: 'boolean',
        squash: 'boolean',
      },
      ['source_branch', 'target_branch', 'title'],
    );
    if (problem) return { status: 400, json: { message: problem } };
    const b = body as {
      source_branch: string;
      target_branch: string;
      title: string;
      description?: string;
      labels?: string;
    };
    if (
      !(await branchExists(root, project, b.source_branch)) ||
      !(await branchExists(root, project, b.target_branch))
    ) {
      return { status: 400, json: { message: 'Invalid source or target branch' } };
    }
    const list = listOf(pulls, project);
    if (list.some((p) => p.state === 'open' && p.head === b.source_branch && p.base === b.target_branch)) {
      return {
        status: 409,
        json: { message: ['Another open merge request already exists for this source branch'] },
      };
    }
    const stored: StoredPull = {
      number: list.length + 1,
      head: b.source_branch,
      base: b.target_branch,
      title: b.title,
      body: b.description ?? '',
      draft: b.title.startsWith('Draft:'),
      labels: b.labels ? b.labels.split(',').filter(Boolean) : [],
      state: 'open',
    };
    list.push(stored);
    await forge.onCreate?.(stored);
    return { status: 201, json: view(stored) };
  }
  if (mr[2] && method === 'PUT') {
    const problem = fields(
      body,
      {
        title: 'string',
        description: 'string',
        add_labels: 'string',
        labels: 'string',
        target_branch: 'string',
        state_event: 'string',
      },
      [],
    );
    if (problem) return { status: 400, json: { message: problem } };
    const stored = listOf(pulls, project).find((p) => p.number === Number(mr[2]));
    if (!stored) return { status: 404, json: { message: '404 Not found' } };
    const b = body as { title?: string; description?: string; add_labels?: string };
    if (b.title !== undefined) stored.title = b.title;
    if (b.description !== undefined) stored.body = b.description;
    for (const name of (b.add_labels ?? '').split(',').filter(Boolean))
      if (!stored.labels.includes(name)) stored.labels.push(name);
    return { status: 200, json: view(stored) };
  }
  return { status: 405, json: { message: '405 Method Not Allowed' } };
}

async function gitea(input: RouteInput): Promise<Answer> {
  const { method, path, body, pulls, root, forge, labels } = input;
  const [pathname = '', query = ''] = path.split('?');
  const params = new URLSearchParams(query);
  const labelList = /^\/repos\/([^/]+)\/([^/]+)\/labels$/.exec(pathname);
  if (labelList && method === 'GET') {
    return { status: 200, json: labels.map((name, i) => ({ id: i + 1, name, color: 'ededed' })) };
  }
  const pr = /^\/repos\/([^/]+)\/([^/]+)\/pulls(?:\/(\d+))?$/.exec(pathname);
  if (!pr) return { status: 404, json: { message: 'Not Found' } };
  const [, owner = '', repo = ''] = pr;
  const project = `${owner}/${repo}`;
  const labelNames = (ids: readonly number[]) =>
    ids.map((id) => labels[id - 1]).filter((n): n is string => n !== undefined);
  const view = (p: StoredPull) => ({
    number: p.number,
    id: 2000 + p.number,
    html_url: `${forge.url}/${project}/pulls/${p.number}`,
    state: p.state,
    title: p.title,
    body: p.body,
    head: { ref: p.head, label: p.head },
    base: { ref: p.base, label: p.base },
    labels: p.labels.map((name) => ({ id: labels.indexOf(name) + 1, name })),
  });
  if (!pr[3] && method === 'GET') {
    const limit = Number(params.get('limit') ?? 30);
    const page = Number(params.get('page') ?? 1);
    const found = listOf(pulls, project).filter(
      (p) => (params.get('state') ?? 'open') === 'all' || (params.get('state') ?? 'open') === p.state,
    );
    return { status: 200, json: found.slice((page - 1) * limit, page * limit).map(view) };
  }
  if (!pr[3] && method === 'POST') {
    const problem = fields(
      body,
      {
        head: 'string',
        base: 'string',
        title: 'string',
        body: 'string',
        labels: 'number[]',
        assignee: 'string',
        assignees: 'string[]',
        due_date: 'string',
      },
      ['head', 'base', 'title'],
    );
    if (problem) return { status: 422, json: { message: problem } };
    const b = body as { head: string; base: string; title: string; body?: string; labels?: number[] };
    if (!(await branchExists(root, project, b.head)) || !(await branchExists(root, project, b.base))) {
      return { status: 404, json: { message: "The target couldn't be found." } };
    }
    const list = listOf(pulls, project);
    if (list.some((p) => p.state === 'open' && p.head === b.head && p.base === b.base)) {
      return { status: 409, json: { message: 'pull request already exists for these targets' } };
    }
    const stored: StoredPull = {
      number: list.length + 1,
      head: b.head,
      base: b.base,
      title: b.title,
      body: b.body ?? '',
      draft: /^(WIP:|\[WIP\])/.test(b.title),
      labels: labelNames(b.labels ?? []),
      state: 'open',
    };
    list.push(stored);
    await forge.onCreate?.(stored);
    return { status: 201, json: view(stored) };
  }
  if (pr[3] && method === 'PATCH') {
    const problem = fields(
      body,
      {
        title: 'string',
        body: 'string',
        labels: 'number[]',
        state: 'string',
        base: 'string',
        assignee: 'string',
        assignees: 'string[]',
      },
      [],
    );
    if (problem) return { status: 422, json: { message: problem } };
    const stored = listOf(pulls, project).find((p) => p.number === Number(pr[3]));
    if (!stored) return { status: 404, json: { message: 'Not Found' } };
    const b = body as { title?: string; body?: string; labels?: number[] };
    if (b.title !== undefined) stored.title = b.title;
    if (b.body !== undefined) stored.body = b.body;
    if (b.labels !== undefined) stored.labels = labelNames(b.labels);
    return { status: 201, json: view(stored) };
  }
  return { status: 405, json: { message: 'Method Not Allowed' } };
}

function reply(
  res: ServerResponse,
  log: LoggedRequest[],
  entry: Omit<LoggedRequest, 'status' | 'body'>,
  body: unknown,
  status: number,
  json: unknown,
): void {
  log.push({ ...entry, body, status });
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json');
  res.end(JSON.stringify(json));
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Smart HTTP through `git http-backend` as a CGI program (git's own server side of a push). */
async function serveGit(
  root: string,
  req: IncomingMessage,
  res: ServerResponse,
  body: Buffer,
): Promise<void> {
  const [pathInfo = '', query = ''] = (req.url ?? '').split('?');
  const child = spawn('git', ['http-backend'], {
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      GIT_PROJECT_ROOT: root,
      GIT_HTTP_EXPORT_ALL: '1',
      PATH_INFO: decodeURIComponent(pathInfo),
      REQUEST_METHOD: req.method ?? 'GET',
      QUERY_STRING: query,
      CONTENT_TYPE: header(req, 'content-type') ?? '',
      CONTENT_LENGTH: String(body.length),
      REMOTE_ADDR: '127.0.0.1',
      ...(header(req, 'content-encoding')
        ? { HTTP_CONTENT_ENCODING: header(req, 'content-encoding') ?? '' }
        : {}),
      GIT_PROTOCOL: header(req, 'git-protocol') ?? '',
    },
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  child.stdin.end(body);
  const chunks: Buffer[] = [];
  for await (const chunk of child.stdout) chunks.push(chunk as Buffer);
  const out = Buffer.concat(chunks);
  const split = out.indexOf('\r\n\r\n');
  const headerEnd = split === -1 ? out.indexOf('\n\n') : split;
  const gap = split === -1 ? 2 : 4;
  const head = out.subarray(0, headerEnd).toString('utf8');
  let status = 200;
  for (const line of head.split(/\r?\n/)) {
    const [name = '', ...rest] = line.split(':');
    const value = rest.join(':').trim();
    if (name.toLowerCase() === 'status') status = Number(value.split(' ')[0]);
    else if (name) res.setHeader(name, value);
  }
  res.statusCode = status;
  res.end(out.subarray(headerEnd + gap));
}
