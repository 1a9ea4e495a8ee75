import { type Logger, pino } from 'pino';

export type { Logger };

/**
 * pino JSON logs; pretty on a terminal. Secrets never reach a log: the redact list covers the
 * places they could appear (environment copies, signatures, auth headers).
 */
export function createLogger(options: { level?: string; name?: string; pretty?: boolean } = {}): Logger {
  const pretty = options.pretty ?? process.stderr.isTTY === true;
  return pino(
    {
      name: options.name ?? 'flotilla',
      level: options.level ?? process.env.LOG_LEVEL ?? 'info',
      redact: {
        paths: ['sig', '*.sig', 'env', '*.env', 'secret', '*.secret', 'headers.authorization', 'password'],
        censor: '[redacted]',
      },
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
