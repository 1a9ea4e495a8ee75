import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { CAPABILITIES } from '../shared/capabilities.js';
import { FlotillaError, formatProblem, type Problem } from '../shared/errors.js';
import {
  type MissionFile,
  type MissionSpec,
  missionSchema,
  normalizeDeliver,
  normalizeNotify,
  normalizeTask,
  taskSchema,
} from '../shared/mission.js';
import {
  describeIssues,
  describeValue,
  escapeControl,
  isRecord,
} from '../shared/validation/schema-problems.js';
import {
  formatPath,
  type PathSegment,
  parseYaml,
  positionOfPath,
  unresolvedAliasLines,
  type YamlSource,
} from '../shared/validation/yaml-lines.js';
import { capabilityWarnings, checkMissionRules, collectRuleTasks } from './rules.js';

/**
 * Reads a mission file: YAML → schema → cross-task rules → agent files → a normalised MissionSpec.
 * Every step that can still run after an earlier one found problems does, so the user fixes the
 * file in one pass; problems come back as data, sorted by line, and nothing here throws for them.
 */
export interface LoadMissionOptions {
  /** Folder of `<agent>.md` files; default `FLOTILLA_AGENTS`, then `agents/` beside the mission file. */
  readonly agentsDir?: string;
  /**
   * Capability terms the loaded adapters add to the vocabulary. A capability in neither is a
   * warning (most likely a typo), never an error: another host may run an adapter that has it.
   */
  readonly adapterCapabilities?: readonly string[];
}

export interface LoadedMission {
  readonly mission?: MissionSpec;
  readonly problems: Problem[];
  /** What is allowed but probably wrong; the mission is still valid. */
  readonly warnings: Problem[];
}

export async function loadMission(file: string, options: LoadMissionOptions = {}): Promise<LoadedMission> {
  const { mission, problems, warnings } = await load(file, options);
  return mission ? { mission, problems, warnings } : { problems, warnings };
}

/** For callers that stop on the first failure (submit, run): `mission/not-found` or `mission/invalid`. */
export async function loadMissionOrThrow(
  file: string,
  options: LoadMissionOptions = {},
): Promise<MissionSpec> {
  const result = await load(file, options);
  if (result.notFound) throw new FlotillaError('mission/not-found', `${file}: no such file`, result.problems);
  if (!result.mission) {
    const count = result.problems.length;
    throw new FlotillaError(
      'mission/invalid',
      `${file}: invalid mission (${count} ${count === 1 ? 'problem' : 'problems'})`,
      result.problems,
    );
  }
  return result.mission;
}

/** Remote workspaces are passed on untouched; anything else is a path relative to the mission file. */
const URL_LIKE = /^[a-z][a-z0-9+.-]*:\/\/|^[\w.-]+@[\w.-]+:/i;

export function resolveWorkspace(workspace: string, missionDir: string): string {
  return URL_LIKE.test(workspace) ? workspace : path.resolve(missionDir, workspace);
}

export function resolveAgentsDir(missionFile: string, options: LoadMissionOptions = {}): string {
  const chosen = options.agentsDir ?? process.env.FLOTILLA_AGENTS;
  return chosen ? path.resolve(chosen) : path.join(path.dirname(path.resolve(missionFile)), 'agents');
}

/** Garbage can make a YAML parser report hundreds of follow-on errors; the first ones are the useful ones. */
const MAX_SYNTAX_PROBLEMS = 20;

type LoadResult = Omit<LoadedMission, 'warnings'> & {
  readonly notFound?: boolean;
  readonly warnings?: Problem[];
};

async function load(
  file: string,
  options: LoadMissionOptions,
): Promise<LoadResult & { warnings: Problem[] }> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    const code = errorCode(error);
    if (code === 'ENOENT')
      return { problems: [{ file, path: '', message: 'no such file' }], warnings: [], notFound: true };
    const message =
      code === 'EISDIR' ? 'expected a file, got a directory' : `cannot read: ${errorText(error)}`;
    return { problems: [{ file, path: '', message }], warnings: [] };
  }
  const folders = {
    missionDir: path.dirname(path.resolve(file)),
    agentsDir: resolveAgentsDir(file, options),
  };
  return checkText(file, text, folders, options);
}

