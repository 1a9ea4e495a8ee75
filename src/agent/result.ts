import type { ResultStatus } from '../shared/contracts.js';

/**
 * Reading what a CLI left behind: the result file's six sections, CataForge's `<agent-result>`
 * block, and the whole fallback chain of DESIGN §4 step 4 (`collectResult`). Agents write these by
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

export interface CollectInput {
  /** null when the process ended by a signal. */
  readonly exitCode: number | null;
  readonly timedOut: boolean;
  readonly stdout: string;
  readonly stderr: string;
  /** null when no file exists at the resolved result_path. */
  readonly resultFileText: string | null;
  /** `git diff --name-only` plus new files after the run. */
  readonly changedFiles: readonly string[];
}

export interface CollectedResult {
  readonly status: ResultStatus;
  readonly outcome: 'done' | 'failed' | 'needs_input';
  /** What to store as the attempt's result (the audit trail keeps it whole). */
  readonly text: string;
  readonly source: 'file' | 'agent-result' | 'stdout' | 'changed-files' | 'none';
  readonly warnings: string[];
  /** At most a few hundred characters, for status and the run job's return value. */
  readonly summary: string;
  readonly outputs: string[];
  readonly findings: string;
  readonly questions?: unknown;
  /** Why the attempt failed, when it did: the line the gate feeds into the next prompt. */
  readonly error?: string;
}

const SUMMARY_CHARS = 400;
const STDERR_LINES = 40;

/**
 * DESIGN §4 step 4 and cli-dispatch's error recovery, in order: the result file (empty: failure;
 * no section at all: partial failure), its `<agent-result>` block, stdout, then the working tree
 * (changed files: completed but unverified; nothing: blocked). A non-zero exit keeps stderr and
 * marks any result it left as partial; a timeout keeps a partial result file as Complete with
 * Warnings and otherwise fails. Every path that is not a clean Complete carries a warning.
 */
export function collectResult(input: CollectInput): CollectedResult {
  const warnings: string[] = [];
  const exitFailed = !input.timedOut && input.exitCode !== 0;
  const exitNote = input.timedOut
    ? 'the CLI timed out and was killed'
    : input.exitCode === null
      ? 'the CLI was killed by a signal'
      : `the CLI exited with code ${input.exitCode}`;
  if (input.timedOut || exitFailed) warnings.push(exitNote);
  const stderr = input.timedOut || exitFailed ? stderrTail(input.stderr) : '';
  const withStderr = (text: string): string =>
    stderr ? `${text.trimEnd()}${text.trim() ? '\n\n' : ''}## stderr (${exitNote})\n\n${stderr}\n` : text;
  const failed = (source: CollectedResult['source'], text: string, error: string): CollectedResult => ({
    status: 'failure',
    outcome: 'failed',
    text: withStderr(text),
    source,
    warnings,
    summary: clip(error),
    outputs: [...input.changedFiles],
    findings: '',
    error: stderr ? `${error} (${lastLine(stderr)})` : error,
  });

  if (input.resultFileText !== null) {
    if (!input.resultFileText.trim()) {
      warnings.push('the result file is empty');
      return failed('file', '', 'The result file is empty.');
    }
    return fromStructured(input, input.resultFileText, 'file', warnings, withStderr, failed);
  }

  warnings.push('no result file was written');
  if (input.timedOut) return failed('none', input.stdout, 'The CLI timed out before writing a result file.');
  if (input.stdout.trim()) return fromStructured(input, input.stdout, 'stdout', warnings, withStderr, failed);
  if (exitFailed) return failed('none', '', `${capitalize(exitNote)} without writing a result.`);
  if (input.changedFiles.length > 0) {
    const files = input.changedFiles.join(', ');
    warnings.push('completed, unverified: the CLI returned no result but changed files');
    return {
      status: 'success_with_warnings',
      outcome: 'done',
      text: `No result was returned. Changed files:\n${input.changedFiles.map((file) => `- ${file}`).join('\n')}\n`,
      source: 'changed-files',
      warnings,
      summary: clip(
        `Completed, unverified: no result was returned, but ${input.changedFiles.length} file(s) changed (${files}).`,
      ),
      outputs: [...input.changedFiles],
      findings: '',
    };
  }
  return failed(
    'none',
    '',
    'Blocked: the CLI returned no structured result, printed nothing and changed no files.',
  );
}

