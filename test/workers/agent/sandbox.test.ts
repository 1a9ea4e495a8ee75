import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sandboxedCommand, writablePaths } from '../../../src/workers/agent/sandbox.js';
import { indent, ROOT, sim, startCluster, type TestCluster } from '../../helpers/flotilla.js';

/**
 * `flotilla worker --sandbox`: agent CLIs under bubblewrap, writable only in their checkout, a
 * private /tmp and their own config folders. The stand-in agent tries to write outside; a host
 * whose bwrap is missing or cannot make namespaces refuses to start, quoting bwrap.
 */

describe('sandboxedCommand', () => {
  it('brings back, read-only, a tree under /tmp that holds a PATH entry or the command', async () => {
    const root = await mkdtemp(join(tmpdir(), 'flotilla-sandbox-path-'));
    const bin = join(root, 'node_modules', '.bin');
    const { args } = sandboxedCommand(
      { bwrap: 'bwrap' },
      { command: 'codex', args: [], cwd: '/tmp/work/c1' },
      [],
      `${bin}:/usr/bin:/tmp/does-not-exist-${process.pid}/bin`,
    );
    const at = args.indexOf('--tmpfs');
    expect(args.slice(at, at + 5)).toEqual(['--tmpfs', '/tmp', '--ro-bind', root, root]);
    expect(args.filter((a) => a.startsWith('/tmp/does-not-exist'))).toEqual([]);
    await rm(root, { recursive: true, force: true });
  });

  it('binds / read-only, then a private /tmp, the writable paths and the checkout last', () => {
    expect(
      sandboxedCommand({ bwrap: 'bwrap' }, { command: 'claude', args: ['-p'], cwd: '/tmp/work/c1' }, [
        '/root/.claude',
      ]),
    ).toEqual({
      command: 'bwrap',
      args: [
        '--ro-bind',
        '/',
        '/',
        '--dev',
        '/dev',
        '--unshare-pid',
        '--proc',
        '/proc',
        '--tmpfs',
        '/tmp',
        '--bind',
        '/root/.claude',
        '/root/.claude',
        '--bind',
        '/tmp/work/c1',
        '/tmp/work/c1',
        '--chdir',
        '/tmp/work/c1',
        '--die-with-parent',
        '--',
        'claude',
        '-p',
      ],
    });
  });
});

describe('writablePaths', () => {
  it.each([
    [['~/.claude/', '~/.claude.json'], {}, ['/h/.claude', '/h/.claude.json'], ['/h/.claude']],
    [['$CODEX_HOME/'], { CODEX_HOME: '/c' }, ['/c'], ['/c']],
    // An unset variable drops the entry instead of binding the root folder.
    [['$CODEX_HOME/'], {}, [], []],
    [['relative/dir', '/', '~'], {}, ['/h'], []],
  ])('%j with %j', (entries, env, paths, create) => {
    expect(writablePaths(entries, env, '/h')).toEqual({ paths, create });
  });
});

