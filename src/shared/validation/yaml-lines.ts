import { type Document, isAlias, isMap, isScalar, isSeq, LineCounter, parseDocument } from 'yaml';

/**
 * YAML text with what it takes to say which line a value came from. Problems name places by path
 * (`tasks[2].depends_on[0]`); this file turns such a path back into a line of the user's file.
 */
export type PathSegment = string | number;

export interface YamlSource {
  readonly doc: Document.Parsed;
  readonly lines: LineCounter;
}

export interface YamlSyntaxError {
  readonly line?: number;
  readonly column?: number;
  readonly message: string;
}

/** A place in the text, both counted from 1 as editors show them. */
export interface TextPosition {
  readonly line: number;
  readonly column: number;
}

export function parseYaml(text: string): { source: YamlSource; errors: YamlSyntaxError[] } {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: true });
  const errors: YamlSyntaxError[] = [];
  const seen = new Set<string>();
  for (const error of doc.errors) {
    const line = error.linePos?.[0].line;
    const column = error.linePos?.[0].col;
    const message = syntaxMessage(error.code, error.message);
    // A parser that gives up on deep nesting says so once per level; once per line is enough.
    const key = `${line}:${message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    errors.push(line === undefined ? { message } : { line, column, message });
  }
  return { source: { doc, lines }, errors };
}

function syntaxMessage(code: string, message: string): string {
  if (code === 'MULTIPLE_DOCS') {
    return 'more than one document (expected a single mission; remove the extra ---)';
  }
  if (/Maximum call stack/.test(message)) return 'nested too deeply to read';
  // yaml's messages repeat the position and quote the source after a newline; the problem
  // carries the line on its own, so keep only the sentence.
  return (message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '');
}

/**
 * The line of the node at `path`, or of its nearest existing ancestor when the path runs out (a
 * missing key points at the mapping that should hold it). A mapping entry is placed at its key,
 * which is the line a person looks for even when the value is a block list below it.
 */
export function lineOfPath(source: YamlSource, path: readonly PathSegment[]): number | undefined {
  return positionOfPath(source, path)?.line;
}

/** Where the node at `path` starts (line and column), found as lineOfPath finds its line. */
export function positionOfPath(source: YamlSource, path: readonly PathSegment[]): TextPosition | undefined {
  let node: unknown = source.doc.contents;
  let place = positionAt(source, node);
  for (const segment of path) {
    if (isAlias(node)) node = node.resolve(source.doc);
    if (isMap(node)) {
      const pair = node.items.find(
        (item) => isScalar(item.key) && String(item.key.value) === String(segment),
      );
      if (!pair) break;
      place = positionAt(source, pair.key) ?? place;
      node = pair.value;
    } else if (isSeq(node) && typeof segment === 'number') {
      const item = node.items[segment];
      if (item === undefined) break;
      place = positionAt(source, item) ?? place;
      node = item;
    } else {
      break;
    }
  }
  return place;
}

/** The first line of each alias that names no anchor; yaml only notices these when converting. */
export function unresolvedAliasLines(source: YamlSource): { line?: number; name: string }[] {
  const found: { line?: number; name: string }[] = [];
  const pending: unknown[] = [source.doc.contents];
  while (pending.length > 0) {
    const node = pending.pop();
    if (isAlias(node) && node.resolve(source.doc) === undefined) {
      found.push({ line: positionAt(source, node)?.line, name: node.source });
    } else if (isMap(node)) {
      for (const pair of node.items) pending.push(pair.key, pair.value);
    } else if (isSeq(node)) {
      pending.push(...node.items);
    }
  }
  return found;
}

export function formatPath(path: readonly PathSegment[]): string {
  let text = '';
  for (const segment of path) {
    if (typeof segment === 'number') text += `[${segment}]`;
    else if (/^[A-Za-z_][\w-]*$/.test(segment)) text += text ? `.${segment}` : segment;
    else text += `[${JSON.stringify(segment)}]`;
  }
  return text;
}

function positionAt(source: YamlSource, node: unknown): TextPosition | undefined {
  if (typeof node !== 'object' || node === null || !('range' in node)) return undefined;
  const range = node.range;
  if (!Array.isArray(range) || typeof range[0] !== 'number') return undefined;
  const { line, col } = source.lines.linePos(range[0]);
  return { line, column: col };
}
