import { constants } from 'node:fs';
import { copyFile, mkdir, mkdtemp, rm, rmdir, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadMission } from '../../producer/load.js';
import { extractMissionYaml, setWorkspace } from '../../producer/plan-answer.js';
import { buildPlanPrompt, type PlanPromptInput } from '../../producer/plan-prompt.js';
import { checkPlanRules } from '../../producer/plan-rules.js';
import type { Adapter } from '../../shared/adapter.js';
import { type Config, DEFAULT_SLOTS } from '../../shared/config.js';
import { longestPath } from '../../shared/dag.js';
import { exitCodeFor, formatProblem, isFlotillaError, type Problem } from '../../shared/errors.js';
import type { MissionSpec } from '../../shared/mission.js';
import { matchCli } from '../../shared/queue/match.js';
import { detectClis } from '../../workers/agent/adapters/detect.js';
import { loadAdapters } from '../../workers/agent/adapters/load-adapters.js';
import { printedTooMuch } from '../../workers/agent/collect-result.js';
import { resolveModel } from '../../workers/agent/invocation.js';
import { dispatchPaths, invokeAgent } from '../../workers/agent/invoke.js';
import { tail } from '../../workers/agent/spawn.js';
import type { Io } from '../io.js';

/**
 * `flotilla plan "<goal>"`: asks a planning CLI on this machine for a mission file, validates it as
 * `flotilla validate` would plus the decomposition rules, and hands the problems back to the CLI
 * for a corrected file until it is valid or the rounds run out. Only a valid file reaches `-o`;
 * a rejected one is kept beside it as a draft to fix by hand.
 */

const MAX_ROUNDS = 3;
/** The dispatch task id of the planning run: the prompt and result file names follow from it. */
const PLAN_TASK_ID = 'plan';
/** Capabilities of a CLI suited to planning; the one offering the most of them wins. */
const PLANNING_CAPABILITIES = 'large_analysis documentation';

export async function plan(
  args: { goal: string; out?: string; workspace?: string; adaptersDir?: string; run: boolean },
  config: Config,
  io: Io,
): Promise<number> {
  const goal = args.goal.trim();
  if (!goal) {
    io.err('flotilla plan: the goal is empty (expected: flotilla plan "<goal>")');
    return 2;
  }
  const out = args.out ?? 'mission.yaml';
  const draft = draftPathOf(out);
  // Checked before the planner runs, so nobody waits minutes for a file that cannot be written.
  if (await exists(out)) {
    io.err(
      `flotilla plan: ${out} already exists; not overwriting it (remove it or choose another file with -o)`,
    );
    return 2;
  }
  const workspace = await describeWorkspace(args.workspace, out);
  if ('error' in workspace) {
    io.err(`flotilla plan: ${workspace.error}`);
    return 2;
  }

  const adaptersDir = path.resolve(args.adaptersDir ?? config.adaptersDir);
  const picked = await pickPlanner(adaptersDir, io);
  if (typeof picked === 'number') return picked;
  const { adapter } = picked;
  const model = resolveModel(adapter, 'planning');
  io.err(`planning with ${adapter.displayName}${model ? ` (${model})` : ''}…`);

  await mkdir(path.dirname(path.resolve(out)), { recursive: true });
  const scratch =
    workspace.prompt.kind === 'existing' ? undefined : await mkdtemp(path.join(tmpdir(), 'flotilla-plan-'));
  const cwd = workspace.prompt.kind === 'existing' ? workspace.prompt.path : (scratch ?? '.');
  const files = dispatchFiles(cwd, adapter);
  const createdPlanning = !(await exists(path.join(cwd, '.planning')));
  const controller = new AbortController();
  const onSignal = () => controller.abort('interrupted');
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  let outcome: RoundsOutcome;
  try {
    outcome = await planRounds({
      goal,
      workspace,
      adapter,
      model,
      files,
      cwd,
      draft,
      io,
      signal: controller.signal,
      ...(config.maxOutputBytes !== undefined ? { maxOutputBytes: config.maxOutputBytes } : {}),
    });
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await cleanUp(cwd, files, scratch, createdPlanning);
  }
  if ('exitCode' in outcome) return outcome.exitCode;

  try {
    // COPYFILE_EXCL: a file that appeared at `out` while the planner ran is not overwritten either.
    await copyFile(draft, out, constants.COPYFILE_EXCL);
  } catch (error) {
    const why =
      (error as NodeJS.ErrnoException).code === 'EEXIST' ? 'it appeared while planning' : String(error);
    io.err(`flotilla plan: cannot write ${out} (${why}); the valid mission is in ${draft}`);
    return 2;
  }
  await rm(draft, { force: true });
  io.out(
    `${out}: valid — ${describeMission(outcome.mission)}; planned by ${adapter.displayName} in ${plural(outcome.rounds, 'round')}`,
  );
  if (!args.run) {
    io.err(`run it with: flotilla run ${out}`);
    return 0;
  }
  const { run } = await import('./run.js');
  return run(
    { file: out, adaptersDir: args.adaptersDir, workers: 1, slots: DEFAULT_SLOTS, json: false },
    config,
    io,
  );
}

