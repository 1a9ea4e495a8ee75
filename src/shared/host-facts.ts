import { createHash } from 'node:crypto';
import { canonicalJson } from './canonical-json.js';

/**
 * What a host is besides its CLIs, and what a task may require of one. A host detects its
 * platform and the toolchains its operator lists (workers/host/facts.ts) and advertises them
 * with its labels; a task's `requires` names what its machine must have, and only hosts that
 * satisfy it take the task's run, verify and critic jobs (their queues carry the requirement's
 * key, requirementQueue below). Pure; tested by table.
 */

/** The platforms a host reports and a task may name: Node's `process.platform`, `win32` as windows. */
export const PLATFORMS = ['linux', 'darwin', 'windows', 'freebsd', 'openbsd', 'aix', 'sunos'] as const;

export interface HostFacts {
  readonly os: string;
  readonly arch: string;
  /** Each probed toolchain: its version, '' when present without a readable version, null when absent. */
  readonly tools: Readonly<Record<string, string | null>>;
  readonly labels: Readonly<Record<string, string>>;
}

export type VersionOp = '>=' | '>' | '<=' | '<' | '=';

/** One entry of `requires.tools`: `docker`, `node>=20`, `python3=3.11`. */
export interface ToolRequirement {
  readonly name: string;
  readonly op?: VersionOp;
  readonly version?: string;
}

/** A task's `requires`, parsed: every field that is given must hold. */
export interface Requirements {
  readonly os?: readonly string[];
  readonly arch?: readonly string[];
  readonly tools?: readonly ToolRequirement[];
  readonly labels?: Readonly<Record<string, string>>;
}

export const TOOL_PATTERN = /^([A-Za-z0-9][A-Za-z0-9._+-]*?)\s*(?:(>=|<=|>|<|=)\s*(\d+(?:\.\d+)*))?$/;

/** `node>=20` → { name: 'node', op: '>=', version: '20' }; null for anything else. */
export function parseToolRequirement(text: string): ToolRequirement | null {
  const match = TOOL_PATTERN.exec(text.trim());
  if (!match?.[1]) return null;
  return match[2] && match[3]
    ? { name: match[1], op: match[2] as VersionOp, version: match[3] }
    : { name: match[1] };
}

export function formatTool(tool: ToolRequirement): string {
  return tool.op ? `${tool.name}${tool.op}${tool.version}` : tool.name;
}

/** The first dotted number in a probe's output (`v20.11.1` → `20.11.1`, `Docker version 27.0.3, …`). */
export function parseVersion(output: string): string {
  return /(\d+(?:\.\d+)+|\d+)/.exec(output)?.[1] ?? '';
}

/** Compares dotted versions part by part, a missing part as 0: `20` = `20.0.0` < `20.1`. */
export function compareVersions(a: string, b: string): number {
  const left = a.split('.').map(Number);
  const right = b.split('.').map(Number);
  for (let i = 0; i < Math.max(left.length, right.length); i++) {
    const diff = (left[i] ?? 0) - (right[i] ?? 0);
    if (diff !== 0) return diff;
  }
  return 0;
}

function versionHolds(have: string, op: VersionOp, want: string): boolean {
  // `=` compares only as many parts as the requirement names: `git=2.39` holds for 2.39.5.
  if (op === '=')
    return compareVersions(have.split('.').slice(0, want.split('.').length).join('.'), want) === 0;
  const order = compareVersions(have, want);
  return op === '>=' ? order >= 0 : op === '>' ? order > 0 : op === '<=' ? order <= 0 : order < 0;
}

/**
 * What a host lacks for `requires`, one phrase each ("docker", "node>=20 (has 18.19.0)",
 * "os linux (is darwin)", "label region=eu"); empty when it satisfies them.
 */
