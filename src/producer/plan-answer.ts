import { isMap, parseDocument } from 'yaml';

/** Reading a planner's answer: the mission YAML inside it, and the workspace set in it. */

export interface ExtractedMission {
  readonly yaml: string;
  /** `fenced`: taken from a fenced block; `whole`: the whole answer, which had no fitting block. */
  readonly from: 'fenced' | 'whole';
}

interface Block {
  readonly info: string;
  readonly body: string;
}

const OPEN_FENCE = /^ {0,3}(`{3,}|~{3,})[ \t]*([^\s`]*)[^`]*$/;
/** A top-level `tasks:` key: what tells a mission apart from a YAML snippet. */
const TASKS_KEY = /^tasks[ \t]*:/m;

/**
 * The mission YAML in a planner's answer. Agents wrap files in prose and fences however they like:
 * a `yaml` block wins over an unlabelled one, a block with a top-level `tasks:` key over one
 * without, and among equals the last, because an answer that shows a draft and then its final
 * form puts the final one last. No fenced block at all means the whole answer is the file.
 * Returns null only for an empty answer; garbage comes back whole, for validation to describe.
 */
export function extractMissionYaml(answer: string): ExtractedMission | null {
  const text = answer.replace(/\r\n?/g, '\n');
  if (!text.trim()) return null;
  const blocks = fencedBlocks(text).filter((block) => block.body.trim());
  const yamlBlocks = blocks.filter((block) => /^(ya?ml)$/i.test(block.info));
  const plainBlocks = blocks.filter((block) => block.info === '');
  const candidates = [
    yamlBlocks.filter((block) => TASKS_KEY.test(block.body)),
    plainBlocks.filter((block) => TASKS_KEY.test(block.body)),
    yamlBlocks,
  ];
  for (const group of candidates) {
    const chosen = group.at(-1);
    if (chosen) return { yaml: ensureNewline(chosen.body), from: 'fenced' };
  }
  return { yaml: ensureNewline(text.trim()), from: 'whole' };
}

/** Fenced blocks in CommonMark's sense; an unclosed fence runs to the end (a cut-off answer). */
function fencedBlocks(text: string): Block[] {
  const lines = text.split('\n');
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = OPEN_FENCE.exec(lines[i] ?? '');
    if (!open) continue;
    const marker = open[1] ?? '```';
    const close = new RegExp(`^ {0,3}${marker[0] === '`' ? '`' : '~'}{${marker.length},}[ \\t]*${'$'}`);
    const body: string[] = [];
    let j = i + 1;
    while (j < lines.length && !close.test(lines[j] ?? '')) body.push(lines[j++] ?? '');
    blocks.push({ info: (open[2] ?? '').toLowerCase(), body: body.join('\n') });
    i = j;
  }
  return blocks;
}

function ensureNewline(text: string): string {
  return text.endsWith('\n') ? text : `${text}\n`;
}

/**
 * Puts the workspace flotilla was given into the mission, whatever the planner wrote: the planner
 * ran in that folder (or in a scratch one) and may know it only by an absolute or a wrong path.
 * Text that is not a YAML mapping is returned untouched, for validation to report.
 */
export function setWorkspace(yaml: string, workspace: string): string {
  const doc = parseDocument(yaml);
  if (doc.errors.length > 0 || !isMap(doc.contents)) return yaml;
  if (doc.get('workspace') === workspace) return yaml;
  doc.set('workspace', workspace);
  return doc.toString({ lineWidth: 0, flowCollectionPadding: false });
}
