import { exitCodeFor, formatProblem } from '../../shared/errors.js';
import { type AuthCheck, type AuthState, checkAuth } from '../../workers/agent/adapters/auth-check.js';
import { type DetectedCli, detectClis } from '../../workers/agent/adapters/detect.js';
import { type CommandIo, readAdaptersFor } from './read-adapters.js';

export interface DetectArgs {
  readonly dir: string;
  readonly json: boolean;
  readonly refresh: boolean;
  /** Also ask each installed CLI whether it is logged in (`auth_check_command`). */
  readonly checkAuth?: boolean;
}

/**
 * `flotilla detect [--json] [--refresh] [--check-auth]`: runs every adapter's detection command on
 * this machine and prints which CLIs a worker started here would serve; with --check-auth, also
 * whether each installed CLI is logged in. Not finding a CLI is an answer, not an
 * error (exit 0); broken adapter files are exit 2, as for `adapters check`.
 */
export async function detect(args: DetectArgs, io: CommandIo): Promise<number> {
  const loaded = await readAdaptersFor(args.dir, io);
  if (typeof loaded === 'number') return loaded;
  if (loaded.problems.length > 0) {
    for (const problem of loaded.problems) io.err(formatProblem(problem));
    io.err(`flotilla detect: fix the adapter files first (flotilla adapters check ${args.dir})`);
    return exitCodeFor('adapter/invalid');
  }

  const detected = await detectClis(loaded.adapters, { refresh: args.refresh });
  // The checks run side by side: a prompt-based one takes seconds.
  const auth = args.checkAuth
    ? await Promise.all(detected.map((cli) => (cli.available ? checkAuth(cli.adapter) : undefined)))
    : [];
  if (args.json) {
    io.out(JSON.stringify(detected.map((cli, i) => toJson(cli, auth[i]))));
    return 0;
  }
  if (detected.length === 0) {
    io.out(`${args.dir}: no available adapters to detect`);
    return 0;
  }
  for (const line of table(detected)) io.out(line);
  const count = detected.filter((cli) => cli.available).length;
  io.out('');
  io.out(`${count} of ${detected.length} CLIs available`);
  if (args.checkAuth) {
    io.out('');
    detected.forEach((cli, i) => {
      const check = auth[i];
      if (check)
        io.out(`${cli.adapter.cli}: ${AUTH_WORDS[check.state]}${check.message ? ` — ${check.message}` : ''}`);
    });
  }
  return 0;
}

const AUTH_WORDS: Record<AuthState, string> = {
  'logged-in': 'logged in',
  'not-logged-in': 'NOT logged in',
  unknown: 'login unknown',
  'not-checked': 'login not checked',
};

function toJson(cli: DetectedCli, auth?: AuthCheck) {
  return {
    cli: cli.adapter.cli,
    displayName: cli.adapter.displayName,
    available: cli.available,
    version: cli.version ?? null,
    capabilities: [...cli.adapter.config.capabilities],
    ...(cli.reason ? { reason: cli.reason } : {}),
    ...(auth ? { auth } : {}),
  };
}

function table(detected: readonly DetectedCli[]): string[] {
  const rows = [
    ['CLI', 'NAME', 'STATUS', 'VERSION / REASON', 'CAPABILITIES'],
    ...detected.map((cli) => [
      cli.adapter.cli,
      cli.adapter.displayName,
      cli.available ? 'available' : 'not installed',
      cli.available ? (cli.version ?? '') : (cli.reason ?? ''),
      cli.adapter.config.capabilities.join(', '),
    ]),
  ];
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => row[column]?.length ?? 0))) ?? [];
  return rows.map((row) =>
    row
      .map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column] ?? 0)))
      .join('  ')
      .trimEnd(),
  );
}
