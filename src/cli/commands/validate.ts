import { loadMission } from '../../producer/load.js';
import { longestPath } from '../../shared/dag.js';
import { exitCodeFor, formatProblem, type Problem } from '../../shared/errors.js';
import type { MissionSpec } from '../../shared/mission.js';
import type { Io } from '../io.js';
import { adapterCapabilities } from '../run-preflight.js';

export interface ValidateArgs {
  readonly file: string;
  readonly json: boolean;
  /** Adapters whose own capability terms count as known (beside the vocabulary). */
  readonly adaptersDir?: string;
}

/** What the diagnostics commands write to; tests pass their own. */
export type CommandIo = Pick<Io, 'out' | 'err'>;

/**
 * `flotilla validate <mission.yaml>`: 0 and a one-line summary when the mission is valid, 2 and
 * one line per problem when it is not. With `--json`, stdout holds only `{ valid, problems, … }`
 * so scripts can parse it while the problems still reach a person on stderr.
 */
export async function validate(args: ValidateArgs, io: CommandIo): Promise<number> {
  let problems: Problem[];
  let warnings: Problem[];
  let mission: MissionSpec | undefined;
  try {
    const adapterTerms = args.adaptersDir ? await adapterCapabilities(args.adaptersDir) : [];
    ({ mission, problems, warnings } = await loadMission(args.file, { adapterCapabilities: adapterTerms }));
  } catch (error) {
    // loadMission returns problems rather than throwing; reaching here is our bug, still no stack trace.
    io.err(
      `${args.file}: internal error while validating: ${error instanceof Error ? error.message : String(error)}`,
    );
    return exitCodeFor('internal');
  }

  for (const problem of problems) io.err(formatProblem(problem));
  for (const warning of warnings) io.err(`warning: ${formatProblem(warning)}`);
  if (!mission || problems.length > 0) {
    if (args.json) io.out(JSON.stringify({ valid: false, problems, warnings }));
    return exitCodeFor('mission/invalid');
  }

  const shape = describeShape(mission);
  if (args.json) io.out(JSON.stringify({ valid: true, problems: [], warnings, ...shape }));
  else
    io.out(
      `${args.file}: valid — ${plural(shape.tasks, 'task')}, ${plural(shape.roots, 'root')}, longest chain ${shape.longestChain}${warnings.length > 0 ? `, ${plural(warnings.length, 'warning')}` : ''}`,
    );
  return 0;
}

function describeShape(mission: MissionSpec): { tasks: number; roots: number; longestChain: number } {
  return {
    tasks: mission.tasks.length,
    roots: mission.tasks.filter((task) => task.dependsOn.length === 0).length,
    longestChain: longestPath(mission.tasks, () => 1),
  };
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}
