import type { ResultStatus } from '../../shared/contracts.js';

/**
 * Reading what a CLI left behind: the result file's six sections, CataForge's `<agent-result>`
 * block,. Agents write these by
 * hand, so every reader here forgives formatting and none of them throws.
 */

export const RESULT_SECTIONS = ['Status', 'Summary', 'Outputs', 'Findings', 'Issues', 'Errors'] as const;
export type ResultSection = (typeof RESULT_SECTIONS)[number];

export const AGENT_STATUSES = [
  'completed',
  'needs_input',
  'blocked',
  'approved',
  'approved_with_notes',
  'needs_revision',
  'rolled-back',
] as const;
export type AgentStatus = (typeof AGENT_STATUSES)[number];

export interface AgentResult {
  readonly status: AgentStatus;
  /** `inferred` when the block had no valid `<status>` and it was derived from the outputs. */
  readonly statusSource: 'tag' | 'inferred';
  /** The `<status>` text when it was not one of the seven statuses. */
  readonly rawStatus?: string;
  readonly outputs: string[];
  readonly summary: string;
  readonly questions?: unknown;
  readonly completedSteps?: string;
  readonly resumeGuidance?: string;
  /** No closing tag: the run was cut off while writing the block. */
  readonly truncated: boolean;
}

export interface ParsedResultFile {
  readonly status: ResultStatus;
  readonly sections: Record<ResultSection, string | undefined>;
  readonly missing: ResultSection[];
  readonly agentResult?: AgentResult;
}