// ── The rounds ──────────────────────────────────────────────────────────────────────────────────

interface RoundsInput {
  readonly goal: string;
  readonly workspace: Workspace;
  readonly adapter: Adapter;
  readonly model?: string;
  readonly files: DispatchFiles;
  readonly cwd: string;
  readonly draft: string;
  readonly io: Io;
  readonly signal: AbortSignal;
  /** FLOTILLA_MAX_OUTPUT: the planner is stopped past it. */
  readonly maxOutputBytes?: number;
}

type RoundsOutcome = { mission: MissionSpec; rounds: number } | { exitCode: number };

async function planRounds(input: RoundsInput): Promise<RoundsOutcome> {
  const { adapter, files, io } = input;
  let retry: PlanPromptInput['retry'];
  let drafted = false;
  for (let round = 1; round <= MAX_ROUNDS; round++) {
    const prompt = buildPlanPrompt({
      goal: input.goal,
      workspace: input.workspace.prompt,
      workspaceValue: input.workspace.value,
      resultPath: files.resultPath,
      retry,
    });
    const answer = await askPlanner(input, prompt);
    if ('exitCode' in answer) return answer;

    const checked = await checkAnswer(answer.text, input);
    if (checked.mission) return { mission: checked.mission, rounds: round };
    drafted ||= checked.text !== undefined;
    const lines = checked.problems.map(formatProblem);
    io.err(`round ${round}/${MAX_ROUNDS}: the mission has ${plural(lines.length, 'problem')}:`);
    for (const line of lines) io.err(line);
    retry = { round, maxRounds: MAX_ROUNDS, problems: lines, previous: checked.text };
    if (round < MAX_ROUNDS) io.err(`asking ${adapter.displayName} for a corrected file…`);
  }
  const kept = drafted ? `; the last draft is kept at ${input.draft}` : '';
  io.err(`flotilla plan: no valid mission after ${MAX_ROUNDS} rounds${kept}`);
  return { exitCode: exitCodeFor('mission/invalid') };
}

/** One run of the planning CLI: its answer, or the exit code when the CLI itself failed. */
async function askPlanner(
  input: RoundsInput,
  prompt: string,
): Promise<{ text: string } | { exitCode: number }> {
  const { adapter, files } = input;
  const run = await invokeAgent({
    adapter,
    cwd: input.cwd,
    paths: files,
    prompt,
    ...(input.model ? { model: input.model } : {}),
    timeoutMs: adapter.config.timeout_ms,
    signal: input.signal,
    ...(input.maxOutputBytes !== undefined ? { maxOutputBytes: input.maxOutputBytes } : {}),
  });
  const { outcome } = run;
  const io = input.io;
  const name = adapter.displayName;
  if (outcome.cancelled) {
    io.err(`flotilla plan: interrupted; ${name} was stopped`);
    return { exitCode: 130 };
  }
  if (outcome.timedOut) {
    io.err(
      `flotilla plan: ${name} did not finish within ${Math.round(adapter.config.timeout_ms / 1000)}s (the adapter's timeout_ms) and was stopped`,
    );
    return { exitCode: 1 };
  }
  if (outcome.outputCapped !== undefined) {
    io.err(`flotilla plan: ${printedTooMuch(outcome.outputCapped, name)} (FLOTILLA_MAX_OUTPUT)`);
    return { exitCode: 1 };
  }
  if (outcome.exitCode !== 0 && run.resultFileText === null) {
    const reply = `${outcome.stdout}\n${outcome.stderr}`;
    const detail = run.replyClass?.message ?? (tail(reply.trim(), 1_000) || 'no output');
    io.err(`flotilla plan: ${name} failed (exit code ${outcome.exitCode ?? 'none'}): ${detail}`);
    return { exitCode: 1 };
  }
  return { text: run.resultFileText ?? run.answer };
}

/** Validation of one answer: the mission, or every problem with the draft's file and line. */
async function checkAnswer(
  answer: string,
  input: RoundsInput,
): Promise<{ mission?: MissionSpec; problems: Problem[]; text?: string }> {
  const extracted = extractMissionYaml(answer);
  if (!extracted) {
    const message = `the planner wrote no mission: no result file at ${input.files.resultPath} and nothing on stdout`;
    return { problems: [{ file: input.draft, path: '', message }] };
  }
  const value = input.workspace.value;
  const text = value ? setWorkspace(extracted.yaml, value) : extracted.yaml;
  await writeFile(input.draft, text);
  const { mission, problems } = await loadMission(input.draft);
  if (!mission || problems.length > 0) return { problems, text };
  const line = lineOfTasks(text);
  const planProblems = checkPlanRules(mission.tasks).map((problem) => ({
    file: input.draft,
    ...(line ? { line } : {}),
    ...problem,
  }));
  return planProblems.length > 0 ? { problems: planProblems, text } : { mission, problems: [], text };
}

