import { basename } from 'node:path';
import { z } from 'zod';
import { type Adapter, type DispatchConfig, dispatchConfigSchema } from '../../../shared/adapter.js';
import { MODEL_TIERS, type ModelTier } from '../../../shared/capabilities.js';
import type { Problem } from '../../../shared/errors.js';
import {
  describeIssues,
  describeValue,
  isRecord,
  valueAt,
} from '../../../shared/validation/schema-problems.js';
import {
  formatPath,
  lineOfPath,
  type PathSegment,
  parseYaml,
  type YamlSource,
} from '../../../shared/validation/yaml-lines.js';
import {
  blocksIn,
  findSection,
  type MarkdownOutline,
  outlineMarkdown,
  type Section,
  tableRowsIn,
} from './markdown-outline.js';

/**
 * One adapter file, read without touching the disk: front matter → `## Dispatch Configuration`
 * section → its first ```yaml block → dispatchConfigSchema → model tiers. Every problem found is
 * returned with the line of the .md file it is on, so one pass fixes the file.
 */
export interface ParsedAdapterFile {
  /** Set when the file is a valid adapter, whether or not it is `available`. */
  readonly adapter?: Adapter;
  /** Why the file is not an adapter at all; such a file has no problems. */
  readonly skipped?: string;
  readonly problems: Problem[];
  /** The CLI name and where it comes from, for the duplicate check across files. */
  readonly cli?: { readonly name: string; readonly line?: number };
}

export const NO_DISPATCH_SECTION = "no '## Dispatch Configuration' section";

/**
 * Legion's front matter also carries `capabilities:` as a map of host features (not dispatch
 * capabilities), `detection`, `known_quirks` and more; only these three mean anything here.
 */
const frontMatterSchema = z
  .object({
    cli: z.string().min(1).optional(),
    cli_display_name: z.string().min(1).optional(),
    /** Who makes the model behind the CLI; escalation to another CLI prefers another vendor. */
    vendor: z.string().min(1).optional(),
    max_prompt_size: z.number().int().positive().optional(),
  })
  .passthrough();

/** The name goes into job data, registry entries and `cli:` pins, where `:` and spaces would break. */
const CLI_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

const isDispatchHeading = (title: string) => /^dispatch configuration$/i.test(title.trim());
const isToolMappingsHeading = (title: string) => /^tool mappings$/i.test(title.trim());

export function parseAdapterFile(file: string, text: string, order: number): ParsedAdapterFile {
  const outline = outlineMarkdown(text);
  const section = findSection(outline, isDispatchHeading);
  // A file without the section is documentation or an adapter for another tool's own use; its
  // front matter is none of our business, so nothing in it is reported.
  if (!section) return { skipped: NO_DISPATCH_SECTION, problems: [] };

  const problems: Problem[] = [];
  const report = (line: number | undefined, path: string, message: string) =>
    problems.push({ file, ...(line ? { line } : {}), path, message });

  const front = readFrontMatter(outline, report);
  const cliName = front.data.cli ?? basename(file, '.md');
  const cli = { name: cliName, ...(front.cliLine ? { line: front.cliLine } : {}) };
  if (!CLI_NAME.test(cliName)) {
    const from = front.data.cli === undefined ? ' (from the file name)' : '';
    report(
      front.cliLine,
      'cli',
      `expected a name of letters, digits, '.', '_' or '-', got ${describeValue(cliName)}${from}`,
    );
  }

  const config = readDispatchBlock(outline, section, report);
  if (!config || problems.length > 0) return { problems, cli };

  const models = { ...modelsFromToolMappings(outline), ...modelsFromBlock(config) };
  const maxPromptSize = config.max_prompt_size ?? front.data.max_prompt_size;
  const adapter: Adapter = {
    cli: cliName,
    displayName: front.data.cli_display_name ?? cliName,
    ...(front.data.vendor ? { vendor: front.data.vendor } : {}),
    file,
    order,
    config,
    models,
    ...(maxPromptSize !== undefined ? { maxPromptSize } : {}),
  };
  return { adapter, problems, cli };
}

type Report = (line: number | undefined, path: string, message: string) => void;
type FrontMatterData = z.output<typeof frontMatterSchema>;

function readFrontMatter(
  outline: MarkdownOutline,
  report: Report,
): { data: FrontMatterData; cliLine?: number } {
  const front = outline.frontMatter;
  if (!front) return { data: {} };
  if (!front.closed) {
    report(front.line, '', "front matter: the opening '---' has no closing '---'");
    return { data: {} };
  }
  const { source, errors } = parseYaml(front.text);
  for (const error of errors) {
    report(front.line + syntaxErrorLine(error, front.text), '', `front matter: ${error.message}`);
  }
  if (errors.length > 0) return { data: {} };
  const raw: unknown = source.doc.toJS() ?? {};
  if (!isRecord(raw)) {
    report(front.line, '', `front matter: expected a mapping, got ${describeValue(raw)}`);
    return { data: {} };
  }
  const cliLine = lineIn(source, front.line, raw, ['cli']);
  const parsed = frontMatterSchema.safeParse(raw);
  if (parsed.success) return { data: parsed.data, ...(cliLine !== front.line ? { cliLine } : {}) };
  for (const issue of parsed.error.issues) {
    for (const problem of describeIssues([issue], raw, frontMatterSchema)) {
      report(lineIn(source, front.line, raw, problem.path), formatPath(problem.path), problem.message);
    }
  }
  return { data: {} };
}