async function checkText(
  file: string,
  text: string,
  folders: { missionDir: string | null; agentsDir: string },
  options: LoadMissionOptions,
): Promise<LoadResult & { warnings: Problem[] }> {
  let result: LoadResult;
  try {
    result = await checkMission(file, text, folders, options);
  } catch (error) {
    // Hostile input can still trip a library (resource limits); that is the file's problem to
    // report, not a crash of the command.
    result = { problems: [{ file, path: '', message: `cannot be read as a mission: ${errorText(error)}` }] };
  }
  return {
    ...result,
    problems: result.problems.map(tidyProblem),
    warnings: (result.warnings ?? []).map(tidyProblem),
  };
}

/**
 * A mission file's text that came without a file (an HTTP request body): the same checks as a
 * file, problems with line and column and no file name. With `dir: null` there is no folder to
 * resolve a relative workspace from, so the workspace must be an absolute path or a URL.
 */
export async function checkMissionText(
  text: string,
  options: MissionObjectOptions = {},
): Promise<LoadedMission> {
  const { mission, problems, warnings } = await checkText('', text, objectFolders(options), options);
  return mission ? { mission, problems, warnings } : { problems, warnings };
}

/** Messages quote the user's text; one problem must stay one readable line whatever that text holds. */
const MAX_MESSAGE = 1000;

function tidyProblem(problem: Problem): Problem {
  const tidy = (text: string) => {
    const line = escapeControl(text);
    return line.length > MAX_MESSAGE ? `${line.slice(0, MAX_MESSAGE - 1)}…` : line;
  };
  return { ...problem, path: tidy(problem.path), message: tidy(problem.message) };
}

async function checkMission(
  file: string,
  text: string,
  folders: { missionDir: string | null; agentsDir: string },
  options: LoadMissionOptions,
): Promise<LoadResult> {
  const { source, errors } = parseYaml(text);
  if (errors.length > 0) {
    const problems: Problem[] = errors.slice(0, MAX_SYNTAX_PROBLEMS).map(({ line, column, message }) => ({
      file,
      line,
      column,
      path: '',
      message: `invalid YAML: ${message}`,
    }));
    if (errors.length > MAX_SYNTAX_PROBLEMS) {
      problems.push({
        file,
        path: '',
        message: `… and ${errors.length - MAX_SYNTAX_PROBLEMS} more YAML errors`,
      });
    }
    return { problems };
  }
  const expectedTop = 'expected a mapping with goal and tasks';
  if (source.doc.contents === null) {
    return { problems: [{ file, path: '', message: `empty file (${expectedTop})` }] };
  }
  const aliases = unresolvedAliasLines(source);
  if (aliases.length > 0) {
    return {
      problems: aliases.map((alias) => ({
        file,
        line: alias.line,
        path: '',
        message: `invalid YAML: alias *${alias.name} names no anchor`,
      })),
    };
  }

  const raw: unknown = source.doc.toJS();
  if (!isRecord(raw)) {
    const message = `${expectedTop}, got ${describeValue(raw)}`;
    return { problems: [{ file, ...positionOfPath(source, []), path: '', message }] };
  }
  const checked = await checkValue(raw, folders.missionDir, folders.agentsDir, options);
  const placed = (found: Found) => toProblem(file, source, found.path, found.message, found.at);
  const problems = sortByLine(checked.problems.map(placed));
  const warnings = checked.warnings.map(placed);
  return checked.mission ? { mission: checked.mission, problems, warnings } : { problems, warnings };
}

/** Where a mission given as an object (`client.submit({...})`) resolves what a file resolves beside itself. */
export interface MissionObjectOptions extends LoadMissionOptions {
  /**
   * The folder a relative `workspace` is resolved from, and whose `agents/` holds the personalities
   * when neither `agentsDir` nor `FLOTILLA_AGENTS` says otherwise; default the current directory.
   * `null`: the mission came from nowhere on this machine (an HTTP request), so a relative
   * workspace is a problem; agent files still come from `agentsDir`, `FLOTILLA_AGENTS` or `./agents`.
   */
  readonly dir?: string | null;
}

function objectFolders(options: MissionObjectOptions): { missionDir: string | null; agentsDir: string } {
  const missionDir = options.dir === null ? null : path.resolve(options.dir ?? process.cwd());
  const chosen = options.agentsDir ?? process.env.FLOTILLA_AGENTS;
  const agentsDir = chosen ? path.resolve(chosen) : path.join(missionDir ?? process.cwd(), 'agents');
  return { missionDir, agentsDir };
}

/**
 * A mission given as an object with the file's fields and spellings: the same schema, rules,
 * defaults and agent files as a file. Problems name JSON paths (`tasks[1].depends_on[0]`, the list
 * item where a file would give its line) and carry no file.
 */
