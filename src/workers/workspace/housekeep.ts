/**
 * The mission repo's housekeeping. An in-process import leaves a small pack (object-batch.ts),
 * fast-import's small ones and the gate's merges leave loose objects, and nothing else
 * consolidates them there: a push used to, through the receiving side's `gc --auto`. Without it a
 * 10,000-task mission left 160,000 loose objects after 4,000 tasks; with a pack an attempt it would
 * leave 10,000 packs, each one more index for every git process to search. So every `EVERY`th
 * import the small packs are rolled into one (`git pack-objects --stdin-packs`, the objects taken
 * as they are, no walk of the history), then `git gc --auto` looks at the loose objects as before.
 * The repository's own packs are left alone: `repack --geometric`, say, would rewrite a large one
 * whenever its packs were not in its progression (a clone's two packs of the kernel tree: 480 MB
 * rewritten for a roll-up of 450 objects), and `gc --auto` past 50 packs would repack everything.
 */
import { readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { runGit } from './git.js';
import { exists } from './git-files.js';
import { ownGitDir } from './loose-import.js';

/** Imports into one repository between two roll-ups. */
const EVERY = 50;

/**
 * A pack no larger than this is taken for one flotilla made (an attempt's are a few KB; a gate
 * batch's as much): rolled up with the others. A repository's own packs are far larger, or few.
 */
export const SMALL_PACK_BYTES = 1024 * 1024;

/** The files git keeps beside a pack, removed with it (as git's own `unlink_pack_path` does). */
const PACK_FILES = ['.pack', '.idx', '.rev', '.bitmap', '.mtimes'];

const imports = new Map<string, number>();

/**
 * Counts a pack written into `repo` (an import into a mission repo, a gate batch into a URL's cache
 * clone); every `EVERY`th rolls its small packs up and asks `gc --auto` (a no-op in a cache clone,
 * whose `gc.auto` is 0).
 */
export async function housekeep(repo: string): Promise<void> {
  const count = (imports.get(repo) ?? 0) + 1;
  imports.set(repo, count);
  if (count % EVERY !== 0) return;
  const gitDir = await ownGitDir(repo);
  if (gitDir) await rollUpSmallPacks(repo, gitDir).catch(() => undefined);
  await runGit(['gc', '--auto', '--quiet'], { cwd: repo, allowFailure: true }).catch(() => undefined);
}

/**
 * The small packs of the repository at `repo` (git directory `gitDir`) rolled into one new pack
 * and removed; how many were. A pack kept by a `.keep` file, a promisor's, a cruft pack or one with
 * a bitmap is never taken, nor anything in a repository with a multi-pack index.
 * Removal follows the new pack's index being in place, so every object stays readable throughout;
 * a reader that had one of them open finds its objects in the new pack (pack-files.ts lists the
 * folder again, git does as much).
 */
export async function rollUpSmallPacks(repo: string, gitDir: string): Promise<number> {
  const folder = join(gitDir, 'objects', 'pack');
  // A multi-pack index names its packs: removing one would leave it naming a missing pack.
  if (exists(join(folder, 'multi-pack-index'))) return 0;
  const { small, others } = packsIn(folder);
  if (small.length < 2) return 0;
  // The other packs named as excluded: pack-objects walks the history from the small packs'
  // commits (to name their objects for its delta search) and stops at what those hold; without
  // them it walked a long history whole (840 ms on the generated repository against 70 ms).
  const made = await runGit(['pack-objects', '--stdin-packs', '--quiet', join(folder, 'pack')], {
    cwd: repo,
    input: `${[...small, ...others.map((name) => `^${name}`)].join('\n')}\n`,
  });
  const name = `pack-${made.stdout.trim()}.pack`;
  if (!/^pack-[0-9a-f]{40,64}\.pack$/.test(name) || !exists(join(folder, name.replace(/\.pack$/, '.idx')))) {
    return 0;
  }
  let removed = 0;
  for (const pack of small) {
    if (pack === name) continue;
    const base = join(folder, pack.slice(0, -'.pack'.length));
    for (const ext of PACK_FILES) rmSync(`${base}${ext}`, { force: true });
    removed++;
  }
  return removed;
}

/**
 * The packs in `folder` with an index: `small`, those to roll up (small enough, no keep, not a
 * promisor's), and the `others`.
 */
function packsIn(folder: string): { small: string[]; others: string[] } {
  let names: string[];
  try {
    names = readdirSync(folder);
  } catch {
    return { small: [], others: [] };
  }
  const present = new Set(names);
  const small: string[] = [];
  const others: string[] = [];
  for (const name of names) {
    if (!/^pack-[0-9a-f]+\.pack$/.test(name)) continue;
    const base = name.slice(0, -'.pack'.length);
    if (!present.has(`${base}.idx`)) continue;
    // A kept pack, a promisor's, a cruft pack (its objects' ages in `.mtimes`) or one with a bitmap
    // is the repository's own arrangement: left as it is.
    const held = ['.keep', '.promisor', '.mtimes', '.bitmap'].some((ext) => present.has(`${base}${ext}`));
    (!held && sizeOf(join(folder, name)) <= SMALL_PACK_BYTES ? small : others).push(name);
  }
  return { small, others };
}

function sizeOf(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return Number.POSITIVE_INFINITY;
  }
}
