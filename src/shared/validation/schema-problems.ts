import { z } from 'zod';
import type { PathSegment } from './yaml-lines.js';

/**
 * Turns zod's issues into sentences that say what was expected and what came, in the mission
 * file's words (a list, a mapping, a duration) rather than JavaScript's. Pure: the caller adds the
 * file and the line.
 */
export interface SchemaProblem {
  readonly path: PathSegment[];
  readonly message: string;
}

export function describeIssues(
  issues: readonly z.core.$ZodIssue[],
  input: unknown,
  root: z.core.$ZodType,
): SchemaProblem[] {
  return issues.flatMap((issue) => describeIssue(issue, input, root));
}

const EXPECTED: Readonly<Record<string, string>> = {
  string: 'a string',
  number: 'a number',
  int: 'a whole number',
  boolean: 'true or false',
  array: 'a list',
  object: 'a mapping',
};

const DURATION = 'a duration like 90s, 10m or 1h30m';

function describeIssue(issue: z.core.$ZodIssue, input: unknown, root: z.core.$ZodType): SchemaProblem[] {
  const path = issue.path.map((segment) => (typeof segment === 'symbol' ? String(segment) : segment));
  const at = valueAt(input, path);
  const got = at.found ? describeValue(at.value) : 'nothing';
  const problem = (message: string): SchemaProblem[] => [{ path, message }];

  switch (issue.code) {
    case 'invalid_type': {
      const expected = EXPECTED[issue.expected] ?? issue.expected;
      return problem(at.found ? `expected ${expected}, got ${got}` : `required (expected ${expected})`);
    }
    case 'invalid_value':
      return problem(`expected one of ${issue.values.map(String).join('|')}, got ${got}`);
    case 'unrecognized_keys': {
      const known = knownKeys(schemaAt(root, path));
      return issue.keys.map((key) => ({ path: [...path, key], message: unknownFieldMessage(key, known) }));
    }
    case 'invalid_union': {
      const expected = unionExpectations(issue.errors);
      if (!expected) return problem(`${issue.message}, got ${got}`);
      const wanted = isDuration(schemaAt(root, path)) ? DURATION : expected.join(' or ');
      return problem(at.found ? `expected ${wanted}, got ${got}` : `required (expected ${wanted})`);
    }
    case 'too_small':
      return problem(
        boundMessage(issue.message, issue.origin, 'at least', issue.minimum, issue.inclusive, at.value),
      );
    case 'too_big':
      return problem(
        boundMessage(issue.message, issue.origin, 'at most', issue.maximum, issue.inclusive, at.value),
      );
    case 'invalid_format':
      return problem(`${ownMessage(issue.message) ?? `expected the ${issue.format} format`}, got ${got}`);
    default:
      // Custom issues (a bad duration) already say what was expected and what came.
      return problem(issue.message);
  }
}

/**
 * Messages the mission schema wrote itself start with a lower-case "expected"; zod's own defaults
 * ("Too small: …") are replaced by ours.
 */
function ownMessage(message: string): string | undefined {
  return message.startsWith('expected ') ? message : undefined;
}

function boundMessage(
  message: string,
  origin: string,
  side: 'at least' | 'at most',
  bound: number | bigint,
  inclusive: boolean | undefined,
  value: unknown,
): string {
  const own = ownMessage(message);
  if (origin === 'array') {
    const count = Array.isArray(value) ? value.length : 0;
    const got = count === 0 ? 'an empty list' : `${count} ${count === 1 ? 'item' : 'items'}`;
    return `${own ?? `expected ${side} ${bound} ${bound === 1 ? 'item' : 'items'}`}, got ${got}`;
  }
  if (origin === 'string') {
    const length = typeof value === 'string' ? value.length : 0;
    if (own) return `${own}, got ${describeValue(value)}`;
    if (side === 'at least' && bound === 1) return `expected a non-empty string, got ${describeValue(value)}`;
    return `expected ${side} ${bound} characters, got ${length}`;
  }
  const comparison =
    side === 'at least' ? (inclusive === false ? '>' : '>=') : inclusive === false ? '<' : '<=';
  return `${own ?? `expected a number ${comparison} ${bound}`}, got ${String(value)}`;
}

function unionExpectations(errors: readonly (readonly z.core.$ZodIssue[])[]): string[] | undefined {
  const expected: string[] = [];
  for (const branch of errors) {
    const [only, ...rest] = branch;
    if (!only || rest.length > 0 || only.code !== 'invalid_type' || only.path.length > 0) return undefined;
    expected.push(EXPECTED[only.expected] ?? only.expected);
  }
  return expected.length > 0 ? expected : undefined;
}

