import { randomUUID } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { parseArgs, SIM_VERSION, type SimArgs, USAGE } from './args.js';
import { executeSteps, type Outcome, type Report } from './execute.js';
import { createSimIo, resolveInside, type SimOutput } from './io.js';
import { type PromptFacts, readPromptFacts } from './prompt.js';
import { defaultStateDir, rateLimitKey } from './rate-limit-state.js';
import { formatClaudeJson, formatResult } from './result-file.js';

/** The process around the sim: arguments in, prompt read, steps performed, result delivered, exit code out. */

export interface SimProcess {
  readonly argv: readonly string[];
  readonly cwd: string;
  readonly env: NodeJS.ProcessEnv;
  readonly stdin: NodeJS.ReadableStream & { readonly isTTY?: boolean };
  readonly stdout: SimOutput;
  readonly stderr: SimOutput;
}

/** An exit code, or `hang` when the block asked the sim to exceed its timeout. */
export type SimExit = number | 'hang';

export async function runSim(proc: SimProcess): Promise<SimExit> {
  const started = Date.now();
  const parsed = parseArgs(proc.argv);
  if (!parsed.ok) return usageError(proc, parsed.message);
  const { args } = parsed;
  if (args.version) {
    proc.stdout.write(`flotilla-sim ${SIM_VERSION}\n`);
    return 0;
  }
  if (args.help) {
    proc.stdout.write(`${USAGE}\n`);
    return 0;
  }

  const prompt = await readPrompt(args, proc);
  if (typeof prompt !== 'string') return usageError(proc, prompt.error);
  const facts = readPromptFacts(prompt, args.role);
  const deliver = (report: Report, exitCode: number, stdoutOnly: boolean, costUsd?: number) =>
    deliverResult(proc, args, facts, {
      report,
      exitCode,
      stdoutOnly,
      costUsd,
      started,
      promptChars: prompt.length,
    });

  // zod and yaml load only when there is a block to read, so `--version` (each host's detection) stays quick.
  const block =
    facts.simSource === undefined
      ? { ok: true as const, steps: [] }
      : (await import('./steps.js')).parseSimBlock(facts.simSource);
  if (!block.ok) {
    for (const problem of block.problems) proc.stderr.write(`flotilla-sim: ${problem}\n`);
    await deliver(
      failedReport('The task has a sim block that flotilla-sim cannot read.', block.problems),
      2,
      false,
    );
    return 2;
  }

  const io = createSimIo({
    cwd: proc.cwd,
    stateDir: defaultStateDir(proc.env),
    stateKey: rateLimitKey(proc.cwd, args.role, facts.dispatchTaskId ?? facts.task),
    out: { stdout: proc.stdout, stderr: proc.stderr },
  });
  let outcome: Outcome;
  try {
    outcome = await executeSteps(
      block.steps,
      {
        role: args.role,
        attempt: facts.attempt,
        model: args.model,
        dispatchTaskId: facts.dispatchTaskId,
        answers: facts.answers,
      },
      io,
    );
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    proc.stderr.write(`flotilla-sim: ${message}\n`);
    await deliver(failedReport(`flotilla-sim could not finish: ${message}`, [message]), 1, false);
    return 1;
  }

  switch (outcome.kind) {
    case 'abort':
      proc.stderr.write(`${outcome.message}\n`);
      return 1;
    case 'hang':
      if (outcome.report) await deliver(outcome.report, 0, false);
      return 'hang';
    case 'report':
      await deliver(outcome.report, outcome.exitCode, outcome.stdoutOnly, outcome.costUsd);
      return outcome.exitCode;
  }
}

async function readPrompt(args: SimArgs, proc: SimProcess): Promise<string | { error: string }> {
  let text: string;
  const source = args.prompt;
  if (source.kind === 'text') {
    text = source.text;
  } else if (source.kind === 'file') {
    try {
      text = await readFile(resolve(proc.cwd, source.path), 'utf8');
    } catch (error) {
      return {
        error: `cannot read the prompt file '${source.path}': ${(error as NodeJS.ErrnoException).code}`,
      };
    }
  } else {
    if (proc.stdin.isTTY)
      return { error: 'no prompt: give --prompt-file, --prompt, an argument, or pipe it on stdin' };
    text = await readAll(proc.stdin);
  }
  return text.trim().length > 0 ? text : { error: 'the prompt is empty' };
}

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks).toString('utf8');
}

interface Delivery {
  readonly report: Report;
  readonly exitCode: number;
  readonly stdoutOnly: boolean;
  readonly costUsd?: number;
  readonly started: number;
  readonly promptChars: number;
}

/**
 * The result goes to the file the prompt names; to stdout when the block says `stdout_only`, when
 * the prompt names no file, or when the file would be outside the working directory. With
 * `--output-format json` stdout carries one JSON line instead, with the result text inside it.
 */
async function deliverResult(
  proc: SimProcess,
  args: SimArgs,
  facts: PromptFacts,
  delivery: Delivery,
): Promise<void> {
  const text = formatResult(delivery.report, facts.dispatchTaskId);
  let wroteTo: string | undefined;
  if (!delivery.stdoutOnly && facts.resultPath) {
    try {
      const target = await resolveInside(proc.cwd, facts.resultPath);
      await mkdir(dirname(target.absolute), { recursive: true });
      await writeFile(target.absolute, text);
      wroteTo = target.relative;
    } catch (error) {
      proc.stderr.write(`flotilla-sim: ${(error as Error).message}; printing the result instead\n`);
    }
  }
  if (args.outputFormat === 'json') {
    const line = formatClaudeJson({
      result: wroteTo ? `Wrote the result to ${wroteTo}.` : text,
      isError: delivery.exitCode !== 0,
      durationMs: Date.now() - delivery.started,
      promptChars: delivery.promptChars,
      costUsd: delivery.costUsd ?? 0,
      model: args.model,
      sessionId: randomUUID(),
    });
    proc.stdout.write(`${line}\n`);
  } else if (!wroteTo) {
    proc.stdout.write(text);
  }
}

function failedReport(summary: string, errors: readonly string[]): Report {
  return { status: 'Failed', summary, outputs: [], findings: [], issues: [], errors };
}

function usageError(proc: SimProcess, message: string): number {
  proc.stderr.write(`flotilla-sim: ${message}\n${USAGE}\n`);
  return 2;
}
