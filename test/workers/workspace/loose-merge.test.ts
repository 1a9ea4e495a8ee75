/**
 * The gate's merge done in-process (src/workers/workspace/loose-merge.ts) against `git merge-tree
 * --write-tree` on the same repository: for seeded random pairs of changes made on one base (the
 * tip's and the work's: edits, new and deleted files, new folders, folders renamed, modes, links,
 * a file become a folder), whenever it answers, git merges cleanly to the very same tree; and it
 * does answer for most pairs that touch different paths, so the comparison is not empty.
 */
import { lstat, mkdir, mkdtemp, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readGit, runGit } from '../../../src/workers/workspace/git.js';
import { looseMerge } from '../../../src/workers/workspace/loose-merge.js';
import { ObjectBatch } from '../../../src/workers/workspace/object-batch.js';
import { createRandom, putRandomFile, type Random, randomPath } from '../../helpers/random.js';

let root: string;
let counter = 0;
const ID = ['-c', 'user.name=t', '-c', 'user.email=t@t'];
/** The tip changes these names, the work those; a few of each meet. */
const TIP_NAMES = ['a', 'b', 'dir', 'x y', 'shared'];
const WORK_NAMES = ['c', 'd', 'dir', 'zé', 'shared'];

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'flotilla-loose-merge-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

const git = (dir: string, ...args: string[]) => readGit(args, { cwd: dir });

/** looseMerge() with the objects it made written, as the gate's batch does before git reads them. */
async function mergeAndWrite(options: {
  gitDir: string;
  head: { commit: string; tree: string };
  work: string;
}): Promise<string | null> {
  const batch = new ObjectBatch(options.gitDir);
  const tree = await looseMerge({ batch, head: options.head, work: options.work });
  batch.write();
  return tree;
}

/** Random changes in the checkout, with `names` for the paths; a folder renamed now and then. */
async function change(dir: string, random: Random, names: readonly string[], tag: string): Promise<void> {
  for (let i = 0; i < 6; i++) {
    const path = randomPath(random, names);
    if (random.chance(0.25))
      await rm(join(dir, path), { recursive: true, force: true }).catch(() => undefined);
    else await putRandomFile(dir, path, random, `${tag} ${i}`);
  }
  if (random.chance(0.3)) {
    const folders = (await readdir(dir, { withFileTypes: true })).filter(
      (e) => e.isDirectory() && e.name !== '.git',
    );
    const folder = folders.length > 0 ? random.pick(folders).name : null;
    const to = `${random.pick(names)}-moved`;
    if (folder && !(await lstat(join(dir, to)).catch(() => null)))
      await rename(join(dir, folder), join(dir, to));
  }
}

async function commitAll(dir: string, message: string): Promise<string> {
  await git(dir, 'add', '--all');
  await git(dir, ...ID, 'commit', '--quiet', '--allow-empty', '-m', message);
  return git(dir, 'rev-parse', 'HEAD');
}

/** A base of random files; the tip and the work each a commit of random changes on it. */
async function tipAndWork(seed: number) {
  const random = createRandom(seed);
  const dir = join(root, `repo-${++counter}`);
  await mkdir(dir);
  await runGit(['init', '--quiet', '--initial-branch=main', dir]);
  for (let i = 0; i < 30; i++)
    await putRandomFile(dir, randomPath(random, [...TIP_NAMES, ...WORK_NAMES]), random, `base ${i}`);
  const base = await commitAll(dir, 'base');
  await change(dir, random, TIP_NAMES, 'tip');
  const tip = await commitAll(dir, 'tip');
  await git(dir, 'checkout', '--quiet', '--detach', base);
  await change(dir, random, WORK_NAMES, 'work');
  const work = await commitAll(dir, 'work');
  return { dir, gitDir: join(dir, '.git'), base, tip, work };
}

async function gitMerge(dir: string, tip: string, work: string) {
  const merged = await runGit(['merge-tree', '--write-tree', '-z', tip, work], {
    cwd: dir,
    allowFailure: true,
  });
  return { clean: merged.exitCode === 0, tree: merged.stdout.split('\0')[0] ?? '' };
}

