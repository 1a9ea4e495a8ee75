import { DEFAULT_SLOTS } from '../shared/config.js';
import { FlotillaError } from '../shared/errors.js';
import { type CommandSpec, type OptionSpec, positiveInt, required, stringOption } from './command-spec.js';
import { adaptersCheck } from './commands/adapters-check.js';
import { detect } from './commands/detect.js';
import { answer, cancel, hosts, report, status, submit } from './commands/missions.js';
import { prune } from './commands/prune.js';
import { run } from './commands/run.js';
import { validate } from './commands/validate.js';
import { worker } from './commands/worker.js';

/**
 * Every `flotilla` command, in the order help lists them. Adding a command or a flag is one change
 * here: an entry (or an option inside one) with its help text, an example and the call into
 * commands/<name>.ts. Parsing, `--help`, usage errors and the README check
 * (test/unit/cli-help.test.ts) all read this table.
 */

const adapters: OptionSpec = {
  type: 'string',
  value: 'DIR',
  help: 'folder of adapter files (default: FLOTILLA_ADAPTERS, else the adapters/ shipped with flotilla)',
};
const json: OptionSpec = { type: 'boolean', help: 'print JSON for scripts' };
const slots: OptionSpec = {
  type: 'string',
  value: 'N',
  help: `CLI processes at once per host (default ${DEFAULT_SLOTS})`,
};
const internal: OptionSpec = {
  type: 'string',
  value: 'CLI',
  help: "adapter (by its `cli` name) that serves dispatch.internal, for tasks no CLI's capabilities match",
};

