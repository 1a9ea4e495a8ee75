/**
 * The `git fast-import` stream for an attempt's commits: a commit is written from the paths that
 * changed, on top of a parent commit, without an index or a walk of the tree. Pure: the caller
 * reads the files and runs git.
 */

/** One path in a commit: new content (a file or a symlink's target) or a deletion. */
export type ImportEntry =
  | { readonly path: string; readonly mode: '100644' | '100755' | '120000'; readonly content: Uint8Array }
  | { readonly path: string; readonly deleted: true };

export interface ImportCommit {
  /** The ref the commit is written to, e.g. `HEAD` (a detached checkout's) or a full ref. */
  readonly ref: string;
  readonly mark: number;
  /** A commit id, or `:<mark>` of a commit earlier in the same stream. */
  readonly parent: string;
  /** `Name <email>`. */
  readonly author: string;
  readonly committer: string;
  /** Seconds since the epoch; both lines are written in UTC. */
  readonly time: number;
  readonly message: string;
  readonly entries: readonly ImportEntry[];
}

/**
 * fast-import reads a path to the end of its line, so spaces need nothing; a path that starts with
 * a quote or holds a control character is written C-style quoted, as git itself quotes paths.
 */
export function importPath(path: string): string {
  const isControl = (code: number) => code < 0x20 || code === 0x7f;
  const chars = [...path];
  if (!path.startsWith('"') && !chars.some((char) => isControl(char.charCodeAt(0)))) return path;
  const escaped = chars.map((char) => {
    const code = char.charCodeAt(0);
    if (char === '\\' || char === '"') return `\\${char}`;
    return isControl(code) ? `\\${code.toString(8).padStart(3, '0')}` : char;
  });
  return `"${escaped.join('')}"`;
}

function data(bytes: Uint8Array): Uint8Array[] {
  return [Buffer.from(`data ${bytes.byteLength}\n`), bytes, Buffer.from('\n')];
}

function commitChunks(commit: ImportCommit): Uint8Array[] {
  const head = [
    `commit ${commit.ref}`,
    `mark :${commit.mark}`,
    `author ${commit.author} ${commit.time} +0000`,
    `committer ${commit.committer} ${commit.time} +0000`,
    '',
  ].join('\n');
  const chunks: Uint8Array[] = [Buffer.from(head), ...data(Buffer.from(commit.message))];
  chunks.push(Buffer.from(`from ${commit.parent}\n`));
  for (const entry of commit.entries) {
    if ('deleted' in entry) {
      chunks.push(Buffer.from(`D ${importPath(entry.path)}\n`));
    } else {
      chunks.push(Buffer.from(`M ${entry.mode} inline ${importPath(entry.path)}\n`), ...data(entry.content));
    }
  }
  chunks.push(Buffer.from('\n'));
  return chunks;
}

/**
 * The whole stream: the commits in order, then `get-mark` for each, so fast-import prints their
 * ids on stdout one per line in the same order, then `done` (run with `--done`: a stream cut short
 * is an error, never half an import).
 */
export function importStream(commits: readonly ImportCommit[]): Buffer {
  const chunks = commits.flatMap(commitChunks);
  for (const commit of commits) chunks.push(Buffer.from(`get-mark :${commit.mark}\n`));
  chunks.push(Buffer.from('done\n'));
  return Buffer.concat(chunks);
}
