import { readFile } from 'node:fs/promises';
import { execa } from 'execa';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { FlotillaError } from '../../shared/errors.js';
import { type HostFacts, PLATFORMS, parseVersion } from '../../shared/host-facts.js';
import { publicEnv } from './private-env.js';

/**
 * A host's facts (shared/host-facts.ts): its platform from Node, each toolchain the operator lists
 * probed by running it (argument arrays, no shell, flotilla's secrets kept out like any child),
 * its labels as given, and, over all of them, what a facts file pins. A test sets its hosts'
 * platforms with that file; an operator pins what a probe cannot see.
 */

/** How a known toolchain says its version; any other name is probed with `<name> --version`. */
const PROBES: Readonly<Record<string, readonly string[]>> = {
  docker: ['docker', 'version', '--format', '{{.Server.Version}}'],
  go: ['go', 'version'],
  java: ['java', '-version'],
  podman: ['podman', 'version', '--format', '{{.Client.Version}}'],
};

/** Probed when the operator lists none: cheap, and what exit criteria most often need. */
export const DEFAULT_TOOLS = ['git', 'node'] as const;

/** A probe that takes longer is taken as absent (a `docker` whose daemon hangs). */
const PROBE_TIMEOUT_MS = 10_000;

export interface FactsOptions {
  /** Toolchains to probe: a name (`docker`) or `name=command args` (`ruby=ruby -v`). */
  readonly tools?: readonly string[];
  readonly labels?: Readonly<Record<string, string>>;
  /** A YAML or JSON file whose `os`, `arch`, `tools` and `labels` replace what was detected. */
  readonly file?: string;
}

const pinnedSchema = z
  .object({
    os: z.enum(PLATFORMS).optional(),
    arch: z.string().min(1).optional(),
    tools: z
      .record(z.string().min(1), z.union([z.string(), z.number(), z.null()]).transform(String))
      .optional(),
    labels: z
      .record(z.string().min(1), z.union([z.string(), z.number(), z.boolean()]).transform(String))
      .optional(),
  })
  .strict();

/** `process.platform` in the words a task's `requires.os` uses. */
export function platformName(platform: NodeJS.Platform = process.platform): string {
  return platform === 'win32' ? 'windows' : platform;
}

export async function detectFacts(options: FactsOptions = {}): Promise<HostFacts> {
  const listed = options.tools?.length ? options.tools : DEFAULT_TOOLS;
  const probed = await Promise.all(listed.map((spec) => probeTool(spec)));
  const detected: HostFacts = {
    os: platformName(),
    arch: process.arch,
    tools: Object.fromEntries(probed),
    labels: { ...options.labels },
  };
  if (!options.file) return detected;
  const pinned = await readPinned(options.file);
  return {
    os: pinned.os ?? detected.os,
    arch: pinned.arch ?? detected.arch,
    tools: { ...detected.tools, ...pinnedTools(pinned.tools) },
    labels: { ...detected.labels, ...pinned.labels },
  };
}

/** In a facts file a tool's value is its version; `null` or `absent` says the machine lacks it. */
function pinnedTools(tools: Record<string, string> | undefined): Record<string, string | null> {
  return Object.fromEntries(
    Object.entries(tools ?? {}).map(([name, value]) => [
      name,
      value === 'null' || value === 'absent' ? null : value,
    ]),
  );
}

async function readPinned(file: string): Promise<z.output<typeof pinnedSchema>> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new FlotillaError('usage', `host facts file ${file}: ${(error as Error).message}`);
  }
  const parsed = pinnedSchema.safeParse(parseYaml(text) ?? {});
  if (!parsed.success) {
    const problems = parsed.error.issues.map(
      (issue) => `${issue.path.join('.') || '(top)'}: ${issue.message}`,
    );
    throw new FlotillaError(
      'usage',
      `host facts file ${file}: ${problems.join('; ')} (expected os, arch, tools: {name: version}, labels: {key: value})`,
    );
  }
  return parsed.data;
}

/** [name, version]: '' when it ran without a readable version, null when it is not there. */
async function probeTool(spec: string): Promise<[string, string | null]> {
  const at = spec.indexOf('=');
  const name = (at < 0 ? spec : spec.slice(0, at)).trim();
  const argv =
    at < 0
      ? (PROBES[name] ?? [name, '--version'])
      : spec
          .slice(at + 1)
          .trim()
          .split(/\s+/);
  const [file, ...args] = argv;
  if (!file) return [name, null];
  try {
    const result = await execa(file, args, {
      reject: false,
      timeout: PROBE_TIMEOUT_MS,
      stdin: 'ignore',
      env: publicEnv(),
      extendEnv: false,
    });
    if (result.exitCode !== 0) return [name, null];
    // `java -version` and a few others answer on stderr.
    return [name, parseVersion(`${String(result.stdout)}\n${String(result.stderr)}`)];
  } catch {
    return [name, null];
  }
}

/** `--label gpu=a100` → ['gpu', 'a100']; a usage error for anything without a key and a `=`. */
export function parseLabel(text: string): [string, string] {
  const at = text.indexOf('=');
  if (at <= 0) throw new FlotillaError('usage', `--label ${text}: expected KEY=VALUE, like region=eu`);
  return [text.slice(0, at).trim(), text.slice(at + 1).trim()];
}