export function unmet(facts: HostFacts, requires: Requirements): string[] {
  const lacks: string[] = [];
  if (requires.os?.length && !requires.os.includes(facts.os))
    lacks.push(`os ${requires.os.join(' or ')} (is ${facts.os})`);
  if (requires.arch?.length && !requires.arch.includes(facts.arch))
    lacks.push(`arch ${requires.arch.join(' or ')} (is ${facts.arch})`);
  for (const tool of requires.tools ?? []) {
    const have = facts.tools[tool.name];
    if (have === undefined || have === null) lacks.push(formatTool(tool));
    else if (tool.op && tool.version && !(have && versionHolds(have, tool.op, tool.version)))
      lacks.push(`${formatTool(tool)} (has ${have || 'an unknown version'})`);
  }
  for (const [key, value] of Object.entries(requires.labels ?? {})) {
    if (facts.labels[key] !== value) lacks.push(`label ${key}=${value}`);
  }
  return lacks;
}

export function isEmptyRequirements(requires: Requirements | undefined): boolean {
  return (
    !requires ||
    (!requires.os?.length &&
      !requires.arch?.length &&
      !requires.tools?.length &&
      Object.keys(requires.labels ?? {}).length === 0)
  );
}

/** The requirement in one canonical form: lists sorted and deduplicated, so equal sets share a key. */
export function canonicalRequirements(requires: Requirements): Requirements {
  const sorted = (list: readonly string[] | undefined) =>
    list?.length ? [...new Set(list)].sort() : undefined;
  const tools = requires.tools?.length
    ? [...new Map(requires.tools.map((t) => [formatTool(t), t])).values()].sort((a, b) =>
        formatTool(a) < formatTool(b) ? -1 : 1,
      )
    : undefined;
  const labels = Object.keys(requires.labels ?? {}).length ? requires.labels : undefined;
  return {
    ...(sorted(requires.os) ? { os: sorted(requires.os) } : {}),
    ...(sorted(requires.arch) ? { arch: sorted(requires.arch) } : {}),
    ...(tools ? { tools } : {}),
    ...(labels ? { labels } : {}),
  };
}

/** A short stable key of a requirement set: the same on every host and producer that computes it. */
export function requirementsKey(requires: Requirements): string {
  return createHash('sha256')
    .update(canonicalJson(canonicalRequirements(requires)))
    .digest('hex')
    .slice(0, 12);
}

/** The separator between a queue's name and a requirement key: never in a capability or stage name. */
export const REQUIREMENT_SEPARATOR = '~';

/** `dispatch.code_implementation` with key k → `dispatch.code_implementation~k`: served only by hosts that satisfy k. */
export function requirementQueue(queue: string, key: string | undefined): string {
  return key ? `${queue}${REQUIREMENT_SEPARATOR}${key}` : queue;
}

/** The queue a requirement queue is a variant of, and its key. */
export function splitRequirementQueue(queue: string): { readonly base: string; readonly key?: string } {
  const at = queue.indexOf(REQUIREMENT_SEPARATOR);
  return at < 0 ? { base: queue } : { base: queue.slice(0, at), key: queue.slice(at + 1) };
}

/**
 * Why no live host can take a task: "no live host has docker; 3 hosts lack it", or with several
 * gaps, each host's own ("h1 lacks docker; h2 lacks os linux (is darwin)"). Null when one can.
 */
export function noHostSatisfies(
  hosts: readonly { readonly hostId: string; readonly facts: HostFacts }[],
  requires: Requirements,
): string | null {
  if (hosts.length === 0) return 'no live host';
  const gaps = hosts.map((host) => ({ host: host.hostId, lacks: unmet(host.facts, requires) }));
  if (gaps.some((gap) => gap.lacks.length === 0)) return null;
  const shared = gaps[0]?.lacks.filter((lack) => gaps.every((gap) => gap.lacks.includes(lack))) ?? [];
  if (shared.length > 0) {
    const count = gaps.length === 1 ? '1 host lacks it' : `${gaps.length} hosts lack it`;
    return `no live host has ${shared.join(', ')}; ${count}`;
  }
  return gaps.map((gap) => `${gap.host} lacks ${gap.lacks.join(', ')}`).join('; ');
}
