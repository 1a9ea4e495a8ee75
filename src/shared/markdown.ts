/**
 * Small Markdown builders the prompts, the gate's feedback and the plan prompt share. Text in,
 * text out.
 */

/** A fence longer than any backtick run inside, so text holding Markdown cannot close it early. */
export function fence(text: string, lang = ''): string {
  const longest = Math.max(0, ...[...text.matchAll(/`{3,}/g)].map((match) => match[0].length));
  const ticks = '`'.repeat(Math.max(3, longest + 1));
  return `${ticks}${lang}\n${text}\n${ticks}`;
}

/** Inline code that survives backticks inside the text. */
export function inlineCode(text: string): string {
  const longest = Math.max(0, ...[...text.matchAll(/`+/g)].map((match) => match[0].length));
  const ticks = '`'.repeat(longest + 1);
  return longest > 0 ? `${ticks} ${text} ${ticks}` : `${ticks}${text}${ticks}`;
}

/** One bullet per item, each as inline code. */
export function codeBullets(items: readonly string[]): string {
  return items.map((item) => `- ${inlineCode(item)}`).join('\n');
}

/** Paragraphs joined by blank lines, empty ones dropped, with a final newline. */
export function joinParts(parts: readonly string[]): string {
  return `${parts.filter((part) => part.trim()).join('\n\n')}\n`;
}

/** One line of at most `max` characters: whitespace collapsed, an ellipsis where it was cut. */
export function clip(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}
