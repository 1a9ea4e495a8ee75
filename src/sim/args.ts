/**
 * Command line of flotilla-sim. It is strict on purpose: an unknown flag is a usage error (exit 2),
 * so a runner that builds a wrong command line finds out in its tests instead of silently passing.
 */

export const SIM_VERSION = '0.1.0';

export const ROLES = ['builder', 'reviewer'] as const;
export type Role = (typeof ROLES)[number];

export type PromptSource =
  | { readonly kind: 'file'; readonly path: string }
  | { readonly kind: 'text'; readonly text: string }
  | { readonly kind: 'stdin' };

export interface SimArgs {
  readonly role: Role;
  readonly model?: string;
  readonly outputFormat: 'text' | 'json';
  readonly prompt: PromptSource;
  readonly version: boolean;
  readonly help: boolean;
}

export type ParsedArgs =
  | { readonly ok: true; readonly args: SimArgs }
  | { readonly ok: false; readonly message: string };

export const USAGE = `usage: flotilla-sim [--role builder|reviewer] [--model NAME] [--output-format text|json]
                    [--prompt-file PATH | --prompt TEXT | PROMPT TEXT…]
       flotilla-sim --version
With no prompt flag and no prompt argument, the prompt is read from stdin.
The stand-in agent of flotilla's demo and tests; see docs/SIM.md.`;

/** Flags that take a value, with their aliases. */
const VALUE_FLAGS: Readonly<Record<string, string>> = {
  '--prompt-file': 'prompt-file',
  '-f': 'prompt-file',
  '--prompt': 'prompt',
  '-p': 'prompt',
  '--role': 'role',
  '--model': 'model',
  '-m': 'model',
  '--output-format': 'output-format',
};

export function parseArgs(argv: readonly string[]): ParsedArgs {
  const values = new Map<string, string>();
  const positional: string[] = [];
  let version = false;
  let help = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (arg === '--') {
      positional.push(...argv.slice(i + 1));
      break;
    }
    if (arg === '--version' || arg === '-v') {
      version = true;
      continue;
    }
    if (arg === '--help' || arg === '-h') {
      help = true;
      continue;
    }
    const eq = arg.startsWith('--') ? arg.indexOf('=') : -1;
    const flag = eq > 0 ? arg.slice(0, eq) : arg;
    const name = VALUE_FLAGS[flag];
    if (name) {
      const value = eq > 0 ? arg.slice(eq + 1) : argv[++i];
      if (value === undefined) return { ok: false, message: `${flag}: expected a value` };
      if (values.has(name)) return { ok: false, message: `${flag}: given twice` };
      values.set(name, value);
      continue;
    }
    if (arg.startsWith('-') && arg !== '-') return { ok: false, message: `unknown option '${arg}'` };
    positional.push(arg);
  }

  const role = values.get('role') ?? 'builder';
  if (!isRole(role)) return { ok: false, message: `--role: expected builder or reviewer, got '${role}'` };
  const outputFormat = values.get('output-format') ?? 'text';
  if (outputFormat !== 'text' && outputFormat !== 'json') {
    return { ok: false, message: `--output-format: expected text or json, got '${outputFormat}'` };
  }

  const file = values.get('prompt-file');
  const text = values.get('prompt');
  const given = [file !== undefined, text !== undefined, positional.length > 0].filter(Boolean).length;
  if (given > 1)
    return { ok: false, message: 'give the prompt one way: --prompt-file, --prompt or an argument' };
  let prompt: PromptSource = { kind: 'stdin' };
  if (file !== undefined) prompt = { kind: 'file', path: file };
  else if (text !== undefined) prompt = { kind: 'text', text };
  else if (positional.length > 0) prompt = { kind: 'text', text: positional.join(' ') };

  return { ok: true, args: { role, model: values.get('model'), outputFormat, prompt, version, help } };
}

function isRole(value: string): value is Role {
  return (ROLES as readonly string[]).includes(value);
}
