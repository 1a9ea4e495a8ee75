import { parseArgs } from 'node:util';
import { DEFAULT_SLOTS, loadConfig } from '../shared/config.js';
import { exitCodeFor, FlotillaError, formatProblem, isFlotillaError } from '../shared/errors.js';
import { adaptersCheck } from './commands/adapters-check.js';
import { detect } from './commands/detect.js';
import { answer, cancel, hosts, report, status, submit } from './commands/missions.js';
import { run } from './commands/run.js';
import { validate } from './commands/validate.js';
import { worker } from './commands/worker.js';
import { type Io, processIo } from './io.js';

const HELP = `flotilla — run missions of AI coding-agent CLIs across worker hosts

Usage:
  flotilla run <mission.yaml> [--adapters DIR] [--workers N] [--slots N] [--json]
  flotilla submit <mission.yaml> [--wait] [--json]
  flotilla worker [--adapters DIR] [--host-id ID] [--slots N] [--internal CLI] [--grace SECONDS]
  flotilla status [<id>] [--json] [--watch]
  flotilla report <id> [--out DIR]
  flotilla cancel <id>
  flotilla answer <id> <task> "<text>"
  flotilla detect [--adapters DIR] [--json] [--refresh]
  flotilla hosts [--json]
  flotilla adapters check [DIR] [--json]
  flotilla validate <mission.yaml> [--json]
  flotilla board [--port N] [--host ADDR]
  flotilla plan "<goal>" [-o FILE] [--workspace DIR] [--adapters DIR] [--run]

Environment: REDIS_URL, FLOTILLA_PREFIX, FLOTILLA_ADAPTERS, FLOTILLA_AGENTS, FLOTILLA_SECRET,
FLOTILLA_BOARD_USER, FLOTILLA_BOARD_PASSWORD, FLOTILLA_HOME, FLOTILLA_LOCK_MS, FLOTILLA_LOCK_RENEW_MS,
FLOTILLA_STALLED_INTERVAL_MS, FLOTILLA_OTEL, LOG_LEVEL.
Exit codes: 0 done, 1 partial/failed/cancelled, 2 invalid input, 3 infrastructure.`;

type Options = Record<string, { type: 'string' | 'boolean'; short?: string; multiple?: boolean }>;

function parse(argv: string[], options: Options) {
  try {
    return parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  } catch (error) {
    throw new FlotillaError('usage', (error as Error).message);
  }
}

function positiveInt(value: unknown, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1)
    throw new FlotillaError('usage', `--${name}: expected a positive whole number, got '${String(value)}'`);
  return n;
}

function need(value: string | undefined, what: string): string {
  if (!value) throw new FlotillaError('usage', `missing ${what}\n\n${HELP}`);
  return value;
}

