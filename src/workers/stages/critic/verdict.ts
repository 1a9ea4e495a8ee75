import type { CriticVerdict } from '../../../shared/contracts.js';

/**
 * Reading the critic's `{"score": N, "verdict": "approve"|"reject", "issues": [...]}` out of a
 * reviewer's result. Reviewers wrap it in fences and prose, quote with `'`, write `"8/10"`, forget
 * the verdict or give issues as objects; all of that is read. Only a missing score gives null,
 * because a verdict without a score cannot be checked against min_score.
 */

export const DEFAULT_MIN_SCORE = 7;
const MAX_CANDIDATES = 200;

export function parseVerdict(text: string, minScore = DEFAULT_MIN_SCORE): CriticVerdict | null {
  const fromJson = jsonCandidates(text)
    .map((candidate) => verdictFromObject(candidate, minScore))
    .filter((verdict): verdict is CriticVerdict => verdict !== null);
  // The last one wins: reviewers sometimes restate the format before giving their own.
  return fromJson.at(-1) ?? verdictFromProse(text, minScore);
}

function verdictFromObject(value: Record<string, unknown>, minScore: number): CriticVerdict | null {
  const fields = new Map(
    Object.entries(value).map(([key, field]) => [key.toLowerCase().replace(/[\s-]/g, '_'), field]),
  );
  const score = normalizeScore(fields.get('score') ?? fields.get('overall_score') ?? fields.get('rating'));
  if (score === undefined) return null;
  const stated = fields.has('verdict')
    ? fields.get('verdict')
    : (fields.get('decision') ?? fields.get('approved'));
  return {
    score,
    verdict: normalizeVerdict(stated) ?? (score >= minScore ? 'approve' : 'reject'),
    issues: normalizeIssues(fields.get('issues') ?? fields.get('problems') ?? fields.get('comments')),
  };
}

/** 8, "8", "8/10", "8 out of 10", "80/100" → a score out of 10; anything outside 0–10 is no score. */
export function normalizeScore(value: unknown): number | undefined {
  let score: number | undefined;
  if (typeof value === 'number') score = value;
  else if (typeof value === 'string') {
    const match = /^\s*(\d+(?:\.\d+)?)\s*(?:(?:\/|out\s+of)\s*(\d+(?:\.\d+)?))?/i.exec(value);
    if (match) {
      const out = match[2] ? Number(match[2]) : 10;
      score = out > 0 ? (Number(match[1]) * 10) / out : undefined;
    }
  }
  return score !== undefined && Number.isFinite(score) && score >= 0 && score <= 10 ? score : undefined;
}

function normalizeVerdict(value: unknown): CriticVerdict['verdict'] | undefined {
  if (typeof value === 'boolean') return value ? 'approve' : 'reject';
  if (typeof value !== 'string') return undefined;
  const word = value
    .trim()
    .toLowerCase()
    .replace(/[\s-]+/g, '_');
  if (/^(approved?|accept(ed)?|pass(ed)?|lgtm|yes)$/.test(word)) return 'approve';
  if (/^(reject(ed)?|fail(ed)?|needs_revision|request(ed)?_changes|changes_requested|no)$/.test(word))
    return 'reject';
  return undefined;
}

function normalizeIssues(value: unknown): string[] {
  if (value === undefined || value === null) return [];
  if (typeof value === 'string') {
    return value
      .split('\n')
      .map((line) => line.replace(/^\s*(?:[-*+]|\d+[.)])\s+/, '').trim())
      .filter((line) => line && !/^none\.?$/i.test(line));
  }
  if (Array.isArray(value))
    return value.flatMap((item) => (item === null ? [] : [formatIssue(item)])).filter(Boolean);
  return [formatIssue(value)];
}

/** `{severity, file, line, description}` and the like read as `[high] src/a.ts:12: description`. */
function formatIssue(item: unknown): string {
  if (typeof item !== 'object' || item === null) return String(item).trim();
  const fields = new Map(Object.entries(item).map(([key, field]) => [key.toLowerCase(), field]));
  const pick = (...keys: string[]): string | undefined => {
    for (const key of keys) {
      const field = fields.get(key);
      if (typeof field === 'string' && field.trim()) return field.trim();
      if (typeof field === 'number') return String(field);
    }
    return undefined;
  };
  const message = pick(
    'description',
    'message',
    'issue',
    'text',
    'title',
    'detail',
    'details',
    'summary',
    'problem',
  );
  if (!message) return JSON.stringify(item);
  const severity = pick('severity', 'level', 'priority');
  const file = pick('file', 'path', 'location');
  const line = pick('line', 'lines');
  const where = file ? `${file}${line ? `:${line}` : ''}: ` : '';
  return `${severity ? `[${severity}] ` : ''}${where}${message}`;
}

