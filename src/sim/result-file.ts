import type { Report } from './execute.js';

/**
 * The result contract of seeds/cli-dispatch.txt as flotilla-sim writes it: the six bold sections,
 * a reviewer's JSON verdict in a fenced block under Findings, and for a pause the `<agent-result>`
 * block of agent-dispatch with status needs_input and its questions.
 */
export function formatResult(report: Report, dispatchTaskId?: string): string {
  const lines: string[] = [`# flotilla-sim result${dispatchTaskId ? `: ${dispatchTaskId}` : ''}`, ''];
  lines.push(`**Status**: ${report.status}`, '');
  lines.push(`**Summary**: ${report.summary}`, '');
  lines.push(...section('Outputs', report.outputs), '');
  lines.push('**Findings**:');
  if (report.verdict) {
    lines.push('', '```json', JSON.stringify(report.verdict), '```', '');
  }
  lines.push(...report.findings.map(bullet), '');
  lines.push(...section('Issues', report.issues), '');
  lines.push(...section('Errors', report.errors), '');
  if (report.needsInput) lines.push(agentResult(report), '');
  return lines.join('\n');
}

function section(name: string, items: readonly string[]): string[] {
  return items.length === 0 ? [`**${name}**: None`] : [`**${name}**:`, ...items.map(bullet)];
}

function bullet(item: string): string {
  return `- ${item}`;
}

function agentResult(report: Report): string {
  const pause = report.needsInput;
  return [
    '<agent-result>',
    '<status>needs_input</status>',
    `<outputs>${report.outputs.join(', ')}</outputs>`,
    `<summary>${report.summary}</summary>`,
    `<questions>${JSON.stringify(pause?.questions ?? [])}</questions>`,
    `<completed-steps>${(pause?.completedSteps ?? []).join('; ')}</completed-steps>`,
    `<resume-guidance>${pause?.resumeGuidance ?? 'Answer the questions; the task continues from where it stopped.'}</resume-guidance>`,
    '</agent-result>',
  ].join('\n');
}

export interface ClaudeJsonInput {
  readonly result: string;
  readonly isError: boolean;
  readonly durationMs: number;
  readonly promptChars: number;
  readonly costUsd: number;
  readonly model?: string;
  readonly sessionId: string;
}

/**
 * One line shaped like Claude Code's `--output-format json`, so the usage and cost parsing
 * (`usage_format: claude-json`) is exercised without a real CLI. Tokens are characters / 4.
 */
export function formatClaudeJson(input: ClaudeJsonInput): string {
  return JSON.stringify({
    type: 'result',
    subtype: input.isError ? 'error_during_execution' : 'success',
    is_error: input.isError,
    duration_ms: input.durationMs,
    duration_api_ms: input.durationMs,
    num_turns: 1,
    result: input.result,
    session_id: input.sessionId,
    total_cost_usd: input.costUsd,
    usage: {
      input_tokens: Math.ceil(input.promptChars / 4),
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
      output_tokens: Math.ceil(input.result.length / 4),
    },
    ...(input.model ? { model: input.model } : {}),
  });
}
