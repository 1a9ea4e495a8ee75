import { exitCodeFor, formatProblem, isFlotillaError } from '../../shared/errors.js';
import { type LoadedAdapters, loadAdapters } from '../../workers/agent/adapters/load-adapters.js';
import type { Io } from '../io.js';

/** What the diagnostics commands write to; tests pass their own. */
export type CommandIo = Pick<Io, 'out' | 'err'>;

/**
 * Reads an adapter folder for a diagnostics command: the loaded adapters, or the exit code after
 * the problems went to stderr (a folder that cannot be read at all, or an unexpected error).
 * `onFailure` lets `adapters check --json` still print its empty JSON document.
 */
export async function readAdaptersFor(
  dir: string,
  io: CommandIo,
  onFailure: (problems: readonly unknown[]) => void = () => {},
): Promise<LoadedAdapters | number> {
  try {
    return await loadAdapters(dir);
  } catch (error) {
    if (isFlotillaError(error)) {
      io.err(error.problems.length > 0 ? error.problems.map(formatProblem).join('\n') : error.message);
      onFailure(error.problems);
      return exitCodeFor(error.code);
    }
    io.err(
      `${dir}: internal error while reading adapters: ${error instanceof Error ? error.message : String(error)}`,
    );
    return exitCodeFor('internal');
  }
}