export async function checkMissionObject(
  input: unknown,
  options: MissionObjectOptions = {},
): Promise<LoadedMission> {
  const { missionDir, agentsDir } = objectFolders(options);
  const atPath = (found: Found): Problem => ({
    file: '',
    path: formatPath(found.at ?? found.path),
    message: found.message,
  });
  let checked: Checked;
  try {
    if (!isRecord(input)) {
      const message = `expected an object with goal and tasks, got ${describeValue(input)}`;
      return { problems: [{ file: '', path: '', message }], warnings: [] };
    }
    checked = await checkValue(input, missionDir, agentsDir, options);
  } catch (error) {
    // An object can hold what no file can (a getter that throws): its problem, not a crash.
    const message = `cannot be read as a mission: ${errorText(error)}`;
    return { problems: [{ file: '', path: '', message }], warnings: [] };
  }
  const problems = checked.problems.map((found) => tidyProblem(atPath(found)));
  const warnings = checked.warnings.map((found) => tidyProblem(atPath(found)));
  return checked.mission ? { mission: checked.mission, problems, warnings } : { problems, warnings };
}

/** For submit: the object's MissionSpec, or `mission/invalid` listing every problem by JSON path. */
export async function missionFromObjectOrThrow(
  input: unknown,
  options: MissionObjectOptions = {},
): Promise<MissionSpec> {
  const { mission, problems } = await checkMissionObject(input, options);
  if (mission) return mission;
  const count = problems.length;
  throw new FlotillaError(
    'mission/invalid',
    `invalid mission (${count} ${count === 1 ? 'problem' : 'problems'}):\n${problems.map((p) => `  ${formatProblem(p)}`).join('\n')}`,
    problems,
  );
}

/** A problem before it is placed: a path, and a deeper node for the place when there is one. */
interface Found {
  readonly path: PathSegment[];
  readonly at?: PathSegment[];
  readonly message: string;
}

interface Checked {
  readonly mission?: MissionSpec;
  readonly problems: Found[];
  readonly warnings: Found[];
}

/** Schema, cross-task rules, agent files and workspace of a mission's parsed value, file or object. */
async function checkValue(
  raw: Record<string, unknown>,
  missionDir: string | null,
  agentsDir: string,
  options: LoadMissionOptions,
): Promise<Checked> {
  const parsed = missionSchema.safeParse(raw);
  const problems: Found[] = [
    ...(parsed.success ? [] : describeIssues(parsed.error.issues, raw, missionSchema)),
    ...checkMissionRules(raw),
  ];
  const agents = await readAgents(raw, agentsDir);
  problems.push(...agents.missing);
  const workspace =
    missionDir === null
      ? (relativeWorkspace(raw.workspace) ?? (await checkWorkspacePath(raw.workspace, rootDir())))
      : await checkWorkspacePath(raw.workspace, missionDir);
  if (workspace) problems.push({ path: ['workspace'], message: workspace });
  const known = [...CAPABILITIES, ...(options.adapterCapabilities ?? [])];
  const warnings = capabilityWarnings(collectRuleTasks(raw), known);
  if (!parsed.success || problems.length > 0) return { problems, warnings };
  const base = missionDir ?? rootDir();
  return { mission: normalizeMission(parsed.data, base, agentsDir, agents.texts), problems, warnings };
}

function normalizeMission(
  data: MissionFile,
  missionDir: string,
  agentsDir: string,
  agents: Readonly<Record<string, string>>,
): MissionSpec {
  return {
    goal: data.goal,
    workspace: resolveWorkspace(data.workspace, missionDir),
    base: data.base,
    budgetUsd: data.defaults.budget_usd,
    checkpointMs: data.defaults.checkpoint_interval,
    ...(data.notify?.length ? { notify: normalizeNotify(data.notify) } : {}),
    agentsDir,
    agents,
    tasks: data.tasks.map((task) => normalizeTask(task, data.defaults, data)),
    ...(data.deliver ? { deliver: normalizeDeliver(data.deliver) } : {}),
    ...(data.on_finish ? { onFinish: data.on_finish } : {}),
  };
}

/**
 * What a local workspace path must be before anything is created: a folder, or a missing folder
 * inside one that exists. A regular file cannot become a repository, and a missing parent is
 * almost always a mistyped path, which `mkdir -p` would turn into a mission on an empty repo.
 */
