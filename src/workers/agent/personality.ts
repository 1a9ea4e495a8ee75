import { parse } from 'yaml';

/**
 * What the runner reads from an agent file's front matter (agent-dispatch: `allowed_paths`,
 * `model_tier`, `skills`). The whole file still goes into the prompt; these two settings also
 * steer the run. Agent files are hand-written, so anything unreadable is simply absent.
 */
export interface AgentSettings {
  /** `planning | execution | check` or CataForge's `light | standard | heavy`; default execution. */
  readonly modelTier: string;
  /** The agent's write scope; undefined when the file sets none. */
  readonly allowedPaths?: readonly string[];
}

const FRONT_MATTER = /^---\r?\n([\s\S]*?)\r?\n---(?:\r?\n|$)/;

export function readAgentSettings(personality: string): AgentSettings {
  const front = FRONT_MATTER.exec(personality.trimStart())?.[1];
  let data: unknown;
  try {
    data = front ? parse(front) : undefined;
  } catch {
    data = undefined;
  }
  const fields = typeof data === 'object' && data !== null ? (data as Record<string, unknown>) : {};
  const tier = typeof fields.model_tier === 'string' ? fields.model_tier.trim() : '';
  const paths = Array.isArray(fields.allowed_paths)
    ? fields.allowed_paths.filter((p): p is string => typeof p === 'string' && p.trim() !== '')
    : undefined;
  return {
    modelTier: tier || 'execution',
    ...(paths && paths.length > 0 ? { allowedPaths: paths } : {}),
  };
}