export const COMMANDS: readonly CommandSpec[] = [
  {
    name: 'run',
    args: '<mission.yaml>',
    maxPositionals: 1,
    summary:
      'One machine, one command: uses REDIS_URL or starts a private redis-server, starts local worker hosts, submits the mission, shows progress, prints the summary and exits (0 done, 1 partial/failed/cancelled). Ctrl-C cancels the mission; a second Ctrl-C exits at once.',
    options: {
      adapters,
      workers: { type: 'string', value: 'N', help: 'local worker hosts to start (default 1)' },
      slots,
      internal,
      json: {
        type: 'boolean',
        help: 'progress on stderr; the final status object as the last line of stdout',
      },
    },
    examples: [
      'flotilla run mission.yaml',
      'flotilla run mission.yaml --adapters examples/adapters --workers 2',
    ],
    run: ({ values, positionals }, { config, io }) =>
      run(
        {
          file: required({ name: 'run' }, positionals[0], 'the mission file'),
          adaptersDir: stringOption(values.adapters),
          workers: positiveInt(values.workers, 'workers', 1),
          slots: positiveInt(values.slots, 'slots', DEFAULT_SLOTS),
          internalCli: stringOption(values.internal),
          json: values.json === true,
        },
        config(),
        io,
      ),
  },
  {
    name: 'submit',
    args: '<mission.yaml>',
    maxPositionals: 1,
    summary:
      'Validates the mission and enqueues it on the Redis in REDIS_URL for the worker hosts there; prints the mission id as the last line of stdout.',
    options: {
      wait: { type: 'boolean', help: 'follow the mission until it ends; the exit code says how it ended' },
      json: { type: 'boolean', help: 'with --wait: the final status object as the last line of stdout' },
      adapters: {
        ...adapters,
        help: 'adapter files whose capabilities count as known when checking for typos',
      },
    },
    examples: ['flotilla submit mission.yaml', 'id=$(flotilla submit mission.yaml | tail -1)'],
    run: ({ values, positionals }, { config, io }) =>
      submit(
        {
          file: required({ name: 'submit' }, positionals[0], 'the mission file'),
          wait: values.wait === true,
          json: values.json === true,
          adaptersDir: stringOption(values.adapters),
        },
        config(),
        io,
      ),
  },
  {
    name: 'worker',
    args: '',
    maxPositionals: 0,
    summary:
      'A worker host until signalled: detects its agent CLIs, serves the capabilities they offer, advertises itself in Redis (REDIS_URL, default redis://127.0.0.1:6379). The first SIGTERM/SIGINT drains; a second stops running CLIs at once.',
    options: {
      adapters,
      'host-id': {
        type: 'string',
        value: 'ID',
        help: 'name in `flotilla hosts` (default <hostname>-<pid>-<random>)',
      },
      slots,
      internal,
      grace: {
        type: 'string',
        value: 'S',
        help: 'seconds running CLIs may finish after the first signal (default 30)',
      },
    },
    examples: ['REDIS_URL=redis://redis.internal:6379 flotilla worker --slots 4'],
    run: ({ values }, { config, io }) =>
      worker(
        {
          adaptersDir: stringOption(values.adapters),
          hostId: stringOption(values['host-id']),
          slots: positiveInt(values.slots, 'slots', DEFAULT_SLOTS),
          internalCli: stringOption(values.internal),
          graceMs: positiveInt(values.grace, 'grace', 30) * 1000,
        },
        config(),
        io,
      ),
  },
  {
    name: 'status',
    args: '[<id>]',
    maxPositionals: 1,
    summary:
      'Without an id: the latest missions, one line each. With one: its tasks (status, attempts, host, CLI, time, score) and why a queued task waits.',
    options: {
      json: { type: 'boolean', help: 'the status object (see README), one line' },
      watch: { type: 'boolean', help: 'follow until the mission ends: a live table, or a line per event' },
    },
    examples: ['flotilla status', 'flotilla status <id> --watch'],
    run: ({ values, positionals }, { config, io }) =>
      status({ id: positionals[0], json: values.json === true, watch: values.watch === true }, config(), io),
  },
  {
    name: 'report',
    args: '<id>',
    maxPositionals: 1,
    summary:
      "Writes the mission's audit trail as a folder: REPORT.md, status.json, and every attempt's prompt, result, criteria output and verdict.",
    options: {
      out: { type: 'string', value: 'DIR', help: 'where to write it (default flotilla-reports/<id>)' },
    },
    examples: ['flotilla report <id> --out /tmp/report'],
    run: ({ values, positionals }, { config, io }) =>
      report(
        { id: required({ name: 'report' }, positionals[0], 'the mission id'), out: stringOption(values.out) },
        config(),
        io,
      ),
  },
  {
    name: 'cancel',
    args: '<id>',
    maxPositionals: 1,
    summary: 'Stops a mission on every host: no new attempts start, running CLIs are killed.',
    options: {},
    examples: ['flotilla cancel <id>'],
    run: ({ positionals }, { config, io }) =>
      cancel({ id: required({ name: 'cancel' }, positionals[0], 'the mission id') }, config(), io),
  },
  {
    name: 'answer',
    args: '<id> <task> "<text>"',
    maxPositionals: 3,
    summary: 'Answers a task paused with needs_input; it resumes as a continuation attempt.',
    options: {},
    examples: ['flotilla answer <id> schema "Use PostgreSQL"'],
    run: ({ positionals }, { config, io }) =>
      answer(
        {
          id: required({ name: 'answer' }, positionals[0], 'the mission id'),
          task: required({ name: 'answer' }, positionals[1], 'the task id'),
          text: required({ name: 'answer' }, positionals[2], 'the answer text'),
        },
        config(),
        io,
      ),
  },
  {
    name: 'detect',
    args: '',
    maxPositionals: 0,
    summary:
      "Runs every adapter's detection command here and shows which CLIs a worker host started on this machine would serve, and why the others are not available.",
    options: {
      adapters,
      json,
      refresh: { type: 'boolean', help: 'run the detection commands again instead of using the cache' },
    },
    examples: ['flotilla detect', 'flotilla detect --adapters examples/adapters'],
    run: ({ values }, { config, io }) =>
      detect(
        {
          dir: stringOption(values.adapters) ?? config().adaptersDir,
          json: values.json === true,
          refresh: values.refresh === true,
        },
        io,
      ),
  },
  {
    name: 'hosts',
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
    args: '',
    maxPositionals: 0,
    summary:
      'Bull Board for every flotilla queue, plus the mission view (graph, gates, scores) and metrics, until stopped. Beyond loopback it needs FLOTILLA_BOARD_USER and FLOTILLA_BOARD_PASSWORD.',
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

export function findCommand(name: string): CommandSpec | undefined {
  return COMMANDS.find((command) => command.name === name);
}
