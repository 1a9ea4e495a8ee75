import { type Logger, pino } from 'pino';
import { LOG_SECRECY } from '../shared/logger.js';

/** pino's numeric levels, as a person reads them. */
const LEVEL_NAMES: Readonly<Record<number, string>> = {
  10: 'trace',
  20: 'debug',
  30: 'info',
  40: 'warning',
  50: 'error',
  60: 'fatal',
};

/** Fields every line carries or that only a machine wants; the rest are shown as `key=value`. */
const HIDDEN = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'name', 'host']);

/**
 * Turns one pino JSON line into one sentence: `warning [local-1]: job failed (jobId=…, err=…)`.
 * Pure, so the table of shapes it meets is tested without a logger.
 */
export function formatLogLine(json: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json.trimEnd();
  }
  const level = LEVEL_NAMES[Number(entry.level)] ?? 'log';
  const host = typeof entry.host === 'string' ? ` [${entry.host}]` : '';
  const extras = Object.entries(entry)
    .filter(([key]) => !HIDDEN.has(key))
    .map(([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`);
  const message = typeof entry.msg === 'string' ? entry.msg : '';
  return `${level}${host}: ${message}${extras.length > 0 ? ` (${extras.join(', ')})` : ''}`;
}

/**
 * The logger of commands a person watches (`run`): the same pino calls as a worker host's, but
 * each entry is one plain line through the command's own stderr writer, never raw JSON (pipes and
 * CI included) and never a crash when that reader is gone. `flotilla worker` keeps JSON logs, for
 * log collectors.
 */
export function createHumanLogger(
  write: (line: string) => void,
  level: string,
): { logger: Logger; mute(): void } {
  let muted = false;
  const logger = pino(
    {
      level,
      base: undefined,
      ...LOG_SECRECY,
    },
    {
      write: (line: string) => {
        if (!muted) write(formatLogLine(line));
      },
    },
  );
  // Once a run has said why it ends (Redis lost), the hosts' shutdown chatter would only bury it.
  return {
    logger,
    mute: () => {
      muted = true;
    },
  };
}