function unknownFieldMessage(key: string, known: readonly string[]): string {
  const guess = closestKey(key, known);
  const hint = guess ? ` — did you mean '${guess}'?` : '';
  return `unknown field ${quote(key)}${hint} (expected one of: ${known.join(', ')})`;
}

/**
 * A near miss (`dependson`, `dependsOn`, `depend_on`, `titel`) is worth naming; anything further is
 * not. Shared with the capability warnings, so a misspelt field and a misspelt term read alike.
 */
export function closestKey(key: string, known: readonly string[]): string | undefined {
  const squash = (text: string) => text.toLowerCase().replace(/[^a-z0-9]/g, '');
  let best: { key: string; distance: number } | undefined;
  for (const candidate of known) {
    const distance = squash(candidate) === squash(key) ? 0 : editDistance(key.toLowerCase(), candidate);
    if (!best || distance < best.distance) best = { key: candidate, distance };
  }
  const allowed = Math.max(1, Math.floor(key.length / 4));
  return best && best.distance <= allowed ? best.key : undefined;
}

/**
 * Edits between two words, a swap of neighbours counting as one (optimal string alignment): the
 * commonest typing slip (`titel`) is one mistake, not two.
 */
function editDistance(a: string, b: string): number {
  if (Math.abs(a.length - b.length) > 3) return Number.POSITIVE_INFINITY;
  const rows: number[][] = [Array.from({ length: b.length + 1 }, (_, j) => j)];
  for (let i = 1; i <= a.length; i += 1) {
    const row = [i];
    for (let j = 1; j <= b.length; j += 1) {
      const above = rows[i - 1] ?? [];
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min((above[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1, (above[j - 1] ?? 0) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        best = Math.min(best, (rows[i - 2]?.[j - 2] ?? 0) + 1);
      }
      row.push(best);
    }
    rows.push(row);
  }
  return rows[a.length]?.[b.length] ?? Number.POSITIVE_INFINITY;
}

function schemaAt(root: z.core.$ZodType, path: readonly PathSegment[]): z.core.$ZodType | undefined {
  let schema: z.core.$ZodType | undefined = unwrap(root);
  for (const segment of path) {
    if (schema instanceof z.ZodObject && typeof segment === 'string') {
      schema = Object.hasOwn(schema.shape, segment) ? schema.shape[segment] : undefined;
    } else if (schema instanceof z.ZodArray && typeof segment === 'number') {
      schema = schema.element;
    } else {
      return undefined;
    }
    schema = schema && unwrap(schema);
  }
  return schema;
}

function unwrap(schema: z.core.$ZodType): z.core.$ZodType {
  let current = schema;
  while (current instanceof z.ZodOptional || current instanceof z.ZodDefault) current = current.unwrap();
  return current;
}

function knownKeys(schema: z.core.$ZodType | undefined): string[] {
  return schema instanceof z.ZodObject ? Object.keys(schema.shape) : [];
}

/** The mission schema's durations are a string-or-number union piped through parseDuration. */
function isDuration(schema: z.core.$ZodType | undefined): boolean {
  if (!(schema instanceof z.ZodPipe) || !(schema.in instanceof z.ZodUnion)) return false;
  const options: readonly unknown[] = schema.in.options;
  return (
    options.some((option) => option instanceof z.ZodString) && options.some((o) => o instanceof z.ZodNumber)
  );
}

/** The value at a path in parsed YAML, if the path exists there. */
export function valueAt(input: unknown, path: readonly PathSegment[]): { found: boolean; value?: unknown } {
  let value = input;
  for (const segment of path) {
    if (Array.isArray(value) && typeof segment === 'number' && segment < value.length) value = value[segment];
    else if (isRecord(value) && Object.hasOwn(value, segment)) value = value[segment];
    else return { found: false };
  }
  return { found: true, value };
}

export function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'an empty value';
  if (typeof value === 'string') return quote(value);
  if (typeof value === 'number') return `the number ${value}`;
  if (Array.isArray(value)) return value.length === 0 ? 'an empty list' : 'a list';
  if (typeof value === 'object') return 'a mapping';
  return String(value);
}

/** Quoted for a one-line message: control characters escaped, long text cut. */
export function quote(text: string): string {
  const visible = escapeControl(text);
  return `'${visible.length > 60 ? `${visible.slice(0, 57)}…` : visible}'`;
}

/** Newlines, NULs and terminal escapes from the user's file must not break or colour our output. */
export function escapeControl(text: string): string {
  return text.replace(/\p{Cc}/gu, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