const SECTION_NAMES: Readonly<Record<string, ResultSection>> = {
  status: 'Status',
  summary: 'Summary',
  output: 'Outputs',
  outputs: 'Outputs',
  finding: 'Findings',
  findings: 'Findings',
  issue: 'Issues',
  issues: 'Issues',
  error: 'Errors',
  errors: 'Errors',
};
const NAME = 'status|summary|outputs?|findings?|issues?|errors?';
const HEADING = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const HEADING_NAME = new RegExp(
  `^(?:\\*\\*|__)?\\s*(${NAME})\\b\\s*(?:\\*\\*|__)?\\s*(?:[:\\-–—]\\s*(.*))?${'$'}`,
  'i',
);
const BOLD_LINE = new RegExp(
  `^\\s*(?:[-*+]\\s+)?(\\*\\*|__)\\s*(${NAME})\\s*:?\\s*\\1\\s*:?\\s*(.*)${'$'}`,
  'i',
);
const BOLD_WHOLE = new RegExp(
  `^\\s*(?:[-*+]\\s+)?(\\*\\*|__)\\s*(${NAME})\\s*:\\s*(.*?)\\s*\\1\\s*${'$'}`,
  'i',
);
const PLAIN_LINE = new RegExp(`^\\s*(?:[-*+]\\s+)?(${NAME})\\s*:\\s*(.*)${'$'}`, 'i');
const FENCE = /^\s{0,3}(`{3,}|~{3,})/;
const AGENT_OPEN = /^[ \t]*<agent-result>/gim;

interface Header {
  readonly name: ResultSection;
  readonly rest: string;
  /** Heading level, or 0 for the `**Name**:` and `Name:` forms. */
  readonly level: number;
}

function readHeader(line: string): Header | { heading: number } | null {
  const heading = HEADING.exec(line);
  if (heading) {
    const match = HEADING_NAME.exec((heading[2] ?? '').trim());
    const name = match ? SECTION_NAMES[(match[1] ?? '').toLowerCase()] : undefined;
    const level = heading[1]?.length ?? 1;
    return name ? { name, rest: match?.[2]?.trim() ?? '', level } : { heading: level };
  }
  const bold = BOLD_LINE.exec(line) ?? BOLD_WHOLE.exec(line);
  if (bold)
    return {
      name: SECTION_NAMES[(bold[2] ?? '').toLowerCase()] ?? 'Status',
      rest: bold[3]?.trim() ?? '',
      level: 0,
    };
  const plain = PLAIN_LINE.exec(line);
  if (plain)
    return {
      name: SECTION_NAMES[(plain[1] ?? '').toLowerCase()] ?? 'Status',
      rest: plain[2]?.trim() ?? '',
      level: 0,
    };
  return null;
}

export function parseResultFile(text: string): ParsedResultFile {
  const collected = new Map<ResultSection, string[]>();
  let current: { name: ResultSection; level: number } | undefined;
  let fence: string | undefined;
  for (const line of text.split(/\r?\n/)) {
    const fenceMark = FENCE.exec(line)?.[1];
    if (fence) {
      if (fenceMark && fenceMark[0] === fence[0] && fenceMark.length >= fence.length) fence = undefined;
    } else if (fenceMark) {
      fence = fenceMark;
    } else if (/^[ \t]*<\/?agent-result>/i.test(line)) {
      current = undefined;
      continue;
    } else {
      const header = readHeader(line);
      // A repeated name (an `Error:` line inside Errors) is content, not a second section.
      if (header && 'name' in header && !collected.has(header.name)) {
        current = { name: header.name, level: header.level };
        collected.set(header.name, header.rest ? [header.rest] : []);
        continue;
      }
      if (header && 'heading' in header && current && current.level > 0 && header.heading <= current.level) {
        current = undefined;
      }
    }
    if (current) collected.get(current.name)?.push(line);
  }

  const sections = Object.fromEntries(
    RESULT_SECTIONS.map((name) => [
      name,
      collected.has(name) ? (collected.get(name) ?? []).join('\n').trim() : undefined,
    ]),
  ) as Record<ResultSection, string | undefined>;
  const agentResult = parseAgentResult(text) ?? undefined;
  return {
    status: mapStatus(sections.Status),
    sections,
    missing: RESULT_SECTIONS.filter((name) => sections[name] === undefined),
    ...(agentResult ? { agentResult } : {}),
  };
}

/** Complete → success, Complete with Warnings → success_with_warnings, Failed → failure, else unknown. */
export function mapStatus(value: string | undefined): ResultStatus {
  const line = (value ?? '')
    .split('\n')
    .find((candidate) => candidate.trim())
    ?.replace(/[*_`"'[\]]/g, '')
    .replace(/^[^a-z]+/i, '')
    .trim()
    .toLowerCase();
  // The template's own `Complete | Complete with Warnings | Failed`, echoed back, says nothing.
  if (!line || line.includes('|')) return 'unknown';
  if (/^completed?\s*[(,:\-–—]?\s*with\s+warnings?\b/.test(line)) return 'success_with_warnings';
  if (/^completed?\b/.test(line)) return 'success';
  if (/^fail(ed|ure)?\b/.test(line)) return 'failure';
  return 'unknown';
}

const AGENT_FIELDS = [
  'status',
  'outputs',
  'summary',
  'questions',
  'completed-steps',
  'resume-guidance',
] as const;

/** The last `<agent-result>` block that starts a line, or null when there is none. */
export function parseAgentResult(text: string): AgentResult | null {
  const open = [...text.matchAll(AGENT_OPEN)].at(-1);
  if (!open) return null;
  const rest = text.slice(open.index + open[0].length);
  const close = rest.search(/<\/agent-result>/i);
  const truncated = close < 0;
  const body = truncated ? rest : rest.slice(0, close);

  const field = (name: (typeof AGENT_FIELDS)[number]): string | undefined => {
    const others = AGENT_FIELDS.filter((other) => other !== name).join('|');
    // An unclosed field (a cut-off run) ends at the next field's tag or at the end.
    const match = new RegExp(`<${name}>([\\s\\S]*?)(?:</${name}>|(?=<(?:${others})>)|$)`, 'i').exec(body);
    return match ? (match[1] ?? '').trim() : undefined;
  };

  const outputs = splitOutputs(field('outputs') ?? '');
  const raw = field('status');
  const normalized = normalizeAgentStatus(raw);
  const questionsText = field('questions');
  const completedSteps = field('completed-steps');
  const resumeGuidance = field('resume-guidance');
  return {
    status: normalized ?? (outputs.length > 0 ? 'completed' : 'blocked'),
    statusSource: normalized ? 'tag' : 'inferred',
    ...(raw && !normalized ? { rawStatus: raw } : {}),
    outputs,
    summary: field('summary') ?? '',
    ...(questionsText ? { questions: parseQuestions(questionsText) } : {}),
    ...(completedSteps ? { completedSteps } : {}),
    ...(resumeGuidance ? { resumeGuidance } : {}),
    truncated,
  };
}

function normalizeAgentStatus(raw: string | undefined): AgentStatus | undefined {
  if (!raw) return undefined;
  const key = raw
    .trim()
    .toLowerCase()
    .replace(/[\s-]+/g, '_');
  if (key === 'rolled_back' || key === 'rolledback') return 'rolled-back';
  return AGENT_STATUSES.find((status) => status === key);
}

function parseQuestions(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * Comma- or line-separated paths, with list bullets, backticks and quotes taken off; "None" is no
 * path. In `` `src/a.ts` — created `` the code span is the path and the rest is commentary.
 */
export function splitOutputs(text: string): string[] {
  return text
    .split(/[,\n]/)
    .map((item) => {
      const bare = item.trim().replace(/^(?:[-*+]|\d+[.)])\s+/, '');
      const code = /`([^`]+)`/.exec(bare)?.[1];
      const path = code ?? bare.split(/\s+(?:[—–-]|\()\s*/)[0] ?? '';
      return path.replace(/^['"]+|['"]+$/g, '').trim();
    })
    .filter((item) => item && !/^(none|n\/a|-)\.?$/i.test(item));
}
