import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdir } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { execa } from 'execa';

/**
 * A smart-HTTP git server on loopback: node's http server running `git http-backend` as a CGI
 * program per request (an argument array, no shell), over bare repositories in `root`. With
 * `credential`, a request without that HTTP Basic credential gets 401, as a private repository's
 * host answers; `seen` records every Authorization header, to show what git sent.
 */
export interface GitHttpServer {
  readonly port: number;
  /** `http://127.0.0.1:<port>/<name>.git`, with `userinfo@` when given (`deploy:token`). */
  url(name: string, userinfo?: string): string;
  /** A bare repository `<name>.git` that accepts pushes, with one commit on `main` when `seed`. */
  createRepo(name: string, options?: { seed?: Readonly<Record<string, string>> }): Promise<string>;
  readonly seen: string[];
  stop(): Promise<void>;
}

export async function startGitHttpServer(
  root: string,
  options: { credential?: { username: string; password: string } } = {},
): Promise<GitHttpServer> {
  await mkdir(root, { recursive: true });
  const seen: string[] = [];
  const expected = options.credential
    ? `Basic ${Buffer.from(`${options.credential.username}:${options.credential.password}`).toString('base64')}`
    : undefined;
  const server = createServer((req, res) => {
    const auth = req.headers.authorization;
    if (auth) seen.push(auth);
    if (expected && auth !== expected) {
      res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="flotilla-test"' });
      res.end();
      return;
    }
    serveCgi(root, req, res);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    seen,
    url: (name, userinfo) => `http://${userinfo ? `${userinfo}@` : ''}127.0.0.1:${port}/${name}.git`,
    async createRepo(name, repoOptions = {}) {
      const bare = join(root, `${name}.git`);
      await execa('git', ['init', '--quiet', '--bare', '--initial-branch=main', bare]);
      await execa('git', ['config', 'http.receivepack', 'true'], { cwd: bare });
      if (repoOptions.seed) {
        const work = `${bare}-seed`;
        await execa('git', ['init', '--quiet', '--initial-branch=main', work]);
        for (const [path, content] of Object.entries(repoOptions.seed)) {
          await execa(
            'bash',
            ['-c', 'mkdir -p "$(dirname "$1")" && printf %s "$2" > "$1"', 'seed', path, content],
            {
              cwd: work,
            },
          );
        }
        await execa('git', ['add', '-A'], { cwd: work });
        await execa('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '--quiet', '-m', 'seed'], {
          cwd: work,
        });
        await execa('git', ['push', '--quiet', bare, 'main'], { cwd: work });
      }
      return bare;
    },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((done) => server.close(() => done()));
    },
  };
}

/** One request through `git http-backend`: CGI variables in, `Status:` and headers out, then the body. */
function serveCgi(root: string, req: IncomingMessage, res: ServerResponse): void {
  const url = new URL(req.url ?? '/', 'http://127.0.0.1');
  const child = spawn('git', ['http-backend'], {
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      GIT_PROJECT_ROOT: root,
      GIT_HTTP_EXPORT_ALL: '1',
      PATH_INFO: decodeURIComponent(url.pathname),
      QUERY_STRING: url.search.slice(1),
      REQUEST_METHOD: req.method ?? 'GET',
      CONTENT_TYPE: req.headers['content-type'] ?? '',
      HTTP_CONTENT_ENCODING: req.headers['content-encoding'] ?? '',
      GIT_PROTOCOL: String(req.headers['git-protocol'] ?? ''),
      REMOTE_ADDR: '127.0.0.1',
      REMOTE_USER: 'flotilla-test',
    },
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  req.pipe(child.stdin);
  child.stdin.on('error', () => undefined);
  let head = Buffer.alloc(0);
  let started = false;
  child.stdout.on('data', (chunk: Buffer) => {
    if (started) {
      res.write(chunk);
      return;
    }
    head = Buffer.concat([head, chunk]);
    const end = head.indexOf('\r\n\r\n');
    if (end === -1) return;
    let status = 200;
    const headers: Record<string, string> = {};
    for (const line of head.subarray(0, end).toString('latin1').split('\r\n')) {
      const colon = line.indexOf(':');
      const name = line.slice(0, colon).trim();
      const value = line.slice(colon + 1).trim();
      if (name.toLowerCase() === 'status') status = Number.parseInt(value, 10);
      else if (name) headers[name] = value;
    }
    res.writeHead(status, headers);
    started = true;
    res.write(head.subarray(end + 4));
  });
  child.on('close', () => {
    if (!started) res.writeHead(500);
    res.end();
  });
}