describe('the gate’s merge done in-process', () => {
  const SEEDS = Array.from({ length: 40 }, (_, i) => i + 1);
  let answered = 0;

  it.each(SEEDS)('answers only where git merges cleanly, with git’s tree (seed %i)', async (seed) => {
    const { dir, gitDir, tip, work } = await tipAndWork(seed);
    const head = { commit: tip, tree: await git(dir, 'rev-parse', `${tip}^{tree}`) };
    const tree = await mergeAndWrite({ gitDir, head, work });
    if (tree === null) return;
    answered++;
    expect(await gitMerge(dir, tip, work)).toEqual({ clean: true, tree });
    expect(
      (await runGit(['fsck', '--strict', '--no-dangling'], { cwd: dir, allowFailure: true })).exitCode,
    ).toBe(0);
  });

  it('answered in-process for a third of those seeds at least (they run first, in order)', () => {
    // Most pairs touch different paths: an in-process answer must be common, or the above proves little.
    expect(answered).toBeGreaterThan(SEEDS.length / 3);
  });

  it('leaves a work commit the tip already holds to git, and a tip not built on the work’s base', async () => {
    const { dir, gitDir, base, tip, work } = await tipAndWork(7);
    const tipTree = await git(dir, 'rev-parse', `${tip}^{tree}`);
    const mergedTree = (await gitMerge(dir, tip, work)).tree;
    const merge = await git(dir, ...ID, 'commit-tree', mergedTree, '-p', tip, '-p', work, '-m', 'merged');
    expect(await mergeAndWrite({ gitDir, head: { commit: merge, tree: mergedTree }, work })).toBeNull();
    // The work's base is no ancestor of this tip: git finds the merge base.
    const elsewhere = await git(dir, ...ID, 'commit-tree', tipTree, '-m', 'unrelated');
    expect(await mergeAndWrite({ gitDir, head: { commit: elsewhere, tree: tipTree }, work })).toBeNull();
    // An empty work commit merges to the tip's own tree.
    const empty = await git(dir, ...ID, 'commit-tree', `${base}^{tree}`, '-p', base, '-m', 'nothing');
    expect(await mergeAndWrite({ gitDir, head: { commit: tip, tree: tipTree }, work: empty })).toBe(tipTree);
  });

  /** A base of `files`; the tip and the work each `change`d from it; the in-process and git's merge. */
  async function scenario(
    files: Record<string, string>,
    tipChange: (dir: string) => Promise<void>,
    workChange: (dir: string) => Promise<void>,
  ) {
    const dir = join(root, `scenario-${++counter}`);
    await mkdir(dir);
    await runGit(['init', '--quiet', '--initial-branch=main', dir]);
    for (const [path, content] of Object.entries(files)) {
      await mkdir(join(dir, path, '..'), { recursive: true });
      await writeFile(join(dir, path), content);
    }
    const base = await commitAll(dir, 'base');
    await tipChange(dir);
    const tip = await commitAll(dir, 'tip');
    await git(dir, 'checkout', '--quiet', '--detach', base);
    await workChange(dir);
    const work = await commitAll(dir, 'work');
    const head = { commit: tip, tree: await git(dir, 'rev-parse', `${tip}^{tree}`) };
    return {
      inProcess: await mergeAndWrite({ gitDir: join(dir, '.git'), head, work }),
      byGit: await gitMerge(dir, tip, work),
    };
  }
  const FOLDER = { 'd/one.txt': 'one\n', 'd/two.txt': 'two\n', 'top.txt': 'top\n' };

  it('leaves to git a folder the work moved whole while the tip added to it (git’s directory rename)', async () => {
    const { inProcess, byGit } = await scenario(
      FOLDER,
      (dir) => writeFile(join(dir, 'd/three.txt'), 'three\n'),
      (dir) => rename(join(dir, 'd'), join(dir, 'e')),
    );
    expect(inProcess).toBeNull();
    expect(byGit.clean).toBe(false);
  });

  it('leaves to git a folder the tip moved whole while the work added to it', async () => {
    const { inProcess, byGit } = await scenario(
      FOLDER,
      (dir) => rename(join(dir, 'd'), join(dir, 'e')),
      (dir) => writeFile(join(dir, 'd/three.txt'), 'three\n'),
    );
    expect(inProcess).toBeNull();
    expect(byGit.clean).toBe(false);
  });

  it('leaves to git a file both changed, even the same way, and takes one the tip did not touch', async () => {
    const both = await scenario(
      FOLDER,
      (dir) => writeFile(join(dir, 'top.txt'), 'the same\n'),
      (dir) => writeFile(join(dir, 'top.txt'), 'the same\n'),
    );
    expect(both.inProcess).toBeNull();
    const apart = await scenario(
      FOLDER,
      (dir) => writeFile(join(dir, 'top.txt'), 'the tip’s\n'),
      (dir) => writeFile(join(dir, 'd/one.txt'), 'the work’s\n'),
    );
    expect(apart.byGit.clean).toBe(true);
    expect(apart.inProcess).toBe(apart.byGit.tree);
  });

  it('merges in-process in a bare mission repository too (its git directory is itself)', async () => {
    const dir = join(root, `bare-source-${++counter}`);
    await mkdir(join(dir, 'd'), { recursive: true });
    await runGit(['init', '--quiet', '--initial-branch=main', dir]);
    await writeFile(join(dir, 'top.txt'), 'top\n');
    await writeFile(join(dir, 'd/one.txt'), 'one\n');
    const base = await commitAll(dir, 'base');
    await writeFile(join(dir, 'top.txt'), 'the tip’s\n');
    const tip = await commitAll(dir, 'tip');
    await git(dir, 'checkout', '--quiet', '--detach', base);
    await writeFile(join(dir, 'd/one.txt'), 'the work’s\n');
    const work = await commitAll(dir, 'work');
    const bare = join(root, `bare-${counter}.git`);
    await runGit(['clone', '--quiet', '--bare', '--local', dir, bare]);
    const tree = await git(bare, 'rev-parse', `${tip}^{tree}`);
    const byGit = await gitMerge(bare, tip, work);
    expect(byGit.clean).toBe(true);
    expect(await mergeAndWrite({ gitDir: bare, head: { commit: tip, tree }, work })).toBe(byGit.tree);
  });

  it('merges in-process when the tip moved on by merges of other work, and git agrees', async () => {
    const { dir, gitDir, base, tip, work } = await tipAndWork(11);
    // Another attempt's work merged first: the tip is a merge whose first parent leads to the base.
    await git(dir, 'checkout', '--quiet', '--detach', base);
    await writeFile(join(dir, 'other-attempt.txt'), 'another attempt\n');
    const other = await commitAll(dir, 'other');
    const first = await gitMerge(dir, tip, other);
    const merge = await git(
      dir,
      ...ID,
      'commit-tree',
      first.tree,
      '-p',
      tip,
      '-p',
      other,
      '-m',
      'merge other',
    );
    const tree = await mergeAndWrite({ gitDir, head: { commit: merge, tree: first.tree }, work });
    const byGit = await gitMerge(dir, merge, work);
    if (byGit.clean) expect(tree === null || tree === byGit.tree).toBe(true);
    else expect(tree).toBeNull();
  });
});
