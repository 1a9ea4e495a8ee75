import { parseArgs } from 'node:util';
import type { Config } from '../shared/config.js';
import { FlotillaError } from '../shared/errors.js';
import { closestKey } from '../shared/validation/schema-problems.js';
import type { Io } from './io.js';

/**
 * The shape of one command in the table (command-table.ts): what it takes, what it says in
 * `--help`, and the function that runs it. Parsing, help and usage errors are derived from this
 * one description, so a command's help can never disagree with what it accepts.
 */
export interface OptionSpec {
  readonly type: 'string' | 'boolean';
  readonly short?: string;
  /** Placeholder for the value in help (`DIR`, `N`); string options only. */
  readonly value?: string;
  /** May be given more than once (`--label a=1 --label b=2`): its value is then a list. */
  readonly multiple?: boolean;
  readonly help: string;
}

export interface Parsed {
  readonly values: Readonly<Record<string, string | boolean | string[] | undefined>>;
  readonly positionals: readonly string[];
}

export interface CommandSpec {
  /** As typed after `flotilla`. */
  readonly name: string;
  /** The positional part of the usage line, e.g. `<mission.yaml>`, `[<id>]`. */
  readonly args: string;
  /** How many positionals it takes at most. */
  readonly maxPositionals: number;
  /** A few words for the overview of `flotilla --help`. */
  readonly brief: string;
  /** What `flotilla <command> --help` says it does. */
  readonly summary: string;
  readonly options: Readonly<Record<string, OptionSpec>>;
  readonly examples: readonly string[];
  /** Loads no config when absent; `config` is read lazily so `--help` works with a broken environment. */
  run(parsed: Parsed, context: { config: () => Config; io: Io }): Promise<number>;
}

const HELP_OPTION: OptionSpec = { type: 'boolean', short: 'h', help: 'show this help' };

export function wantsHelp(argv: readonly string[]): boolean {
  const end = argv.indexOf('--');
  const head = end === -1 ? argv : argv.slice(0, end);
  return head.includes('--help') || head.includes('-h');
}

/** Strict parsing with messages in flotilla's words: the option, the command, where to look. */
export function parseCommand(spec: CommandSpec, argv: readonly string[]): Parsed {
  const options = Object.fromEntries(
    Object.entries(spec.options).map(([name, option]) => [
      name,
      {
        type: option.type,
        ...(option.short ? { short: option.short } : {}),
        ...(option.multiple ? { multiple: true } : {}),
      },
    ]),
  );
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args: [...argv], options, allowPositionals: true, strict: true });
  } catch (error) {
    throw new FlotillaError('usage', usageMessage(spec, error));
  }
  if (parsed.positionals.length > spec.maxPositionals) {
    const extra = parsed.positionals[spec.maxPositionals];
    throw new FlotillaError(
      'usage',
      `${spec.name}: unexpected argument '${extra}' (usage: ${usageLine(spec)}; see flotilla ${spec.name} --help)`,
    );
  }
  return parsed as Parsed;
}

function usageMessage(spec: CommandSpec, error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  const text = (error as Error).message;
  const option = /'(-[^' ]+)/.exec(text)?.[1] ?? '';
  const see = `see flotilla ${spec.name} --help`;
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    const names = Object.keys(spec.options).map((name) => `--${name}`);
    const guess = closestKey(option, names);
    return `${spec.name}: unknown option '${option}'${guess ? ` — did you mean '${guess}'?` : ''} (${see})`;
  }
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
    const name = option.replace(/^-+/, '');
    const taken = spec.options[name];
    return taken?.type === 'boolean'
      ? `${spec.name}: ${option} takes no value (${see})`
      : `${spec.name}: ${option} needs a value${taken?.value ? ` (${taken.value})` : ''} (${see})`;
  }
  return `${spec.name}: ${text} (${see})`;
}

export function usageLine(spec: CommandSpec): string {
  const hasOptions = Object.keys(spec.options).length > 0;
  return ['flotilla', spec.name, spec.args, hasOptions ? '[options]' : ''].filter(Boolean).join(' ');
}

export function formatCommandHelp(spec: CommandSpec): string {
  const rows = Object.entries({ ...spec.options, help: HELP_OPTION }).map(([name, option]) => {
    const flag = `${option.short ? `-${option.short}, ` : '    '}--${name}${option.value ? ` ${option.value}` : ''}`;
    return [flag, option.help] as const;
  });
  const width = Math.max(...rows.map(([flag]) => flag.length));
  return [
    `Usage: ${usageLine(spec)}`,
    '',
    wrap(spec.summary),
    '',
    'Options:',
    ...rows.map(([flag, help]) => `  ${flag.padEnd(width)}  ${help}`),
    '',
    spec.examples.length === 1 ? 'Example:' : 'Examples:',
    ...spec.examples.map((example) => `  ${example}`),
  ].join('\n');
}

/** Help reads best at terminal width; long sentences break between words. */
export function wrap(text: string, width = 96): string {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/)) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(line);
  return lines.join('\n');
}

/** A positive whole number option, or its default. */
export function positiveInt(value: unknown, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1)
    throw new FlotillaError('usage', `--${name}: expected a positive whole number, got '${String(value)}'`);
  return n;
}

export function stringOption(value: string | boolean | string[] | undefined): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/** The values of an option given any number of times (`multiple`). */
export function listOption(value: string | boolean | string[] | undefined): string[] {
  if (Array.isArray(value)) return value;
  return typeof value === 'string' ? [value] : [];
}

/** A required positional; its absence is a usage error that points at the command's help. */
export function required(spec: Pick<CommandSpec, 'name'>, value: string | undefined, what: string): string {
  if (!value)
    throw new FlotillaError('usage', `${spec.name}: missing ${what} (see flotilla ${spec.name} --help)`);
  return value;
}
