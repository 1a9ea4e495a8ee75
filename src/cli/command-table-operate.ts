import { FlotillaError } from '../shared/errors.js';
import { adapters, json } from './command-options.js';
import { type CommandSpec, positiveInt, required, stringOption } from './command-spec.js';
import { adaptersCheck } from './commands/adapters-check.js';
import { detect } from './commands/detect.js';
import { logs } from './commands/logs.js';
import { hosts } from './commands/missions.js';
import { prune } from './commands/prune.js';
import { validate } from './commands/validate.js';

/** The diagnostics and operating commands, listed after the mission commands (command-table.ts). */
export const OPERATE_COMMANDS: readonly CommandSpec[] = [
  {
    name: 'logs',
    brief: "a task's live CLI output, from any machine",
    args: '<id> <task>',
    maxPositionals: 2,
    summary:
      "Prints what the task's agent CLI prints, on whichever host it runs (its stdout on stdout, its stderr on stderr), read from Redis: with --follow until the run ends. Once an attempt has ended, the end of its output as the audit trail keeps it.",
    options: {
      follow: { type: 'boolean', help: 'keep reading until the run ends (waits for a task not started yet)' },
      attempt: { type: 'string', value: 'N', help: "that attempt's output (default the current one)" },
    },
    examples: ['flotilla logs <id> api --follow', 'flotilla logs <id> api --attempt 1'],
    run: ({ positionals, values }, { config, io }) =>
      logs(
        {
          id: required({ name: 'logs' }, positionals[0], 'the mission id'),
          task: required({ name: 'logs' }, positionals[1], 'the task id'),
          follow: values.follow === true,
          ...(values.attempt !== undefined ? { attempt: positiveInt(values.attempt, 'attempt', 1) } : {}),
        },
        config(),
        io,
      ),
  },
  {
    name: 'detect',
    brief: 'which agent CLIs this machine has',
    args: '',
    maxPositionals: 0,
    summary:
      "Runs every adapter's detection command here and shows which CLIs a worker host started on this machine would serve, and why the others are not available.",
    options: {
      adapters,
      json,
      refresh: { type: 'boolean', help: 'run the detection commands again instead of using the cache' },
      'check-auth': {
        type: 'boolean',
        help: "also ask each installed CLI whether it is logged in (the adapter's auth_check_command)",
      },
    },
    examples: [
      'flotilla detect',
      'flotilla detect --check-auth',
      'flotilla detect --adapters examples/adapters',
    ],
    run: ({ values }, { config, io }) =>
      detect(
        {
          dir: stringOption(values.adapters) ?? config().adaptersDir,
          json: values.json === true,
          refresh: values.refresh === true,
          checkAuth: values['check-auth'] === true,
        },
        io,
      ),
  },
  {
    name: 'hosts',
    brief: 'the live worker hosts',
    args: '',
    maxPositionals: 0,
    summary:
      'The live worker hosts in Redis: CLIs, capabilities, slots, heartbeat, disabled or cooling-down CLIs.',
    options: { json },
    examples: ['flotilla hosts'],
    run: ({ values }, { config, io }) => hosts({ json: values.json === true }, config(), io),
  },
  {
    name: 'adapters',
    brief: 'what the adapter files load',
    args: 'check [DIR]',
    maxPositionals: 2,
    summary: 'Loads the adapter files and shows what loads, what each offers, and why anything is skipped.',
    options: { json },
    examples: ['flotilla adapters check', 'flotilla adapters check examples/adapters'],
    run: ({ values, positionals }, { config, io }) => {
      if (positionals[0] !== 'check') {
        throw usage(
          `adapters: unknown subcommand '${positionals[0] ?? ''}' (expected: flotilla adapters check [DIR])`,
        );
      }
      return adaptersCheck({ dir: positionals[1] ?? config().adaptersDir, json: values.json === true }, io);
    },
  },
  {
    name: 'validate',
    brief: 'check a mission file without running it',
    args: '<mission.yaml>',
    maxPositionals: 1,
    summary:
      'Checks a mission file without running it: every problem at once with file, line and what was expected (exit 2), and warnings such as a capability no adapter knows (exit 0).',
    options: {
      json,
      adapters: {
        ...adapters,
        help: 'adapter files whose capabilities count as known when checking for typos',
      },
    },
    examples: ['flotilla validate mission.yaml'],
    run: ({ values, positionals }, { config, io }) =>
      validate(
        {
          file: required({ name: 'validate' }, positionals[0], 'the mission file'),
          json: values.json === true,
          adaptersDir: stringOption(values.adapters) ?? config().adaptersDir,
        },
        io,
      ),
  },
  {
    name: 'board',
    brief: 'Bull Board and the mission view',
    args: '',
    maxPositionals: 0,
    summary:
      'Bull Board for every flotilla queue, plus the mission view (graph, gates, scores), metrics and the HTTP API at /api/v1 (submit, status, events, cancel, answer; OpenAPI at /api/v1/openapi.json), until stopped. Beyond loopback it needs FLOTILLA_BOARD_USER and FLOTILLA_BOARD_PASSWORD, and its API needs FLOTILLA_API_TOKEN (sent as Authorization: Bearer <token>).',
    options: {
      port: { type: 'string', value: 'N', help: 'port to listen on (default 3000)' },
      host: { type: 'string', value: 'ADDR', help: 'address to bind (default 127.0.0.1)' },
    },
    examples: ['flotilla board --port 3000'],
    run: async ({ values }, { config, io }) => {
      const { board } = await import('./commands/board.js');
      return board(
        { port: positiveInt(values.port, 'port', 3000), host: stringOption(values.host) ?? '127.0.0.1' },
        config(),
        io,
      );
    },
  },
  {
    name: 'plan',
    brief: 'ask a planning CLI to write a mission file',
    args: '"<goal>"',
    maxPositionals: 1,
    summary: 'Asks a planning CLI to write a mission file for the goal, then validates it.',
    options: {
      out: {
        type: 'string',
        short: 'o',
        value: 'FILE',
        help: 'where to write the mission (default mission.yaml)',
      },
      workspace: { type: 'string', value: 'DIR', help: 'the repository the mission works on (default .)' },
      adapters,
      run: { type: 'boolean', help: 'run the mission once it is valid, as flotilla run does' },
    },
    examples: ['flotilla plan "Add a stats module to the calculator" -o mission.yaml'],
    run: async ({ values, positionals }, { config, io }) => {
      const { plan } = await import('./commands/plan.js');
      return plan(
        {
          goal: required({ name: 'plan' }, positionals[0], 'the goal'),
          out: stringOption(values.out),
          workspace: stringOption(values.workspace),
          adaptersDir: stringOption(values.adapters),
          run: values.run === true,
        },
        config(),
        io,
      );
    },
  },
  {
    name: 'prune',
    brief: 'delete finished missions past an age',
    args: '',
    maxPositionals: 0,
    summary:
      "Deletes finished missions older than --older-than from Redis (state, events, audit trail) and removes empty work folders under FLOTILLA_HOME. Running missions are never touched; the mission's git branch stays.",
    options: {
      'older-than': {
        type: 'string',
        value: 'AGE',
        help: 'age of a finished mission to delete (default 30d)',
      },
      'dry-run': { type: 'boolean', help: 'list what would be deleted, delete nothing' },
    },
    examples: ['flotilla prune --older-than 7d --dry-run'],
    run: ({ values }, { config, io }) =>
      prune(
        { olderThan: stringOption(values['older-than']) ?? '30d', dryRun: values['dry-run'] === true },
        config(),
        io,
      ),
  },
];

function usage(message: string): Error {
  return new FlotillaError('usage', message);
}
