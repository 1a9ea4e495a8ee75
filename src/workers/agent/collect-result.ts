import { formatByteSize } from '../../shared/byte-size.js';
import type { ResultStatus } from '../../shared/contracts.js';
import { clip } from '../../shared/markdown.js';
import { type AgentStatus, parseResultFile, RESULT_SECTIONS, splitOutputs } from './result-file.js';

/**
 * The result fallback chain (docs/DISPATCH.md, result collection): what a CLI left behind (exit code, result file,
 * `<agent-result>`, stdout, changed files) becomes one result for the gate. Never throws.
 */

export interface CollectInput {
  /** null when the process ended by a signal. */
  readonly exitCode: number | null;
  readonly timedOut: boolean;
  /** Flotilla stopped the CLI for printing more than this many bytes (FLOTILLA_MAX_OUTPUT). */
  readonly outputCapped?: number;
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
 * The result chain and cli-dispatch's error recovery, in order: the result file (empty: failure;
 * no section at all: partial failure), its `<agent-result>` block, stdout, then the working tree
 * (changed files: completed but unverified; nothing: blocked). A non-zero exit keeps stderr and
 * marks any result it left as partial; a timeout keeps a partial result file as Complete with
 * Warnings and otherwise fails. Every path that is not a clean Complete carries a warning.
 */
export function collectResult(given: CollectInput): CollectedResult {
  // Stopped for its output, a CLI is treated as one stopped for its time: killed by flotilla.
  const input = given.outputCapped !== undefined ? { ...given, timedOut: true } : given;
  const warnings: string[] = [];
  const exitFailed = !input.timedOut && input.exitCode !== 0;
  const exitNote =
    given.outputCapped !== undefined
      ? printedTooMuch(given.outputCapped)
      : input.timedOut
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
    summary: clip(error, SUMMARY_CHARS),
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
  if (input.timedOut) {
    const why =
      given.outputCapped !== undefined
        ? `${capitalize(printedTooMuch(given.outputCapped))}.`
        : 'The CLI timed out before writing a result file.';
    return failed('none', input.stdout, why);
  }
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
        SUMMARY_CHARS,
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
    summary: clip(result.summary, SUMMARY_CHARS),
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
    // A list item's marker is layout, not part of the sentence quoted in "reports failure: …".
    .map((candidate) => candidate.trim().replace(/^(?:[-*+]|\d+[.)])\s+/, ''))
    .find((candidate) => candidate && !/^(none|n\/a)\.?$/i.test(candidate));
  return line ? clip(line, 200) : undefined;
}

function lastLine(text: string): string {
  return clip(text.split('\n').at(-1)?.trim() ?? '', 200);
}

/** What a run stopped by FLOTILLA_MAX_OUTPUT is told, in the task's error and its warnings. */
export function printedTooMuch(capBytes: number, who = 'the CLI'): string {
  return `${who} printed more than ${formatByteSize(capBytes)}; stopped by flotilla`;
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