/** Objects found anywhere in the text, in order of where they start. */
function jsonCandidates(text: string): Record<string, unknown>[] {
  const found: Record<string, unknown>[] = [];
  let tries = 0;
  for (
    let start = text.indexOf('{');
    start >= 0 && tries < MAX_CANDIDATES;
    start = text.indexOf('{', start + 1)
  ) {
    if (!/score|rating/i.test(text.slice(start, start + 2000))) continue;
    tries += 1;
    const parsed = parseLooseValue(text, start);
    if (parsed && typeof parsed.value === 'object' && parsed.value !== null && !Array.isArray(parsed.value)) {
      found.push(parsed.value as Record<string, unknown>);
    }
  }
  return found;
}

/** `Score: 8/10`, `Verdict: reject` and a bulleted `Issues` list, when there is no JSON at all. */
function verdictFromProse(text: string, minScore: number): CriticVerdict | null {
  const scores = [
    ...text.matchAll(
      /\bscore\b[^0-9\n]{0,20}(\d+(?:\.\d+)?(?:\s*(?:\/|out\s+of)\s*\d+)?)(?!\s*(?:to|-|–)\s*\d)/gi,
    ),
  ];
  const score = normalizeScore(scores.at(-1)?.[1]);
  if (score === undefined) return null;
  const stated = [...text.matchAll(/\bverdict\b\W{0,6}([a-z_ -]+)/gi)].at(-1)?.[1]?.trim().split(/\s+/)[0];
  const issuesBlock = /\bissues\b[^\n]*\n((?:[ \t]*(?:[-*+]|\d+[.)])\s+[^\n]+\n?)+)/i.exec(text)?.[1];
  return {
    score,
    verdict: normalizeVerdict(stated) ?? (score >= minScore ? 'approve' : 'reject'),
    issues: normalizeIssues(issuesBlock ?? null),
  };
}

/**
 * A forgiving JSON reader: single or double quotes, bare keys and words, trailing commas,
 * Python's True/False/None. A quote closes a string only when what follows could follow a
 * string, so apostrophes and stray quotes inside text survive. Returns null when it cannot read.
 */
export function parseLooseValue(text: string, from = 0): { value: unknown; end: number } | null {
  let pos = from;
  const skip = (): void => {
    while (pos < text.length && /\s/.test(text.charAt(pos))) pos += 1;
  };
  const value = (): unknown => {
    skip();
    const char = text.charAt(pos);
    if (char === '{') return object();
    if (char === '[') return array();
    if (char === '"' || char === "'") return string();
    const word = /^(-?\d+(?:\.\d+)?(?:\s*\/\s*\d+)?|[A-Za-z_$][\w$-]*)/.exec(text.slice(pos, pos + 200))?.[0];
    if (!word) throw new Error('value expected');
    pos += word.length;
    if (/^-?\d+(?:\.\d+)?$/.test(word)) return Number(word);
    const literal = ({ true: true, false: false, null: null, none: null } as Record<string, boolean | null>)[
      word.toLowerCase()
    ];
    return literal === undefined ? word : literal;
  };
  const string = (): string => {
    const quote = text.charAt(pos);
    let out = '';
    pos += 1;
    while (pos < text.length) {
      const char = text.charAt(pos);
      if (char === '\\') {
        const next = text.charAt(pos + 1);
        out += next === 'n' ? '\n' : next === 't' ? '\t' : next;
        pos += 2;
        continue;
      }
      if (char === quote && /^\s*(?:[,:}\]]|$)/.test(text.slice(pos + 1, pos + 40))) {
        pos += 1;
        return out;
      }
      out += char;
      pos += 1;
    }
    throw new Error('unterminated string');
  };
  const array = (): unknown[] => {
    const items: unknown[] = [];
    pos += 1;
    for (;;) {
      skip();
      if (text.charAt(pos) === ']') break;
      items.push(value());
      skip();
      if (text.charAt(pos) === ',') pos += 1;
      else if (text.charAt(pos) !== ']') throw new Error('] expected');
    }
    pos += 1;
    return items;
  };
  const object = (): Record<string, unknown> => {
    // No prototype: a reviewer's `__proto__` key stays a plain key.
    const out = Object.create(null) as Record<string, unknown>;
    pos += 1;
    for (;;) {
      skip();
      if (text.charAt(pos) === '}') break;
      const key = value();
      if (typeof key !== 'string' && typeof key !== 'number') throw new Error('key expected');
      skip();
      if (text.charAt(pos) !== ':') throw new Error(': expected');
      pos += 1;
      out[String(key)] = value();
      skip();
      if (text.charAt(pos) === ',') pos += 1;
      else if (text.charAt(pos) !== '}') throw new Error('} expected');
    }
    pos += 1;
    return out;
  };
  try {
    return { value: value(), end: pos };
  } catch {
    return null;
  }
}