function readDispatchBlock(
  outline: MarkdownOutline,
  section: Section,
  report: Report,
): DispatchConfig | undefined {
  const block = blocksIn(outline, section).find(
    (candidate) => candidate.info === 'yaml' || candidate.info === 'yml',
  );
  if (!block) {
    report(
      section.heading.line,
      '',
      `'${'#'.repeat(section.heading.level)} ${section.heading.title}' has no fenced \`\`\`yaml block (expected the dispatch settings in one)`,
    );
    return undefined;
  }
  if (!block.closed) {
    report(block.line, '', 'the ```yaml block of the Dispatch Configuration is never closed');
    return undefined;
  }
  const { source, errors } = parseYaml(block.content);
  for (const error of errors) {
    report(block.line + syntaxErrorLine(error, block.content), '', `invalid YAML: ${error.message}`);
  }
  if (errors.length > 0) return undefined;

  const raw: unknown = source.doc.toJS();
  if (!isRecord(raw)) {
    report(block.line, '', `expected a mapping of dispatch settings, got ${describeValue(raw)}`);
    return undefined;
  }
  const parsed = dispatchConfigSchema.safeParse(raw);
  if (parsed.success) return parsed.data;

  const reported = new Set<string>();
  for (const issue of parsed.error.issues) {
    for (const problem of describeIssues([issue], raw, dispatchConfigSchema)) {
      const at = valueAt(raw, problem.path);
      // Refinements say only what is wanted; the value that came is added here.
      const message =
        issue.code === 'custom' && at.found
          ? `${problem.message}, got ${describeValue(at.value)}`
          : problem.message;
      const path = formatPath(problem.path);
      reported.add(path);
      report(lineIn(source, block.line, raw, problem.path), path, message);
    }
  }
  // zod skips an object's refinements once any field has failed, so the prompt_flag rule is
  // checked here too; otherwise fixing one problem would reveal the next.
  const delivery = raw.prompt_delivery;
  const flag = raw.prompt_flag;
  if (
    !reported.has('prompt_flag') &&
    (delivery === 'file_path' || delivery === 'content_flag') &&
    (typeof flag !== 'string' || flag === '')
  ) {
    const at = valueAt(raw, ['prompt_flag']);
    const got = at.found ? `, got ${describeValue(at.value)}` : '';
    report(
      lineIn(source, block.line, raw, ['prompt_flag']),
      'prompt_flag',
      `required when prompt_delivery is ${delivery}${got}`,
    );
  }
  return undefined;
}

/**
 * The file line of the value at `path`: its key's line when the key is there, else the line the
 * YAML starts at (the fence or the front matter's `---`), since a missing key has no line.
 */
function lineIn(source: YamlSource, startLine: number, raw: unknown, path: readonly PathSegment[]): number {
  if (!valueAt(raw, path).found) return startLine;
  const line = lineOfPath(source, path);
  return line === undefined ? startLine : startLine + line;
}

/** yaml reports an unclosed quote on the line after the text; keep the line inside the block. */
function clampLine(line: number | undefined, text: string): number {
  const count = Math.max(1, text.split('\n').length);
  return Math.min(Math.max(line ?? 1, 1), count);
}

/**
 * An unclosed `[` or `{` (`capabilities: [a, b`) is noticed by yaml on the next key's line; the
 * line to fix is the one that opened the collection, so that one is reported.
 */
function syntaxErrorLine(error: { line?: number; message: string }, text: string): number {
  const line = clampLine(error.line, text);
  const flow = /^Flow (sequence|mapping)/.exec(error.message)?.[1];
  if (!flow) return line;
  const [open, close] = flow === 'sequence' ? ['[', ']'] : ['{', '}'];
  const lines = text.split('\n');
  for (let index = line; index >= 1; index -= 1) {
    const candidate = lines[index - 1] ?? '';
    if (candidate.split(open).length > candidate.split(close).length) return index;
  }
  return line;
}

type Models = Partial<Record<ModelTier, string>>;

function modelsFromBlock(config: DispatchConfig): Models {
  const models: Models = {};
  for (const tier of MODEL_TIERS) {
    const model = config[`model_${tier}`]?.trim();
    if (model) models[tier] = model;
  }
  return models;
}

/**
 * Legion's files keep the tiers in the Tool Mappings table, in cells such as
 * "`gpt-5.4` (or user-configured planning model)": the first backticked value is the model.
 */
function modelsFromToolMappings(outline: MarkdownOutline): Models {
  const section = findSection(outline, isToolMappingsHeading);
  if (!section) return {};
  const models: Models = {};
  for (const [concept = '', cell = ''] of tableRowsIn(outline, section)) {
    const key = concept.replaceAll('`', '').trim();
    const tier = MODEL_TIERS.find((candidate) => key === `model_${candidate}`);
    if (!tier) continue;
    const model = (/`([^`]+)`/.exec(cell)?.[1] ?? cell.replaceAll('`', '')).trim();
    if (model) models[tier] = model;
  }
  return models;
}