export async function main(argv: string[], io: Io = processIo): Promise<number> {
  const [command, ...rest] = argv;
  try {
    if (!command || command === '--help' || command === '-h' || command === 'help') {
      io.out(HELP);
      return command ? 0 : 2;
    }
    const config = loadConfig();
    switch (command) {
      case 'run': {
        const { values, positionals } = parse(rest, {
          adapters: { type: 'string' },
          workers: { type: 'string' },
          slots: { type: 'string' },
          internal: { type: 'string' },
          json: { type: 'boolean' },
        });
        return await run(
          {
            file: need(positionals[0], 'the mission file'),
            adaptersDir: values.adapters as string | undefined,
            workers: positiveInt(values.workers, 'workers', 1),
            slots: positiveInt(values.slots, 'slots', DEFAULT_SLOTS),
            internalCli: values.internal as string | undefined,
            json: values.json === true,
          },
          config,
          io,
        );
      }
      case 'submit': {
        const { values, positionals } = parse(rest, { wait: { type: 'boolean' }, json: { type: 'boolean' } });
        return await submit(
          {
            file: need(positionals[0], 'the mission file'),
            wait: values.wait === true,
            json: values.json === true,
          },
          config,
          io,
        );
      }
      case 'worker': {
        const { values } = parse(rest, {
          adapters: { type: 'string' },
          'host-id': { type: 'string' },
          slots: { type: 'string' },
          internal: { type: 'string' },
          grace: { type: 'string' },
        });
        return await worker(
          {
            adaptersDir: values.adapters as string | undefined,
            hostId: values['host-id'] as string | undefined,
            slots: positiveInt(values.slots, 'slots', DEFAULT_SLOTS),
            internalCli: values.internal as string | undefined,
            graceMs: positiveInt(values.grace, 'grace', 30) * 1000,
          },
          config,
          io,
        );
      }
      case 'status': {
        const { values, positionals } = parse(rest, {
          json: { type: 'boolean' },
          watch: { type: 'boolean' },
        });
        return await status(
          { id: positionals[0], json: values.json === true, watch: values.watch === true },
          config,
          io,
        );
      }
      case 'report': {
        const { values, positionals } = parse(rest, { out: { type: 'string' } });
        return await report(
          { id: need(positionals[0], 'the mission id'), out: values.out as string | undefined },
          config,
          io,
        );
      }
      case 'cancel': {
        const { positionals } = parse(rest, {});
        return await cancel({ id: need(positionals[0], 'the mission id') }, config, io);
      }
      case 'answer': {
        const { positionals } = parse(rest, {});
        return await answer(
          {
            id: need(positionals[0], 'the mission id'),
            task: need(positionals[1], 'the task id'),
            text: need(positionals[2], 'the answer text'),
          },
          config,
          io,
        );
      }
      case 'detect': {
        const { values } = parse(rest, {
          adapters: { type: 'string' },
          json: { type: 'boolean' },
          refresh: { type: 'boolean' },
        });
        return await detect(
          {
            dir: (values.adapters as string | undefined) ?? config.adaptersDir,
            json: values.json === true,
            refresh: values.refresh === true,
          },
          io,
        );
      }
      case 'hosts': {
        const { values } = parse(rest, { json: { type: 'boolean' } });
        return await hosts({ json: values.json === true }, config, io);
      }
      case 'adapters': {
        const { values, positionals } = parse(rest, { json: { type: 'boolean' } });
        if (positionals[0] !== 'check')
          throw new FlotillaError(
            'usage',
            `unknown: flotilla adapters ${positionals[0] ?? ''} (expected: flotilla adapters check [DIR])`,
          );
        return await adaptersCheck(
          { dir: positionals[1] ?? config.adaptersDir, json: values.json === true },
          io,
        );
      }
      case 'validate': {
        const { values, positionals } = parse(rest, { json: { type: 'boolean' } });
        return await validate(
          { file: need(positionals[0], 'the mission file'), json: values.json === true },
          io,
        );
      }
      case 'board': {
        const { values } = parse(rest, { port: { type: 'string' }, host: { type: 'string' } });
        const { board } = await import('./commands/board.js');
        return await board(
          {
            port: positiveInt(values.port, 'port', 3000),
            host: (values.host as string | undefined) ?? '127.0.0.1',
          },
          config,
          io,
        );
      }
      case 'plan': {
        const { values, positionals } = parse(rest, {
          out: { type: 'string', short: 'o' },
          workspace: { type: 'string' },
          adapters: { type: 'string' },
          run: { type: 'boolean' },
        });
        const { plan } = await import('./commands/plan.js');
        return await plan(
          {
            goal: need(positionals[0], 'the goal'),
            out: values.out as string | undefined,
            workspace: values.workspace as string | undefined,
            adaptersDir: values.adapters as string | undefined,
            run: values.run === true,
          },
          config,
          io,
        );
      }
      default:
        throw new FlotillaError('usage', `unknown command '${command}'\n\n${HELP}`);
    }
  } catch (error) {
    if (isFlotillaError(error)) {
      if (error.problems.length > 0) for (const problem of error.problems) io.err(formatProblem(problem));
      else io.err(`flotilla: ${error.message}`);
      return exitCodeFor(error.code);
    }
    const code = (error as NodeJS.ErrnoException).code;
    if (
      code === 'ECONNREFUSED' ||
      /ECONNREFUSED|Connection is closed/.test(String((error as Error).message))
    ) {
      io.err(`flotilla: Redis connection lost (${(error as Error).message})`);
      return 3;
    }
    io.err(`flotilla: internal error: ${(error as Error).stack ?? String(error)}`);
    return 70;
  }
}
