import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { execa } from 'execa';
import { FlotillaError } from '../../shared/errors.js';

/**
 * `flotilla worker --sandbox`: every agent CLI runs under bubblewrap (`bwrap`, Debian's
 * `bubblewrap`) with the whole file system read-only except its checkout, a private /tmp and the
 * CLI's own config and cache folders (the adapter's `sandbox_writable`), so an agent can never
 * write outside its checkout. It also runs in a PID namespace of its own, so the host's processes
 * (flotilla's, and their environments under /proc) are not there to read, and what the host keeps
 * of the cluster (the machine's Redis socket, password and job secret under FLOTILLA_HOME's
 * `redis/`) is hidden behind an empty folder. The network stays shared: the CLIs need their APIs,
 * so a Redis on a TCP port (REDIS_URL) is reachable if an agent knew where and how (it is not in
 * its environment).
 */
export interface Sandbox {
  /** The bwrap program; `bwrap` on PATH unless a test names another. */
  readonly bwrap: string;
  /** Folders the CLI sees empty (the host's Redis folder); each must exist. */
  readonly hidden?: readonly string[];
}

/** The argument array that runs `command args` in the sandbox; pure, so it is tested by table. */
export function sandboxedCommand(
  sandbox: Sandbox,
  run: { readonly command: string; readonly args: readonly string[]; readonly cwd: string },
  writable: readonly string[],
  searchPath = '',
): { command: string; args: string[] } {
  const binds = writable.flatMap((path) => ['--bind', path, path]);
  // The private /tmp hides the host's: a CLI installed under /tmp (a clone or a CI checkout there,
  // its node_modules/.bin on PATH) would vanish. Each such tree comes back read-only.
  const underTmp = [...searchPath.split(':'), run.command]
    .filter((path) => path.startsWith('/tmp/'))
    .map((path) => `/tmp/${path.slice(5).split('/')[0]}`)
    .filter((path, i, all) => path !== '/tmp/' && all.indexOf(path) === i && existsSync(path));
  const visible = underTmp.flatMap((path) => ['--ro-bind', path, path]);
  const hidden = (sandbox.hidden ?? []).flatMap((path) => ['--tmpfs', path]);
  return {
    command: sandbox.bwrap,
    args: [
      '--ro-bind',
      '/',
      '/',
      '--dev',
      '/dev',
      // Its own PID namespace, and a /proc that shows only it: no host process, no host environ.
      '--unshare-pid',
      '--proc',
      '/proc',
      // A private /tmp first, so a checkout under /tmp is bound on top of it, not hidden by it.
      '--tmpfs',
      '/tmp',
      ...visible,
      ...hidden,
      ...binds,
      '--bind',
      run.cwd,
      run.cwd,
      '--chdir',
      run.cwd,
      // No --new-session: flotilla kills the CLI's process group, which must include bwrap's child.
      '--die-with-parent',
      '--',
      run.command,
      ...run.args,
    ],
  };
}

/**
 * The adapter's `sandbox_writable` entries as absolute paths: `~/` is the home folder, `$NAME`
 * an environment variable (an unset one drops the entry). Paths that do not exist are left out,
 * because bwrap cannot bind what is not there; a trailing `/` asks for the folder to be made.
 */
export function writablePaths(
  entries: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
  home: string = homedir(),
): { paths: string[]; create: string[] } {
  const paths: string[] = [];
  const create: string[] = [];
  for (const entry of entries) {
    let unset = false;
    const expanded = entry.replace(/^~(?=\/|$)/, home).replace(/\$([A-Z_][A-Z0-9_]*)/g, (_, name: string) => {
      const value = env[name];
      if (!value) unset = true;
      return value ?? '';
    });
    if (unset || !isAbsolute(expanded)) continue;
    const path = expanded.replace(/\/+$/, '') || '/';
    if (path === '/') continue;
    if (expanded.endsWith('/')) create.push(path);
    paths.push(path);
  }
  return { paths, create };
}

/** Keeps the entries that exist now (after `create` was made). */
export function existing(paths: readonly string[]): string[] {
  return paths.filter((path) => existsSync(path));
}

/**
 * Run once when a host starts with --sandbox: bwrap must be installed and able to make its
 * namespaces here (a container may forbid them). The error quotes what bwrap printed.
 */
export async function assertSandboxWorks(sandbox: Sandbox): Promise<void> {
  const probe = sandboxedCommand(sandbox, { command: 'true', args: [], cwd: join('/', 'tmp') }, []);
  const result = await execa(probe.command, probe.args, { reject: false, stdin: 'ignore', timeout: 30_000 });
  if (result.exitCode === 0) return;
  const missing = result.code === 'ENOENT';
  const said = `${String(result.stderr ?? '')}\n${String(result.stdout ?? '')}`.trim().split('\n')[0] ?? '';
  throw new FlotillaError(
    'sandbox/unavailable',
    missing
      ? `--sandbox: ${sandbox.bwrap} is not installed (Debian/Ubuntu: apt-get install bubblewrap)`
      : `--sandbox: ${sandbox.bwrap} cannot run here (exit ${result.exitCode ?? 'by signal'}): ${said || 'no message'}`,
  );
}
