import { type Logger, type LoggerOptions, pino } from 'pino';
import { redactUrlCredentials } from './url-credentials.js';

export type { Logger };

/**
 * What every flotilla logger hides: fields that hold secrets by name (environment copies,
 * signatures, auth headers), and a URL's credential wherever it appears in a line (a message, an
 * error's text, a field), masked in the written JSON so no field is missed.
 */
export const LOG_SECRECY: Pick<LoggerOptions, 'redact' | 'hooks'> = {
  redact: {
    paths: ['sig', '*.sig', 'env', '*.env', 'secret', '*.secret', 'headers.authorization', 'password'],
    censor: '[redacted]',
  },
  hooks: { streamWrite: redactUrlCredentials },
};

/** pino JSON logs; pretty on a terminal. Secrets never reach a log (LOG_SECRECY). */
export function createLogger(options: { level?: string; name?: string; pretty?: boolean } = {}): Logger {
  const pretty = options.pretty ?? process.stderr.isTTY === true;
  return pino(
    {
      name: options.name ?? 'flotilla',
      level: options.level ?? process.env.LOG_LEVEL ?? 'info',
      ...LOG_SECRECY,
      base: undefined,
    },
    pretty
      ? pino.transport({
          target: 'pino-pretty',
          options: { destination: 2, ignore: 'name', translateTime: 'HH:MM:ss' },
        })
      : pino.destination(2),
  );
}

/** A logger that drops everything, for tests and library users who bring their own. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
