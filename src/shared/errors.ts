/**
 * The few error classes flotilla has. The code decides what happens next (retry, exit code); the
 * message is for a person and names the file, the place, what was expected and what came.
 */
import { redactUrlCredentials } from './url-credentials.js';

export const ERROR_CODES = [
  'usage',
  'mission/invalid',
  'mission/not-found',
  'adapter/invalid',
  'cli/not-found',
  'cli/auth',
  'cli/rate-limited',
  'cli/timeout',
  'wait/timeout',
  'job/unsigned',
  'redis/unreachable',
  'git/missing',
  'git/unsupported',
  'git/failed',
  'sandbox/unavailable',
  'host/id-in-use',
  'internal',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

/** One problem found in a user's file or object; validation returns these as data. */
export interface Problem {
  /** '' for a mission given as an object: its `path` alone says where. */
  file: string;
  line?: number;
  /** With `line`, where a YAML text puts the node at fault (counted from 1); data only, not in the message. */
  column?: number;
  path: string;
  message: string;
}

export function formatProblem(problem: Problem): string {
  const place = problem.line ? `${problem.file}:${problem.line}` : problem.file;
  if (!place) return problem.path ? `${problem.path}: ${problem.message}` : problem.message;
  return problem.path ? `${place}: ${problem.path}: ${problem.message}` : `${place}: ${problem.message}`;
}

export class FlotillaError extends Error {
  readonly code: ErrorCode;
  readonly problems: readonly Problem[];

  /** The message is for people and goes everywhere (stderr, Redis, logs): a URL's credential never does. */
  constructor(code: ErrorCode, message: string, problems: readonly Problem[] = []) {
    super(redactUrlCredentials(message));
    this.name = 'FlotillaError';
    this.code = code;
    this.problems = problems;
  }
}

export function isFlotillaError(error: unknown, code?: ErrorCode): error is FlotillaError {
  return error instanceof FlotillaError && (code === undefined || error.code === code);
}

/** Only src/cli turns codes into exit codes; this table is the single place that says how. */
export function exitCodeFor(code: ErrorCode): number {
  switch (code) {
    case 'usage':
    case 'mission/invalid':
    case 'mission/not-found':
    case 'adapter/invalid':
    // A second host of one cluster started with an id a live host on this machine holds.
    case 'host/id-in-use':
      return 2;
    case 'redis/unreachable':
    case 'git/missing':
    case 'git/unsupported':
    case 'sandbox/unavailable':
    // No agent CLI on a host is a missing piece of the machine, not a mistake in the user's input.
    case 'cli/not-found':
      return 3;
    default:
      return 1;
  }
}