describe('a sandboxed host', () => {
  let cluster: TestCluster;
  let outside: string;
  beforeAll(async () => {
    cluster = await startCluster({ hosts: 0 });
    // What the machine's Redis keeps under the home (its socket, password and job secret).
    await mkdir(join(cluster.config.home, 'redis'), { recursive: true });
    await writeFile(join(cluster.config.home, 'redis', 'secret'), 'home-secret-for-the-test');
    // Outside every checkout and outside /tmp: ignored by git in this repository, so only the
    // sandbox (not the origin guard) stands between the agent and it.
    outside = join(ROOT, 'node_modules', '.cache', `sandbox-escape-${process.pid}`);
    await mkdir(outside, { recursive: true });
  });
  afterAll(async () => {
    await cluster?.stop();
    await rm(outside, { recursive: true, force: true });
  });

  it('lets the agent write its checkout and nothing outside it', async () => {
    await cluster.addHost({ hostId: 'sandboxed', sandbox: { bwrap: 'bwrap' } });
    const target = join(outside, 'escaped.txt');
    const tmpTarget = join(tmpdir(), `flotilla-sandbox-probe-${process.pid}.txt`);
    // The program prints the error code, so the result shows why the write failed.
    const write = (path: string) =>
      `- run: { argv: [node, -e, "try { require('fs').writeFileSync('${path}', 'x'); console.log('wrote') } catch (e) { console.log(e.code); process.exit(1) }"], allow_failure: true }`;
    const status = await cluster.run(
      [
        'goal: Try to leave the sandbox',
        'workspace: ./ws',
        'defaults: { max_attempts: 1, timeout: 60s }',
        'tasks:',
        '  - id: escape',
        '    title: Write inside and outside',
        '    critic: false',
        '    capability: code_implementation',
        '    exit_criteria: ["test -f inside.txt"]',
        '    description: |',
        indent(
          sim([write(target), write(tmpTarget), '- write: { path: inside.txt, content: "ok" }'].join('\n')),
        ),
      ].join('\n'),
    );
    const run = (await cluster.client.store.getAudit(status.id)).find((e) => e.stage === 'run');
    expect(status.tasks[0]?.status, JSON.stringify(run)).toBe('completed');
    expect(existsSync(target)).toBe(false);
    // /tmp inside the sandbox is private: the write succeeded there and vanished with it.
    expect(existsSync(tmpTarget)).toBe(false);
    const result = run?.files?.['result.md'] ?? '';
    expect(result).toMatch(/escaped\.txt.*: exit 1\n\n\s+```\n\s+EROFS\n/);
    expect(result).toMatch(/flotilla-sandbox-probe-.*: exit 0\n\n\s+```\n\s+wrote\n/);
  });

  it("hides the host's processes and the machine's Redis folder from the agent", async () => {
    // Made before any host of this file starts (beforeAll): every one of them hides it.
    const redisDir = join(cluster.config.home, 'redis');
    await cluster.addHost({ hostId: 'sandboxed-2', sandbox: { bwrap: 'bwrap' } });
    const probe = (script: string) =>
      `- run: { argv: [node, -e, ${JSON.stringify(script)}], allow_failure: true }`;
    const status = await cluster.run(
      [
        'goal: Look for the cluster from inside the sandbox',
        'workspace: ./ws',
        'defaults: { max_attempts: 1, timeout: 60s }',
        'tasks:',
        '  - id: look',
        '    title: Look around',
        '    critic: false',
        '    capability: code_implementation',
        '    exit_criteria: ["test -f inside.txt"]',
        '    description: |',
        indent(
          sim(
            [
              probe(
                `const fs = require('fs'); console.log('pids ' + fs.readdirSync('/proc').filter((n) => /^[0-9]+$/.test(n)).length)`,
              ),
              probe(
                `try { require('fs').readFileSync('/proc/${process.pid}/environ'); console.log('host environ read') } catch (e) { console.log('environ ' + e.code) }`,
              ),
              probe(
                `console.log('redis dir [' + require('fs').readdirSync(${JSON.stringify(redisDir)}).join(',') + ']')`,
              ),
              '- write: { path: inside.txt, content: "ok" }',
            ].join('\n'),
          ),
        ),
      ].join('\n'),
    );
    const run = (await cluster.client.store.getAudit(status.id)).find((e) => e.stage === 'run');
    expect(status.tasks[0]?.status, JSON.stringify(run)).toBe('completed');
    const result = run?.files?.['result.md'] ?? '';
    // bwrap, the sim and the probe: a handful, never the host's hundreds.
    const pids = Number(/pids (\d+)/.exec(result)?.[1]);
    expect(pids).toBeGreaterThan(0);
    expect(pids).toBeLessThan(10);
    expect(result).toContain('environ ENOENT');
    // (The result quotes each command too: only an output line of its own would say it.)
    expect(result).not.toMatch(/\n\s+host environ read\n/);
    expect(result).toContain('redis dir []');
  });

  it('refuses to start when bwrap is not installed', async () => {
    await expect(
      cluster.addHost({ hostId: 'no-bwrap', sandbox: { bwrap: '/nonexistent/bwrap' } }),
    ).rejects.toThrow(
      '--sandbox: /nonexistent/bwrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)',
    );
  });

  it('refuses to start, quoting bwrap, when it cannot make namespaces (flotilla worker --sandbox)', async () => {
    // A stand-in for bwrap in a container without user namespaces: what bwrap prints there.
    const bin = await mkdtemp(join(tmpdir(), 'flotilla-fake-bwrap-'));
    const said =
      'bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces.';
    await writeFile(join(bin, 'bwrap'), `#!/bin/sh\necho '${said}' >&2\nexit 1\n`);
    await chmod(join(bin, 'bwrap'), 0o755);
    try {
      const run = await execa('node', [join(ROOT, 'bin', 'flotilla.js'), 'worker', '--sandbox'], {
        env: {
          ...process.env,
          PATH: `${bin}${delimiter}${process.env.PATH ?? ''}`,
          REDIS_URL: cluster.redis.url,
        },
        reject: false,
        timeout: 60_000,
      });
      expect(run.exitCode).toBe(3);
      expect(run.stderr.trim()).toBe(`flotilla: --sandbox: bwrap cannot run here (exit 1): ${said}`);
    } finally {
      await rm(bin, { recursive: true, force: true });
    }
  });
});
