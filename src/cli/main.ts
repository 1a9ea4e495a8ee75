import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Config, loadConfig, PACKAGE_ROOT } from '../shared/config.js';
import { exitCodeFor, FlotillaError, formatProblem, isFlotillaError } from '../shared/errors.js';
import { describeLostRedis, isRedisConnectionError } from '../shared/redis-lost.js';
import { closestKey } from '../shared/validation/schema-problems.js';
import { formatCommandHelp, parseCommand, usageLine, wantsHelp, wrap } from './command-spec.js';
import { COMMANDS, findCommand } from './command-table.js';
import { type Io, processIo } from './io.js';

/** The environment variables flotilla reads; help and the README list the same set. */
export const ENVIRONMENT = [
  'REDIS_URL',
  'FLOTILLA_PREFIX',
  'FLOTILLA_ADAPTERS',
  'FLOTILLA_AGENTS',
  'FLOTILLA_SECRET',
  'FLOTILLA_SIGNING_KEY',
  'FLOTILLA_BOARD_USER',
  'FLOTILLA_BOARD_PASSWORD',
  'FLOTILLA_HOME',
  'FLOTILLA_LOCK_MS',
  'FLOTILLA_LOCK_RENEW_MS',
  'FLOTILLA_STALLED_INTERVAL_MS',
  'FLOTILLA_OTEL',
  'FLOTILLA_FORGE_TOKEN',
  'FLOTILLA_DELIVER_BACKOFF_MS',
  'LOG_LEVEL',
] as const;

export function version(): string {
  const manifest = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as {
    version: string;
  };
  return manifest.version;
}

export function formatHelp(): string {
  const width = Math.max(...COMMANDS.map((command) => usageLine(command).length));
  return [
    'flotilla — run missions of AI coding-agent CLIs across worker hosts',
    '',
    'Usage:',
    ...COMMANDS.map((command) => `  ${usageLine(command).padEnd(width)}  ${command.brief}`),
    '',
    'flotilla <command> --help shows its options and an example; flotilla --version the version.',
    '',
    wrap(`Environment: ${ENVIRONMENT.join(', ')}.`),
    'Exit codes: 0 done, 1 partial/failed/cancelled, 2 invalid input, 3 infrastructure (Redis, git).',
  ].join('\n');
}

export async function main(argv: string[], io: Io = processIo): Promise<number> {
  const [command, ...rest] = argv;
  try {
    if (command === undefined) {
      io.err(formatHelp());
      return 2;
    }
    if (command === '--help' || command === '-h' || command === 'help') {
      const about = rest[0] === undefined ? undefined : findCommand(rest[0]);
      if (rest[0] !== undefined && !about) throw unknownCommand(rest[0]);
      io.out(about ? formatCommandHelp(about) : formatHelp());
      return 0;
    }
    if (command === '--version' || command === '-v' || command === 'version') {
      io.out(`flotilla ${version()}`);
      return 0;
    }
    const spec = findCommand(command);
    if (!spec) throw unknownCommand(command);
    if (wantsHelp(rest)) {
      io.out(formatCommandHelp(spec));
      return 0;
    }
    const parsed = parseCommand(spec, rest);
    let config: Config | undefined;
    return await spec.run(parsed, { config: () => (config ??= loadConfig()), io });
  } catch (error) {
    return reportError(error, io);
  }
}

function unknownCommand(name: string): FlotillaError {
  const guess = closestKey(
    name,
    COMMANDS.map((command) => command.name),
  );
  const hint = guess ? ` — did you mean '${guess}'?` : '';
  return new FlotillaError(
    'usage',
    `unknown command '${name}'${hint} (commands: ${COMMANDS.map((c) => c.name).join(', ')}; see flotilla --help)`,
  );
}

/** Every way a command fails ends here: one line per problem, the exit code from the error's code. */
function reportError(error: unknown, io: Io): number {
  if (isFlotillaError(error)) {
    if (error.problems.length > 0) for (const problem of error.problems) io.err(formatProblem(problem));
    else io.err(`flotilla: ${error.message}`);
    return exitCodeFor(error.code);
  }
  if (isRedisConnectionError(error)) {
    io.err(`flotilla: ${describeLostRedis(error)}`);
    return exitCodeFor('redis/unreachable');
  }
  io.err(`flotilla: internal error: ${(error as Error).stack ?? String(error)}`);
  return 70;
}
