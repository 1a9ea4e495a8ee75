import { DEFAULT_SLOTS } from '../shared/config.js';
import { parseLabel } from '../workers/agent/host-facts.js';
import { adapters, internal, slots } from './command-options.js';
import { type CommandSpec, listOption, positiveInt, required, stringOption } from './command-spec.js';
import { OPERATE_COMMANDS } from './command-table-operate.js';
import { deliver } from './commands/deliver.js';
import { answer, approve, cancel, report, status, submit } from './commands/missions.js';
import { receipt, verify } from './commands/receipt.js';
import { run } from './commands/run.js';
import { worker } from './commands/worker.js';

/**
 * Every `flotilla` command, in the order help lists them: the mission commands here, the
 * diagnostics and operating ones in command-table-operate.ts. Adding a command or a flag is one
 * change: an entry (or an option inside one) with its help text, an example and the call into
 * commands/<name>.ts, plus its row in the README's command table. Parsing, `--help`, usage errors
 * and the README check (test/cli/help.test.ts) all read this table.
 */
const MISSION_COMMANDS: readonly CommandSpec[] = [
  {
    name: 'run',
    brief: 'run a mission on this machine, start to end',
    args: '<mission.yaml>',
    maxPositionals: 1,
    summary:
      "One machine, one command: uses REDIS_URL or the machine's own redis-server under FLOTILLA_HOME (a unix socket only you can reach, its data kept for status, report and receipt, every job signed), starts local worker hosts, submits the mission, shows progress, prints the summary and exits (0 done, 1 partial/failed/cancelled). Ctrl-C cancels the mission; a second Ctrl-C exits at once.",
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
    brief: 'validate and enqueue a mission for the cluster',
    args: '<mission.yaml>',
    maxPositionals: 1,
    summary:
      "Validates the mission and enqueues it on the Redis in REDIS_URL (unset, the machine's own) for the worker hosts there; prints the mission id as the last line of stdout.",
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
    brief: 'serve missions as a worker host until signalled',
    args: '',
    maxPositionals: 0,
    summary:
      "A worker host until signalled: detects its agent CLIs, serves the capabilities they offer, advertises itself in Redis (REDIS_URL; unset, the machine's own redis-server under FLOTILLA_HOME, shared with run, submit and the rest). The first SIGTERM/SIGINT drains; a second stops running CLIs at once.",
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
      sandbox: {
        type: 'boolean',
        help: 'run every agent CLI under bubblewrap (bwrap), writable only in its checkout',
      },
      tool: {
        type: 'string',
        value: 'NAME',
        multiple: true,
        help: "a toolchain to probe and advertise for tasks' requires.tools, like docker or 'ruby=ruby -v' (repeatable; default git, node)",
      },
      label: {
        type: 'string',
        value: 'KEY=VALUE',
        multiple: true,
        help: "an operator label for tasks' requires.labels, like region=eu (repeatable)",
      },
      facts: {
        type: 'string',
        value: 'FILE',
        help: 'a YAML file whose os, arch, tools and labels replace what the host detects',
      },
    },
    examples: [
      'REDIS_URL=redis://redis.internal:6379 flotilla worker --slots 4',
      'flotilla worker --tool docker --tool python3 --label gpu=a100 --label region=eu',
    ],
    run: ({ values }, { config, io }) =>
      worker(
        {
          adaptersDir: stringOption(values.adapters),
          hostId: stringOption(values['host-id']),
          slots: positiveInt(values.slots, 'slots', DEFAULT_SLOTS),
          internalCli: stringOption(values.internal),
          graceMs: positiveInt(values.grace, 'grace', 30) * 1000,
          sandbox: values.sandbox === true,
          facts: {
            tools: listOption(values.tool),
            labels: Object.fromEntries(listOption(values.label).map(parseLabel)),
            ...(stringOption(values.facts) ? { file: stringOption(values.facts) } : {}),
          },
        },
        config(),
        io,
      ),
  },
  {
    name: 'status',
    brief: "missions, or one mission's tasks",
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
    brief: "write a mission's audit trail to a folder",
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
    name: 'receipt',
    brief: "export a finished mission's signed receipt",
    args: '<id>',
    maxPositionals: 1,
    summary:
      'Prints (or writes) the receipt finalize wrote when the mission ended: what ran where, with which CLI and model tier, the hashes of every prompt, result and criteria output, the critic scores, gate decisions and commits, and the audit chain head, signed with FLOTILLA_SIGNING_KEY (docs/RECEIPTS.md). Exit 1 while the mission has none yet.',
    options: {
      out: { type: 'string', short: 'o', value: 'FILE', help: 'write it to FILE instead of stdout' },
    },
    examples: ['flotilla receipt <id> -o receipt.json'],
    run: ({ values, positionals }, { config, io }) =>
      receipt(
        {
          id: required({ name: 'receipt' }, positionals[0], 'the mission id'),
          out: stringOption(values.out),
        },
        config(),
        io,
      ),
  },
  {
    name: 'verify',
    brief: 'check a mission receipt',
    args: '<receipt.json>',
    maxPositionals: 1,
    summary:
      'Checks the signature (and that it is the pinned key), recomputes the audit chain from Redis when it is reachable, and with --repo checks that every named commit exists and the integration branch is at the signed tip. Exit 0 when all holds, 2 naming the first divergent entry, field or commit. Without --public-key it says it checked integrity only.',
    options: {
      'public-key': { type: 'string', value: 'PEM', help: "the signer's public key, to check who signed it" },
      repo: { type: 'string', value: 'PATH', help: 'the mission repository, to check commits and the tip' },
    },
    examples: ['flotilla verify receipt.json --public-key receipts.pub.pem --repo ../calc'],
    run: ({ values, positionals }, { config, io }) =>
      verify(
        {
          file: required({ name: 'verify' }, positionals[0], 'the receipt file'),
          publicKey: stringOption(values['public-key']),
          repo: stringOption(values.repo),
        },
        config(),
        io,
      ),
  },
  {
    name: 'cancel',
    brief: 'stop a running mission on every host',
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
    brief: 'answer a task that asked a question',
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
    name: 'approve',
    brief: 'approve or reject a task held for a person',
    args: '<id> <task>',
    maxPositionals: 2,
    summary:
      "A person's verdict on a task held after its exit criteria and critic passed (approve: human): approved, it merges and releases its dependents; with --reject, the attempt fails and the retry's prompt carries the reason. The first verdict sent for an attempt counts.",
    options: {
      reject: {
        type: 'string',
        value: 'WHY',
        help: 'reject the attempt, saying why (the next attempt reads it)',
      },
      by: {
        type: 'string',
        value: 'NAME',
        help: 'who decides, for the audit trail (default FLOTILLA_USER, else user@machine)',
      },
    },
    examples: [
      'flotilla approve <id> schema',
      'flotilla approve <id> schema --reject "keep the old column names"',
    ],
    run: ({ positionals, values }, { config, io }) =>
      approve(
        {
          id: required({ name: 'approve' }, positionals[0], 'the mission id'),
          task: required({ name: 'approve' }, positionals[1], 'the task id'),
          ...(typeof values.reject === 'string' ? { reject: values.reject } : {}),
          ...(typeof values.by === 'string' ? { by: values.by } : {}),
        },
        config(),
        io,
      ),
  },
  {
    name: 'deliver',
    brief: 'push a finished mission and open its pull request again',
    args: '<id>',
    maxPositionals: 1,
    summary:
      "One more try of a finished mission's deliver: (after the hosts' tries failed, or to push again): pushes the integration branch and opens or updates its pull request from this machine, with its git credentials and FLOTILLA_FORGE_TOKEN (or GITHUB_TOKEN, GITLAB_TOKEN, GITEA_TOKEN); the status JSON, the audit trail and the summary record it. Exit 0 delivered, 1 failed again.",
    options: {
      json: { type: 'boolean', help: "the status JSON's delivery object as the last line of stdout" },
    },
    examples: ['flotilla deliver <id>', 'FLOTILLA_FORGE_TOKEN=… flotilla deliver <id> --json'],
    run: ({ values, positionals }, { config, io }) =>
      deliver(
        { id: required({ name: 'deliver' }, positionals[0], 'the mission id'), json: values.json === true },
        config(),
        io,
      ),
  },
];

export const COMMANDS: readonly CommandSpec[] = [...MISSION_COMMANDS, ...OPERATE_COMMANDS];

export function findCommand(name: string): CommandSpec | undefined {
  return COMMANDS.find((command) => command.name === name);
}