function lineOfTasks(text: string): number | undefined {
  const index = text.split('\n').findIndex((line) => /^tasks[ \t]*:/.test(line));
  return index >= 0 ? index + 1 : undefined;
}

// ── Choosing the CLI ────────────────────────────────────────────────────────────────────────────

/**
 * The detected CLI that offers the most planning capabilities (ties go to adapter file order),
 * else the first detected one: any agent CLI can write a YAML file.
 */
async function pickPlanner(adaptersDir: string, io: Io): Promise<{ adapter: Adapter } | number> {
  let adapters: Adapter[];
  try {
    const loaded = await loadAdapters(adaptersDir);
    adapters = loaded.adapters;
    // A broken adapter file costs only its own CLI here; `flotilla adapters check` says more.
    for (const problem of loaded.problems) io.err(`warning: ${formatProblem(problem)}`);
  } catch (error) {
    if (!isFlotillaError(error)) throw error;
    io.err(`flotilla plan: ${error.message}`);
    return exitCodeFor(error.code);
  }
  const detected = await detectClis(adapters);
  const available = detected.filter((d) => d.available).map((d) => d.adapter);
  if (available.length === 0) {
    const found =
      detected.length > 0
        ? `: ${detected.map((d) => `${d.adapter.cli} (${d.reason ?? 'not available'})`).join(', ')}; install one of these CLIs`
        : ', which holds no available adapter';
    io.err(
      `flotilla plan: no planning CLI detected from the adapters in ${adaptersDir}${found}, or pass --adapters DIR`,
    );
    return 1;
  }
  const match = matchCli({ capability: PLANNING_CAPABILITIES }, available);
  const adapter = match.adapter ?? [...available].sort((a, b) => a.order - b.order)[0];
  return adapter ? { adapter } : 1;
}

// ── Files and folders ───────────────────────────────────────────────────────────────────────────

interface Workspace {
  readonly prompt: PlanPromptInput['workspace'];
  /** The mission's `workspace:`, relative to the output file; flotilla sets it when it knows it. */
  readonly value?: string;
}

async function describeWorkspace(
  dir: string | undefined,
  out: string,
): Promise<Workspace | { error: string }> {
  if (dir === undefined) return { prompt: { kind: 'none' } };
  const absolute = path.resolve(dir);
  const relative = path.relative(path.dirname(path.resolve(out)), absolute) || '.';
  const value = relative.startsWith('.') || path.isAbsolute(relative) ? relative : `./${relative}`;
  const info = await stat(absolute).catch(() => null);
  if (!info) return { prompt: { kind: 'new', path: absolute }, value };
  if (!info.isDirectory()) return { error: `--workspace ${dir}: expected a folder, got a file` };
  return { prompt: { kind: 'existing', path: absolute }, value };
}

interface DispatchFiles {
  readonly name: string;
  /** Relative to the CLI's working directory, as the prompt and the invocation name them. */
  readonly promptPath: string;
  readonly resultPath: string;
  readonly promptFile: string;
  readonly resultFile: string;
}

function dispatchFiles(cwd: string, adapter: Adapter): DispatchFiles {
  const { name, promptPath, resultPath } = dispatchPaths(adapter, PLAN_TASK_ID);
  return {
    name,
    promptPath,
    resultPath,
    promptFile: path.join(cwd, promptPath),
    resultFile: path.resolve(cwd, resultPath),
  };
}

/** The workspace is the user's: take back the files planning put there, and the folders if they were ours. */
async function cleanUp(
  cwd: string,
  files: DispatchFiles,
  scratch: string | undefined,
  createdPlanning: boolean,
) {
  if (scratch) {
    await rm(scratch, { recursive: true, force: true });
    return;
  }
  await rm(files.promptFile, { force: true });
  await rm(files.resultFile, { force: true });
  if (!createdPlanning) return;
  for (const dir of [path.join(cwd, '.planning', 'dispatch'), path.join(cwd, '.planning')]) {
    // Not empty means the CLI left something there; that stays for the user to look at.
    await rmdir(dir).catch(() => {});
  }
}

/** `mission.yaml` → `mission.draft.yaml`, beside it, so relative paths in it resolve the same. */
function draftPathOf(out: string): string {
  const ext = path.extname(out);
  const known = ext === '.yaml' || ext === '.yml';
  const base = known ? out.slice(0, -ext.length) : out;
  return `${base}.draft${known ? ext : '.yaml'}`;
}

async function exists(file: string): Promise<boolean> {
  return (await stat(file).catch(() => null)) !== null;
}

function describeMission(mission: MissionSpec): string {
  const ids = mission.tasks.map((task) => task.id).join(', ');
  const roots = mission.tasks.filter((task) => task.dependsOn.length === 0).length;
  const chain = longestPath(mission.tasks, () => 1);
  return `${plural(mission.tasks.length, 'task')} (${ids}), ${plural(roots, 'root')}, longest chain ${chain}`;
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}