async function checkWorkspacePath(workspace: unknown, missionDir: string): Promise<string | undefined> {
  if (typeof workspace !== 'string' || workspace === '' || URL_LIKE.test(workspace)) return undefined;
  const where = path.resolve(missionDir, workspace);
  const kind = await pathKind(where);
  if (kind === 'directory') return undefined;
  if (kind === 'other')
    return `expected a folder (a git repository, or a folder to make one), got a file at ${where}`;
  const parent = path.dirname(where);
  if ((await pathKind(parent)) === 'directory') return undefined;
  return `no folder at ${where}, and its parent ${parent} does not exist either; create it, or fix the path (a missing workspace is made only inside an existing folder)`;
}

/** Without a folder every valid workspace is absolute or a URL, which resolve the same from anywhere. */
function rootDir(): string {
  return path.parse(process.cwd()).root;
}

/**
 * A mission with no folder of its own (sent over HTTP) names its workspace so that it reads the
 * same wherever it came from: an absolute path (a folder of the machine that submits, checked as
 * a file's is) or a URL. Unset means `.`, which is relative.
 */
function relativeWorkspace(workspace: unknown): string | undefined {
  if (workspace !== undefined && typeof workspace !== 'string') return undefined;
  if (workspace !== undefined && (URL_LIKE.test(workspace) || path.isAbsolute(workspace))) return undefined;
  const got = workspace === undefined ? 'nothing (which means .)' : `'${workspace}'`;
  return `expected an absolute path or a URL (a mission sent without a folder has no folder to resolve a relative path from), got ${got}`;
}

async function pathKind(where: string): Promise<'directory' | 'other' | 'missing'> {
  try {
    return (await stat(where)).isDirectory() ? 'directory' : 'other';
  } catch {
    return 'missing';
  }
}

interface AgentProblem {
  readonly path: PathSegment[];
  readonly message: string;
}

/**
 * Reads each agent file a task names, once, even when the schema rejected other parts of the task,
 * so a missing personality is reported together with everything else. Names the schema would
 * reject (a `/`, a leading dot) are never turned into paths.
 */
async function readAgents(
  raw: Record<string, unknown>,
  agentsDir: string,
): Promise<{ texts: Record<string, string>; missing: AgentProblem[] }> {
  const uses: { index: number; agent: string }[] = [];
  if (Array.isArray(raw.tasks)) {
    raw.tasks.forEach((task: unknown, index: number) => {
      const agent = isRecord(task) ? task.agent : undefined;
      if (typeof agent === 'string' && taskSchema.shape.agent.safeParse(agent).success) {
        uses.push({ index, agent });
      }
    });
  }
  const names = [...new Set(uses.map((use) => use.agent))];
  const results = await Promise.all(names.map((name) => readAgent(path.join(agentsDir, `${name}.md`))));
  const texts: Record<string, string> = {};
  const failures = new Map<string, string>();
  names.forEach((name, i) => {
    const result = results[i];
    if (result?.text !== undefined) texts[name] = result.text;
    else failures.set(name, result?.error ?? 'cannot read');
  });
  const missing = uses.flatMap((use) => {
    const error = failures.get(use.agent);
    return error === undefined ? [] : [{ path: ['tasks', use.index, 'agent'], message: error }];
  });
  return { texts, missing };
}

async function readAgent(file: string): Promise<{ text?: string; error?: string }> {
  try {
    return { text: await readFile(file, 'utf8') };
  } catch (error) {
    const code = errorCode(error);
    if (code === 'ENOENT') return { error: `no agent file at ${file}` };
    if (code === 'EISDIR') return { error: `expected an agent file at ${file}, got a directory` };
    return { error: `cannot read agent file ${file}: ${errorText(error)}` };
  }
}

function toProblem(
  file: string,
  source: YamlSource,
  at: PathSegment[],
  message: string,
  /** A deeper node than `at` to take the line from (the list item at fault). */
  lineAt: PathSegment[] = at,
): Problem {
  const place = positionOfPath(source, lineAt);
  return place === undefined
    ? { file, path: formatPath(at), message }
    : { file, line: place.line, column: place.column, path: formatPath(at), message };
}

function sortByLine(problems: Problem[]): Problem[] {
  return problems
    .map((problem, order) => ({ problem, order }))
    .sort((a, b) => (a.problem.line ?? 0) - (b.problem.line ?? 0) || a.order - b.order)
    .map(({ problem }) => problem);
}

function errorCode(error: unknown): string | undefined {
  return isRecord(error) && typeof error.code === 'string' ? error.code : undefined;
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
