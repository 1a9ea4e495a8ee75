import type { Adapter, PROMPT_DELIVERIES } from '../../shared/adapter.js';
import { splitFlags } from '../../shared/adapter.js';
import type { ModelTier } from '../../shared/capabilities.js';

/**
 * How a prompt reaches a CLI: the model for a tier, and the argument array (never a shell string)
 * for the adapter's delivery mode, with the fallbacks when a prompt is too large for an argument.
 */

/** CataForge's agent tiers name the same three levels differently. */
export const TIER_ALIASES: Readonly<Record<string, ModelTier>> = {
  light: 'check',
  standard: 'execution',
  heavy: 'planning',
};

const MODEL_KEYS = {
  planning: 'model_planning',
  execution: 'model_execution',
  check: 'model_check',
} as const;

export function resolveModel(adapter: Pick<Adapter, 'models' | 'config'>, tier?: string): string | undefined {
  const normalized = tier?.trim().toLowerCase() ?? '';
  const level: ModelTier =
    normalized === 'planning' || normalized === 'execution' || normalized === 'check'
      ? normalized
      : (TIER_ALIASES[normalized] ?? 'execution');
  return adapter.models[level] ?? adapter.config[MODEL_KEYS[level]];
}

/** Linux caps one argument at MAX_ARG_STRLEN (128 KiB, its terminating NUL included). */
export const MAX_ARG_BYTES = 128 * 1024;

export type PromptDelivery = (typeof PROMPT_DELIVERIES)[number];

export interface Invocation {
  readonly command: string;
  readonly args: string[];
  readonly stdin?: string;
  /** How the prompt actually goes; differs from the adapter's when a large prompt fell back to stdin. */
  readonly delivery: PromptDelivery;
  readonly note?: string;
}

export interface InvocationInput {
  readonly promptPath: string;
  readonly promptText: string;
  readonly model?: string;
  readonly maxArgBytes?: number;
}

export function buildInvocation(adapter: Pick<Adapter, 'config'>, input: InvocationInput): Invocation {
  const { config } = adapter;
  const [command = '', ...commandArgs] = splitFlags(config.invoke_command);
  const flags = [...commandArgs, ...substituteModel(config.invoke_flags, input.model)];
  const promptFlag = config.prompt_flag ?? '';
  switch (config.prompt_delivery) {
    case 'file_path':
      return {
        command,
        args: [...flags, ...flagWithValue(promptFlag, input.promptPath)],
        delivery: 'file_path',
      };
    case 'stdin_pipe':
      return { command, args: flags, stdin: input.promptText, delivery: 'stdin_pipe' };
    case 'content_flag': {
      const bytes = Buffer.byteLength(input.promptText, 'utf8');
      const max = input.maxArgBytes ?? MAX_ARG_BYTES;
      if (bytes < max) {
        return {
          command,
          args: [...flags, ...flagWithValue(promptFlag, input.promptText)],
          delivery: 'content_flag',
        };
      }
      return {
        command,
        args: flags,
        stdin: input.promptText,
        delivery: 'stdin_pipe',
        note: `prompt of ${bytes} bytes is more than one argument may hold (${max}); sent on stdin instead of ${promptFlag}`,
      };
    }
  }
}

/** A `{model}` flag pair is dropped when no model is known, so the CLI falls back to its default. */
function substituteModel(flags: readonly string[], model: string | undefined): string[] {
  const out: string[] = [];
  flags.forEach((flag, index) => {
    if (!flag.includes('{model}')) {
      out.push(flag);
    } else if (model) {
      out.push(flag.replaceAll('{model}', model));
    } else if (
      flag.trim() === '{model}' &&
      index > 0 &&
      flags[index - 1]?.startsWith('-') &&
      out.at(-1) === flags[index - 1]
    ) {
      out.pop();
    }
  });
  return out;
}

/** `--prompt-file=` style flags take their value in the same argument. */
function flagWithValue(flag: string, value: string): string[] {
  if (!flag) return [value];
  return flag.endsWith('=') ? [`${flag}${value}`] : [flag, value];
}

/** cli-dispatch's rule of thumb: about four characters to a token. */
export function promptTooLarge(adapter: Pick<Adapter, 'config' | 'maxPromptSize'>, text: string): boolean {
  const max = adapter.maxPromptSize ?? adapter.config.max_prompt_size;
  return max !== undefined && text.length / 4 > max;
}