/** The result file's text, or stdout when there was no file. */
function fromStructured(
  input: CollectInput,
  text: string,
  origin: 'file' | 'stdout',
  warnings: string[],
  withStderr: (text: string) => string,
  failed: (source: CollectedResult['source'], text: string, error: string) => CollectedResult,
): CollectedResult {
  const exitFailed = !input.timedOut && input.exitCode !== 0;
  const parsed = parseResultFile(text);
  const agent = parsed.agentResult;
  const hasSections = parsed.missing.length < RESULT_SECTIONS.length;

  if (!hasSections && !agent) {
    if (origin === 'file') {
      warnings.push(
        `the result file has none of the sections ${RESULT_SECTIONS.join(', ')}: a partial failure`,
      );
      return failed('file', text, 'The result file has none of the required sections.');
    }
    if (exitFailed) return failed('stdout', text, 'The CLI failed and printed no structured result.');
    warnings.push('stdout used as the result; it has none of the six sections, so its status is unknown');
    return build(input, {
      status: 'unknown',
      text: withStderr(text),
      source: 'stdout',
      warnings,
      summary: text,
    });
  }

  if (!hasSections && origin === 'file') {
    warnings.push('the result file has none of the six sections; its agent-result block was used');
  }
  let status: ResultStatus = hasSections ? parsed.status : 'unknown';
  if (hasSections && parsed.missing.length > 0)
    warnings.push(`the result lacks the sections: ${parsed.missing.join(', ')}`);
  if (hasSections && status === 'unknown') {
    warnings.push(
      `the Status '${clip(parsed.sections.Status ?? '', 80)}' is not Complete, Complete with Warnings or Failed`,
    );
  }

  let outputs = parsed.sections.Outputs !== undefined ? splitOutputs(parsed.sections.Outputs) : [];
  let questions: unknown;
  let needsInput = false;
  if (agent) {
    if (agent.rawStatus) warnings.push(`unknown agent-result status '${agent.rawStatus}'`);
    const inferredFromFiles =
      agent.statusSource === 'inferred' && agent.outputs.length === 0 && input.changedFiles.length > 0;
    const agentStatus: AgentStatus = inferredFromFiles ? 'completed' : agent.status;
    if (outputs.length === 0) outputs = agent.outputs.length > 0 ? agent.outputs : [...input.changedFiles];
    if (agentStatus === 'needs_input') {
      needsInput = true;
      questions = agent.questions;
    } else if (status === 'unknown') {
      status = AGENT_STATUS_MAP[agentStatus];
      if (agentStatus === 'needs_revision') warnings.push('the agent reports needs_revision');
    }
    if (agent.truncated) {
      warnings.push('the agent-result block is cut off (no closing tag)');
      // A cut-off run counts only if it left real work behind; the exit criteria then judge it.
      if (!hasSections && !needsInput && status !== 'failure') {
        if (input.changedFiles.length === 0)
          return failed('agent-result', text, 'Blocked: the run was cut off and left no new work.');
        status = 'success_with_warnings';
      }
    }
  }
  if (outputs.length === 0) outputs = [...input.changedFiles];

  // A result that outlived a failed or killed process is partial: it cannot be a clean Complete.
  if (input.timedOut || exitFailed) {
    if (status === 'success' || (input.timedOut && status === 'unknown')) status = 'success_with_warnings';
    if (exitFailed && status === 'unknown') status = 'failure';
    warnings.push('partial result: the process did not end cleanly');
  }

  const source: CollectedResult['source'] = hasSections ? origin : 'agent-result';
  if (status === 'failure' && !needsInput) {
    const why =
      firstLine(parsed.sections.Errors) ?? firstLine(parsed.sections.Summary) ?? firstLine(agent?.summary);
    return {
      ...failed(source, text, why ? `The agent reports failure: ${why}` : 'The agent reports failure.'),
      outputs,
    };
  }
  return build(input, {
    status,
    text: withStderr(text),
    source,
    warnings,
    summary: parsed.sections.Summary || agent?.summary || text,
    outputs,
    findings: parsed.sections.Findings ?? '',
    ...(needsInput ? { outcome: 'needs_input' as const, questions } : {}),
  });
}

const AGENT_STATUS_MAP: Readonly<Record<AgentStatus, ResultStatus>> = {
  completed: 'success',
  approved: 'success',
  approved_with_notes: 'success_with_warnings',
  needs_revision: 'success_with_warnings',
  needs_input: 'unknown',
  blocked: 'failure',
  'rolled-back': 'failure',
};

function build(
  input: CollectInput,
  result: Omit<CollectedResult, 'outcome' | 'outputs' | 'findings'> &
    Partial<Pick<CollectedResult, 'outcome' | 'outputs' | 'findings'>>,
): CollectedResult {
  return {
    ...result,
    outcome: result.outcome ?? 'done',
    summary: clip(result.summary),
    outputs: result.outputs ?? [...input.changedFiles],
    findings: result.findings ?? '',
  };
}

function stderrTail(stderr: string): string {
  return stderr.trimEnd().split(/\r?\n/).slice(-STDERR_LINES).join('\n').trim();
}

function firstLine(text: string | undefined): string | undefined {
  const line = text
    ?.split('\n')
    .map((candidate) => candidate.trim())
    .find((candidate) => candidate && !/^(none|n\/a)\.?$/i.test(candidate));
  return line ? clip(line, 200) : undefined;
}

function lastLine(text: string): string {
  return clip(text.split('\n').at(-1)?.trim() ?? '', 200);
}

function clip(text: string, max = SUMMARY_CHARS): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
