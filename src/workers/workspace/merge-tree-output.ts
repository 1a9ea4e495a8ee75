/**
 * Reads what `git merge-tree --write-tree --name-only -z <ours> <theirs>` printed (git ≥ 2.38).
 * The layout (git-merge-tree(1), "OUTPUT"), every field ending in NUL:
 *
 *   <tree oid> NUL
 *   <conflicted path> NUL …              only when the merge conflicted
 *   NUL                                  ends the conflicted paths
 *   <n> NUL <path> NUL ×n <type> NUL <message> NUL …     informational messages
 *
 * Exit status 0 is a clean merge and 1 a conflicted one — but git 2.38–2.39 also exit 1 for a
 * revision it cannot resolve, with nothing on stdout. So a conflict is "exit 1 *and* a tree oid
 * first", and anything else is an error, never mistaken for a conflict an agent could fix.
 */

export type MergeTreeOutcome =
  | { readonly kind: 'clean'; readonly tree: string }
  | {
      readonly kind: 'conflict';
      readonly tree: string;
      /** The conflicted paths, sorted, each once. */
      readonly files: readonly string[];
      /** git's `CONFLICT (…)` lines, which say what kind of conflict each was. */
      readonly messages: readonly string[];
    }
  | { readonly kind: 'error' };

const OID = /^[0-9a-f]{40}([0-9a-f]{24})?$/;

export function parseMergeTree(stdout: string, exitCode: number): MergeTreeOutcome {
  const fields = stdout.split('\0');
  const tree = fields[0] ?? '';
  if (!OID.test(tree) || (exitCode !== 0 && exitCode !== 1)) return { kind: 'error' };
  if (exitCode === 0) return { kind: 'clean', tree };

  const files = new Set<string>();
  let i = 1;
  for (; i < fields.length && fields[i] !== ''; i++) files.add(fields[i] as string);
  const messages: string[] = [];
  // After the empty field: groups of <count>, <count paths>, <type>, <message>.
  for (i += 1; i < fields.length; ) {
    const count = Number(fields[i]);
    if (!Number.isInteger(count) || count < 0) break;
    const type = fields[i + 1 + count] ?? '';
    const message = (fields[i + 2 + count] ?? '').trim();
    if (type.startsWith('CONFLICT') && message !== '') messages.push(message);
    i += 3 + count;
  }
  // A conflict with no paths at all does not happen in git; should it, the merge is still refused.
  return { kind: 'conflict', tree, files: [...files].sort(), messages };
}
