import { z } from 'zod';

/**
 * The `## Dispatch Configuration` block of an adapter file. Legion's own fields are accepted as
 * they are written in its files (invoke_flags as a string or a list, prompt_flag: null for
 * stdin_pipe, result_mode, result_instruction, prerequisites); flotilla's extras are optional.
 */
export const PROMPT_DELIVERIES = ['file_path', 'stdin_pipe', 'content_flag'] as const;

const flags = z.union([z.string(), z.array(z.string())]).transform((value) => splitFlags(value));

export const dispatchConfigSchema = z
  .object({
    available: z.boolean(),
    capabilities: z.array(z.string().min(1)).min(1),
    detection_command: z.string().min(1),
    invoke_command: z.string().min(1),
    invoke_flags: flags.default([]),
    prompt_delivery: z.enum(PROMPT_DELIVERIES),
    prompt_flag: z.string().min(1).nullish(),
    result_path: z.string().refine((value) => value.includes('{task-id}'), {
      message: 'must contain the placeholder {task-id}',
    }),
    timeout_ms: z.number().int().positive(),
    max_concurrent: z.number().int().positive().optional(),
    max_prompt_size: z.number().int().positive().optional(),
    model_planning: z.string().optional(),
    model_execution: z.string().optional(),
    model_check: z.string().optional(),
    result_mode: z.string().optional(),
    result_instruction: z.string().optional(),
    prerequisites: z.array(z.string()).nullish(),
    // flotilla's extras
    /** Case-insensitive regular expressions that mark a reply as a rate limit or quota. */
    rate_limit_patterns: z.array(z.string()).optional(),
    /** Case-insensitive regular expressions that mark a reply as "not logged in / misconfigured". */
    auth_error_patterns: z.array(z.string()).optional(),
    /**
     * The cheapest command that tells whether the CLI is logged in (`flotilla detect --check-auth`):
     * exit 0 means logged in, unless its output matches an auth error pattern. Run without a shell.
     */
    auth_check_command: flags.optional(),
    /**
     * What the CLI must be able to write under `flotilla worker --sandbox` besides its checkout
     * and /tmp: its config and cache folders. `~/` is the home folder, `$NAME` a variable; an
     * entry ending in `/` is a folder made when missing; a missing entry otherwise is skipped.
     */
    sandbox_writable: z.array(z.string().min(1)).optional(),
    /** How long this CLI cools down on a host after a rate-limit reply. */
    cooldown_ms: z.number().int().positive().optional(),
    /** How the CLI reports usage: `claude-json` parses Claude Code's --output-format json. */
    usage_format: z.enum(['claude-json', 'codex-jsonl', 'gemini-json', 'opencode-jsonl']).optional(),
    /** Environment variables the CLI needs; their values are never logged or put in prompts. */
    env: z.record(z.string(), z.string()).optional(),
    /** Marks the adapter that serves dispatch.internal on hosts configured with it. */
    internal: z.boolean().optional(),
  })
  .passthrough()
  .superRefine((config, ctx) => {
    if (config.prompt_delivery !== 'stdin_pipe' && !config.prompt_flag) {
      ctx.addIssue({
        code: 'custom',
        path: ['prompt_flag'],
        message: `required when prompt_delivery is ${config.prompt_delivery}`,
      });
    }
  });

export type DispatchConfigInput = z.input<typeof dispatchConfigSchema>;
export type DispatchConfig = z.output<typeof dispatchConfigSchema>;

/** An adapter as the rest of flotilla uses it: file facts plus its parsed dispatch block. */
export interface Adapter {
  /** `cli` from front matter, else the file name without `.md`. */
  readonly cli: string;
  readonly displayName: string;
  /** Front matter `vendor`: who makes the model behind it (escalation prefers another vendor). */
  readonly vendor?: string;
  readonly file: string;
  /** Position in the folder's file order; ties in matching go to the lower one. */
  readonly order: number;
  readonly config: DispatchConfig;
  /** Model per tier, from the block or from the Tool Mappings table. */
  readonly models: Readonly<Partial<Record<'planning' | 'execution' | 'check', string>>>;
  readonly maxPromptSize?: number;
}

/**
 * `invoke_flags` written as one string is split on white space, honouring simple quotes; there is
 * never a shell, so this is the whole of what a string may express.
 */
export function splitFlags(value: string | readonly string[]): string[] {
  if (Array.isArray(value)) return [...value];
  const out: string[] = [];
  const re = /"([^"]*)"|'([^']*)'|(\S+)/g;
  for (const match of (value as string).matchAll(re)) out.push(match[1] ?? match[2] ?? match[3] ?? '');
  return out;
}
