/**
 * The parts of a Markdown file an adapter relies on: front matter, headings, fenced blocks and
 * table rows, each with the 1-based line it starts on so problems can point into the file. Pure.
 *
 * Fences are tracked because adapter prose quotes Markdown: a `# Phase …` line or a table inside a
 * ``` block is an example, not structure.
 */

export interface FrontMatter {
  /** The YAML between the two `---` lines. */
  readonly text: string;
  /** File line of the opening `---`; the YAML's line n is file line `line + n`. */
  readonly line: number;
  /** False when the closing `---` never came; `text` is then empty. */
  readonly closed: boolean;
  /** Index of the first line after the front matter. */
  readonly bodyStart: number;
}

export interface Heading {
  readonly level: number;
  readonly title: string;
  readonly line: number;
}

export interface FencedBlock {
  /** The info string after the opening fence, lower-cased (`yaml`, `markdown`, …). */
  readonly info: string;
  /** File line of the opening fence; the content's line n is file line `line + n`. */
  readonly line: number;
  readonly content: string;
  /** File line of the closing fence, or of the file's last line when it never closes. */
  readonly endLine: number;
  readonly closed: boolean;
}

export interface MarkdownOutline {
  readonly lines: readonly string[];
  readonly frontMatter?: FrontMatter;
  readonly headings: readonly Heading[];
  readonly blocks: readonly FencedBlock[];
}

const OPEN_FENCE = /^ {0,3}(`{3,}|~{3,})(.*)$/;
const HEADING = /^ {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$/;

export function outlineMarkdown(text: string): MarkdownOutline {
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  const frontMatter = readFrontMatter(lines);
  const headings: Heading[] = [];
  const blocks: FencedBlock[] = [];
  let index = frontMatter?.bodyStart ?? 0;
  while (index < lines.length) {
    const line = lines[index] ?? '';
    const fence = OPEN_FENCE.exec(line);
    if (fence) {
      const marker = fence[1] ?? '```';
      const info = (fence[2] ?? '').trim().split(/\s+/)[0]?.toLowerCase() ?? '';
      const end = findClosingFence(lines, index + 1, marker);
      const stop = end ?? lines.length;
      blocks.push({
        info,
        line: index + 1,
        content: lines.slice(index + 1, stop).join('\n'),
        endLine: end === undefined ? lines.length : end + 1,
        closed: end !== undefined,
      });
      index = stop + 1;
      continue;
    }
    const heading = HEADING.exec(line);
    if (heading) headings.push({ level: heading[1]?.length ?? 1, title: heading[2] ?? '', line: index + 1 });
    index += 1;
  }
  return { lines, ...(frontMatter ? { frontMatter } : {}), headings, blocks };
}

function readFrontMatter(lines: readonly string[]): FrontMatter | undefined {
  if (lines[0]?.trimEnd() !== '---') return undefined;
  for (let index = 1; index < lines.length; index += 1) {
    if (/^(---|\.\.\.)\s*$/.test(lines[index] ?? '')) {
      return { text: lines.slice(1, index).join('\n'), line: 1, closed: true, bodyStart: index + 1 };
    }
  }
  // Unclosed: the rest is still read as Markdown, so a Dispatch Configuration below is found and
  // the missing '---' reported, rather than the whole file passing for front matter.
  return { text: '', line: 1, closed: false, bodyStart: 1 };
}

function findClosingFence(lines: readonly string[], from: number, marker: string): number | undefined {
  const char = marker[0] === '~' ? '~' : '`';
  const closing = new RegExp(`^ {0,3}\\${char}{${marker.length},}\\s*${'$'}`);
  for (let index = from; index < lines.length; index += 1) {
    if (closing.test(lines[index] ?? '')) return index;
  }
  return undefined;
}

/** The lines a heading owns: up to the next heading of the same or a higher level. */
export interface Section {
  readonly heading: Heading;
  /** File line of the last line in the section. */
  readonly endLine: number;
}

export function findSection(
  outline: MarkdownOutline,
  matches: (title: string) => boolean,
): Section | undefined {
  const index = outline.headings.findIndex((heading) => matches(heading.title));
  const heading = outline.headings[index];
  if (!heading) return undefined;
  const next = outline.headings.slice(index + 1).find((other) => other.level <= heading.level);
  return { heading, endLine: next ? next.line - 1 : outline.lines.length };
}

export function blocksIn(outline: MarkdownOutline, section: Section): FencedBlock[] {
  return outline.blocks.filter((block) => block.line > section.heading.line && block.line <= section.endLine);
}

/**
 * The cells of each `| a | b |` row in a section, trimmed; separator rows (`|---|`) are left out.
 * Rows inside fenced blocks are examples and are left out too.
 */
export function tableRowsIn(outline: MarkdownOutline, section: Section): string[][] {
  const rows: string[][] = [];
  for (let line = section.heading.line + 1; line <= section.endLine; line += 1) {
    const text = outline.lines[line - 1]?.trim() ?? '';
    if (!text.startsWith('|') || insideBlock(outline, line)) continue;
    const cells = text
      .replace(/^\|/, '')
      .replace(/\|$/, '')
      .split(/(?<!\\)\|/)
      .map((cell) => cell.trim());
    if (cells.every((cell) => /^:?-+:?$/.test(cell))) continue;
    rows.push(cells);
  }
  return rows;
}

function insideBlock(outline: MarkdownOutline, line: number): boolean {
  return outline.blocks.some((block) => line >= block.line && line <= block.endLine);
}
