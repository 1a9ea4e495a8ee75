import { type DetectedCli, detectClis } from '../../agent/adapters/detect.js';
import { exitCodeFor, formatProblem } from '../../shared/errors.js';
import { type CommandIo, readAdaptersFor } from './read-adapters.js';

export interface DetectArgs {
  readonly dir: string;
  readonly json: boolean;
  readonly refresh: boolean;
}

/**
 * `flotilla detect [--json] [--refresh]`: runs every adapter's detection command on this machine
 * and prints which CLIs a worker started here would serve. Not finding a CLI is an answer, not an
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
  if (args.json) {
    io.out(JSON.stringify(detected.map(toJson)));
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
  return 0;
}

function toJson(cli: DetectedCli) {
  return {
    cli: cli.adapter.cli,
    displayName: cli.adapter.displayName,
    available: cli.available,
    version: cli.version ?? null,
    capabilities: [...cli.adapter.config.capabilities],
    ...(cli.reason ? { reason: cli.reason } : {}),
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
