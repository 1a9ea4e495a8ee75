import { chmod, mkdir, mkdtemp, readdir, readFile, rm, symlink, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attemptRef } from '../../../src/shared/contracts.js';
import { commitAttempt } from '../../../src/workers/workspace/commit.js';
import { importPath, importStream } from '../../../src/workers/workspace/fast-import.js';
import { runGit } from '../../../src/workers/workspace/git.js';
import { prepareWorkspace } from '../../../src/workers/workspace/prepare-workspace.js';
import { openRepoCache } from '../../../src/workers/workspace/repo-cache.js';
import { removeWorktree } from '../../../src/workers/workspace/worktree.js';
import { checkoutAttempt } from '../../helpers/checkouts.js';
import { objectCounts } from '../../helpers/git-objects.js';

/**
 * An attempt's commits are written by `git fast-import` from the paths `git status` listed (no
 * `git add -A`, no pathspec commit): whatever the agent can leave in a checkout must come out in
 * the commit exactly as `git add -A` would have taken it.
 */
describe('importPath', () => {
  it.each([
    ['src/a.ts', 'src/a.ts'],
    ['a file with spaces.txt', 'a file with spaces.txt'],
    ['"quoted".txt', '"\\"quoted\\".txt"'],
    ['line\nbreak.txt', '"line\\012break.txt"'],
    ['tab\there\\and-backslash', '"tab\\011here\\\\and-backslash"'],
    ['back\\slash only', 'back\\slash only'],
    ['ünïcödé.md', 'ünïcödé.md'],
  ])('%j is written as %s', (path, written) => {
    expect(importPath(path)).toBe(written);
  });
});

describe('importStream', () => {
  it('writes each commit with its parent, then asks for their ids in order and ends with done', () => {
    const stream = importStream([
      {
        ref: 'HEAD',
        mark: 1,
        parent: 'a'.repeat(40),
        author: 'sim <sim@example.com>',
        committer: 'flotilla <flotilla@localhost>',
        time: 1_700_000_000,
        message: 'work',
        entries: [
          { path: 'a.txt', mode: '100644', content: Buffer.from('hé\n') },
          { path: 'gone.txt', deleted: true },
        ],
      },
      {
        ref: 'HEAD',
        mark: 2,
        parent: ':1',
        author: 'a <a@b>',
        committer: 'a <a@b>',
        time: 1,
        message: 'dispatch',
        entries: [],
      },
    ]).toString('utf8');
    expect(stream).toBe(
      [
        'commit HEAD',
        'mark :1',
        'author sim <sim@example.com> 1700000000 +0000',
        'committer flotilla <flotilla@localhost> 1700000000 +0000',
        'data 4',
        'work',
        `from ${'a'.repeat(40)}`,
        'M 100644 inline a.txt',
        // The byte length, not the character count.
        'data 4',
        'hé\n',
        'D gone.txt',
        '',
        'commit HEAD',
        'mark :2',
        'author a <a@b> 1 +0000',
        'committer a <a@b> 1 +0000',
        'data 8',
        'dispatch',
        'from :1',
        '',
        'get-mark :1',
        'get-mark :2',
        'done',
        '',
      ].join('\n'),
    );
  });
});

let root: string;
let counter = 0;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'flotilla-commit-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});
function scratch(name: string): string {
  counter += 1;
  return join(root, `${name}-${counter}`);
}
async function git(cwd: string, ...args: string[]): Promise<string> {
  return (await runGit(args, { cwd })).stdout.replace(/\n$/, '');
}

async function checkoutOf(missionId: string, files: Record<string, string>) {
  const dir = scratch('mission');
  await mkdir(dir, { recursive: true });
  for (const [path, text] of Object.entries(files)) {
    await mkdir(join(dir, path, '..'), { recursive: true });
    await writeFile(join(dir, path), text);
  }
  const prepared = await prepareWorkspace({ workspace: dir, missionId });
  const cache = await openRepoCache({ repo: prepared.repo, cacheDir: scratch('cache') });
  const checkout = await checkoutAttempt({
    cache,
    workRoot: scratch('work'),
    missionId,
    taskId: 't',
    attempt: 1,
  });
  return { prepared, checkout };
}

/** commitAttempt() of checkoutOf()'s checkout into its local mission repo, as the run stage does. */
async function commitLocally(
  { prepared, checkout }: Awaited<ReturnType<typeof checkoutOf>>,
  missionId: string,
) {
  const ref = attemptRef(missionId, 't', 1);
  const committed = await commitAttempt({
    dir: checkout.dir,
    message: 't',
    ref,
    baseCommit: checkout.baseCommit,
    localRepo: prepared.repo,
  });
  return { ref, committed };
}

/** What `git add -A && git commit` makes of the same checkout, for comparison: tree entries with modes. */
async function treeListing(repo: string, commit: string): Promise<string> {
  return git(repo, 'ls-tree', '-r', '--full-tree', commit);
}

describe('commitAttempt', () => {
  it('takes new, changed, deleted, executable, binary, symlinked and oddly named files as `git add -A` would', async () => {
    const { prepared, checkout } = await checkoutOf('c1', {
      'README.md': '# calc\n',
      'src/old.ts': 'old\n',
      'src/keep.ts': 'keep\n',
      'run.sh': 'echo hi\n',
      '.gitignore': 'build/\n*.log\n',
    });
    const dir = checkout.dir;
    await writeFile(join(dir, 'README.md'), '# calc, changed\n');
    await unlink(join(dir, 'src/old.ts'));
    await chmod(join(dir, 'run.sh'), 0o755);
    await mkdir(join(dir, 'deep/er/still'), { recursive: true });
    await writeFile(join(dir, 'deep/er/still/new.ts'), 'new\n');
    await writeFile(join(dir, 'blob.bin'), Buffer.from([0, 255, 10, 13, 0, 1]));
    await symlink('src/keep.ts', join(dir, 'link-to-keep'));
    await writeFile(join(dir, 'a name with spaces.txt'), 'spaces\n');
    await writeFile(join(dir, '"quoted"\nname.txt'), 'odd\n');
    await mkdir(join(dir, 'build'), { recursive: true });
    await writeFile(join(dir, 'build/out.js'), 'ignored\n');
    await writeFile(join(dir, 'debug.log'), 'ignored\n');
    await mkdir(join(dir, '.planning/dispatch/archive'), { recursive: true });
    await writeFile(join(dir, '.planning/dispatch/archive/x-PROMPT.md'), 'the prompt\n');
    await writeFile(join(dir, '.planning/notes.md'), "the user's own planning note\n");

    const committed = await commitAttempt({
      dir,
      message: 't: work',
      ref: attemptRef('c1', 't', 1),
      baseCommit: checkout.baseCommit,
      author: 'sim <sim@example.com>',
    });
    expect(committed.changed).toBe(true);

    // The same checkout committed the old way, in a second clone, is the reference.
    const reference = scratch('reference');
    await runGit(['clone', '--quiet', prepared.repo, reference]);
    await runGit(['checkout', '--quiet', '--detach', checkout.baseCommit], { cwd: reference });
    await runGit(['rm', '-r', '-q', '--cached', '.'], { cwd: reference });
    await runGit(['clean', '-fdxq'], { cwd: reference });
    await runGit(['--work-tree', dir, 'add', '-A', '--', '.', ':(exclude).planning/dispatch'], {
      cwd: reference,
    });
    const referenceTree = await git(reference, 'write-tree');
    expect(await treeListing(prepared.repo, committed.workCommit)).toBe(
      await git(reference, 'ls-tree', '-r', referenceTree),
    );
    const listing = await treeListing(prepared.repo, committed.workCommit);
    expect(listing).toMatch(/^100755 blob \S+\trun\.sh$/m);
    expect(listing).toMatch(/^120000 blob \S+\tlink-to-keep$/m);
    expect(listing).toContain('.planning/notes.md');
    expect(listing).not.toContain('build/out.js');
    expect(listing).not.toContain('src/old.ts');
    expect(listing).not.toContain('.planning/dispatch');
    expect(await git(prepared.repo, 'cat-file', 'blob', `${committed.workCommit}:blob.bin`)).toBe(
      Buffer.from([0, 255, 10, 13, 0, 1]).toString('utf8'),
    );
    // The dispatch files are in the published commit only; its parent is the work, whose parent is the base.
    expect(await git(prepared.repo, 'diff', '--name-only', committed.workCommit, committed.commit)).toBe(
      '.planning/dispatch/archive/x-PROMPT.md',
    );
    expect(await git(prepared.repo, 'rev-parse', `${committed.commit}^`, `${committed.workCommit}^`)).toBe(
      `${committed.workCommit}\n${checkout.baseCommit}`,
    );
    expect(await git(prepared.repo, 'log', '-1', '--format=%an <%ae>|%s', committed.workCommit)).toBe(
      'sim <sim@example.com>|t: work',
    );
    // The checkout is left at the published commit with a matching index: clean but for what git ignores.
    expect(await git(dir, 'rev-parse', 'HEAD')).toBe(committed.commit);
    expect(await git(dir, 'status', '--porcelain')).toBe('');
    await removeWorktree(dir);
  });

  it('stores what `git add` would where .gitattributes converts content: line endings normalised, a clean filter run', async () => {
    const { prepared, checkout } = await checkoutOf('c-attr', {
      '.gitattributes': '* text=auto\n*.up filter=upper\n',
      'keep.txt': 'keep\n',
    });
    const dir = checkout.dir;
    // A clean filter as git-lfs installs one, in the configuration the checkout reads.
    await runGit(['config', 'filter.upper.clean', 'tr a-z A-Z'], { cwd: dir });
    await writeFile(join(dir, 'crlf.txt'), 'one\r\ntwo\r\n');
    await writeFile(join(dir, 'shout.up'), 'quiet\n');
    await writeFile(join(dir, 'keep.txt'), 'kept\r\n');
    await writeFile(join(dir, 'raw.bin'), Buffer.from([0, 13, 10, 0]));
    await mkdir(join(dir, '.planning/dispatch'), { recursive: true });
    await writeFile(join(dir, '.planning/dispatch/t-a1-RESULT.md'), 'done\r\n');

    const { committed } = await commitLocally({ prepared, checkout }, 'c-attr');

    const blob = async (path: string, commit = committed.workCommit) =>
      (await runGit(['cat-file', 'blob', `${commit}:${path}`], { cwd: prepared.repo })).stdout;
    expect(await blob('crlf.txt')).toBe('one\ntwo\n');
    expect(await blob('keep.txt')).toBe('kept\n');
    expect(await blob('shout.up')).toBe('QUIET\n');
    expect(Buffer.from(await blob('raw.bin'), 'latin1')).toEqual(Buffer.from([0, 13, 10, 0]));
    expect(await blob('.planning/dispatch/t-a1-RESULT.md', committed.commit)).toBe('done\n');
    // The index agrees with what git would add: the checkout is clean at the published commit.
    expect(await git(dir, 'status', '--porcelain')).toBe('');
    await removeWorktree(dir);
  });

  it('keeps the modes git add would where the repository does not trust the file system (core.fileMode, core.symlinks off)', async () => {
    const { prepared, checkout } = await checkoutOf('c-modes', {
      'plain.txt': 'plain\n',
      'tool.sh': 'echo tool\n',
      'target.txt': 'target\n',
    });
    const dir = checkout.dir;
    // The base: tool.sh executable, link a link (made here: checkoutOf writes plain files).
    await runGit(['update-index', '--chmod=+x', 'tool.sh'], { cwd: prepared.repo });
    await symlink('target.txt', join(prepared.repo, 'link'));
    await runGit(['add', 'link'], { cwd: prepared.repo });
    await runGit(['-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-q', '-m', 'modes'], {
      cwd: prepared.repo,
    });
    const base = await git(prepared.repo, 'rev-parse', 'HEAD');
    await runGit(['fetch', '-q', 'origin'], { cwd: dir });
    await runGit(['checkout', '-q', '--force', '--detach', base], { cwd: dir });
    await runGit(['config', 'core.fileMode', 'false'], { cwd: dir });
    await runGit(['config', 'core.symlinks', 'false'], { cwd: dir });
    // What such a file system shows: the bits are noise, and a link is a file holding its target.
    await writeFile(join(dir, 'plain.txt'), 'plain, edited\n');
    await chmod(join(dir, 'plain.txt'), 0o755);
    await writeFile(join(dir, 'tool.sh'), 'echo tool, edited\n');
    await chmod(join(dir, 'tool.sh'), 0o644);
    await writeFile(join(dir, 'new.sh'), 'echo new\n');
    await chmod(join(dir, 'new.sh'), 0o755);
    await unlink(join(dir, 'link'));
    await writeFile(join(dir, 'link'), 'plain.txt');

    const { committed } = await commitLocally(
      { prepared, checkout: { ...checkout, baseCommit: base } },
      'c-modes',
    );
    const modes = await git(prepared.repo, 'ls-tree', '--full-tree', committed.workCommit);
    expect(modes).toMatch(/^100644 blob \S+\tplain\.txt$/m);
    expect(modes).toMatch(/^100755 blob \S+\ttool\.sh$/m);
    expect(modes).toMatch(/^100644 blob \S+\tnew\.sh$/m);
    expect(modes).toMatch(/^120000 blob \S+\tlink$/m);
    expect(await git(prepared.repo, 'cat-file', 'blob', `${committed.workCommit}:link`)).toBe('plain.txt');
    expect(await git(dir, 'status', '--porcelain')).toBe('');
    await removeWorktree(dir);
  });

  it("commits flotilla's dispatch files even where the repository's .gitignore ignores .planning/", async () => {
    // The kernel's .gitignore has `.*`: `git add -A` silently left PROMPT and RESULT out.
    const { prepared, checkout } = await checkoutOf('c2', {
      '.gitignore': '.*\n!.gitignore\n',
      'a.txt': 'a\n',
    });
    await mkdir(join(checkout.dir, '.planning/dispatch'), { recursive: true });
    await writeFile(join(checkout.dir, '.planning/dispatch/t-a1-RESULT.md'), '**Status**: Complete\n');
    await writeFile(join(checkout.dir, 'a.txt'), 'a, changed\n');
    const committed = await commitAttempt({
      dir: checkout.dir,
      message: 't',
      ref: attemptRef('c2', 't', 1),
      baseCommit: checkout.baseCommit,
    });
    expect(await git(prepared.repo, 'diff', '--name-only', checkout.baseCommit, committed.workCommit)).toBe(
      'a.txt',
    );
    expect(await git(prepared.repo, 'show', `${committed.commit}:.planning/dispatch/t-a1-RESULT.md`)).toBe(
      '**Status**: Complete',
    );
    expect(await readFile(join(checkout.dir, 'a.txt'), 'utf8')).toBe('a, changed\n');
    await removeWorktree(checkout.dir);
  });

  it('replaces a file by a folder of the same name and back', async () => {
    const { prepared, checkout } = await checkoutOf('c3', { thing: 'a file\n', 'dir/inner.txt': 'inner\n' });
    await unlink(join(checkout.dir, 'thing'));
    await mkdir(join(checkout.dir, 'thing'));
    await writeFile(join(checkout.dir, 'thing/now-a-folder.txt'), 'x\n');
    await rm(join(checkout.dir, 'dir'), { recursive: true });
    await writeFile(join(checkout.dir, 'dir'), 'now a file\n');
    const committed = await commitAttempt({
      dir: checkout.dir,
      message: 't',
      ref: attemptRef('c3', 't', 1),
      baseCommit: checkout.baseCommit,
    });
    expect(await git(prepared.repo, 'ls-tree', '-r', '--name-only', committed.workCommit)).toBe(
      'dir\nthing/now-a-folder.txt',
    );
    expect(await git(checkout.dir, 'status', '--porcelain')).toBe('');
    await removeWorktree(checkout.dir);
  });

  it.each([
    ['written into the local mission repo', true],
    ['pushed (fast-import in the checkout)', false],
  ])('leaves out and names every path git refuses, %s', async (_, local) => {
    const missionId = local ? 'c-refused-local' : 'c-refused-push';
    const made = await checkoutOf(missionId, { 'a.txt': 'a\n' });
    const { prepared, checkout } = made;
    const dir = checkout.dir;
    const planted = [
      '.GIT/hooks/post-checkout',
      'GIT~1/config',
      'sub/.Git/config',
      '.g\u200cit/hooks/pre-commit',
    ];
    for (const path of planted) {
      await mkdir(join(dir, path, '..'), { recursive: true });
      await writeFile(join(dir, path), '#!/bin/sh\necho owned\n');
    }
    await symlink('elsewhere', join(dir, '.gitmodules'));
    await writeFile(join(dir, 'ok.txt'), 'kept\n');
    const ref = attemptRef(missionId, 't', 1);
    const committed = await commitAttempt({
      dir,
      message: 't',
      ref,
      baseCommit: checkout.baseCommit,
      ...(local ? { localRepo: prepared.repo } : {}),
    });
    expect(committed.refused).toEqual([
      { path: '.GIT/hooks/post-checkout', refusal: 'dotgit' },
      { path: '.gitmodules', refusal: 'gitmodules-link' },
      { path: '.g\u200cit/hooks/pre-commit', refusal: 'hfs-dotgit' },
      { path: 'GIT~1/config', refusal: 'ntfs-dotgit' },
      { path: 'sub/.Git/config', refusal: 'dotgit' },
    ]);
    // Neither commit the ref names holds them, nor the checkout's index; the good file is there.
    expect(await git(prepared.repo, 'ls-tree', '-r', '--name-only', '-z', ref)).not.toMatch(
      /GIT|Git|gitmodules|\u200c/,
    );
    expect(await git(prepared.repo, 'ls-tree', '-r', '--name-only', committed.workCommit)).toBe(
      'a.txt\nok.txt',
    );
    expect(await git(dir, 'ls-files')).not.toMatch(/GIT|Git|gitmodules/);
    const fsck = await runGit(['fsck', '--strict', '--no-dangling'], {
      cwd: prepared.repo,
      allowFailure: true,
    });
    expect(fsck.stderr + fsck.stdout).toBe('');
    expect(fsck.exitCode).toBe(0);
    await removeWorktree(dir);
  });

  it('writes the attempt straight into a local mission repo, without a push', async () => {
    const made = await checkoutOf('c4', { 'a.txt': 'a\n' });
    const { prepared, checkout } = made;
    await writeFile(join(checkout.dir, 'a.txt'), 'a, changed\n');
    // Any push from this checkout now fails: the commit must reach the mission repo another way.
    await runGit(['config', 'remote.origin.pushurl', join(root, 'no-such-repo')], { cwd: checkout.dir });
    const { ref, committed } = await commitLocally(made, 'c4');
    expect(await git(prepared.repo, 'rev-parse', ref, `${ref}^`)).toBe(
      `${committed.commit}\n${committed.workCommit}`,
    );
    expect(await git(checkout.dir, 'rev-parse', 'HEAD')).toBe(committed.commit);
    await removeWorktree(checkout.dir);
  });

  it('writes the attempt’s objects into the mission repo as one pack, none loose', async () => {
    const made = await checkoutOf('c9', { 'a.txt': 'a\n', 'deep/er/b.txt': 'b\n' });
    const { prepared, checkout } = made;
    await writeFile(join(checkout.dir, 'a.txt'), 'a, changed\n');
    await writeFile(join(checkout.dir, 'deep/er/b.txt'), 'b, changed\n');
    await writeFile(join(checkout.dir, 'deep/er/c.txt'), 'c\n');
    const before = await objectCounts(prepared.repo);
    const { ref, committed } = await commitLocally(made, 'c9');
    const after = await objectCounts(prepared.repo);
    expect(after.loose).toBe(before.loose);
    expect(after.packs).toBe(before.packs + 1);
    expect(await git(prepared.repo, 'rev-parse', ref)).toBe(committed.commit);
    expect(await git(prepared.repo, 'show', `${committed.workCommit}:deep/er/c.txt`)).toBe('c');
    expect((await runGit(['fsck', '--strict', '--no-dangling'], { cwd: prepared.repo })).exitCode).toBe(0);
    await removeWorktree(checkout.dir);
  });

  it('rolls the mission repo’s small packs up as imports go on, every attempt still there', async () => {
    const made = await checkoutOf('c10', { 'a.txt': 'a\n' });
    const { prepared, checkout } = made;
    let base = checkout.baseCommit;
    const refs: string[] = [];
    for (let i = 0; i < 60; i++) {
      await writeFile(join(checkout.dir, `f${i}.txt`), `${i}\n`);
      const ref = attemptRef('c10', `t${i}`, 1);
      const committed = await commitAttempt({
        dir: checkout.dir,
        message: `t${i}`,
        ref,
        baseCommit: base,
        localRepo: prepared.repo,
      });
      refs.push(ref);
      base = committed.commit;
    }
    // A pack an import: 60 without the roll-up at the 50th.
    expect((await objectCounts(prepared.repo)).packs).toBeLessThan(20);
    expect(await git(prepared.repo, 'show', `${refs.at(-1)}:f59.txt`)).toBe('59');
    expect((await runGit(['fsck', '--strict', '--no-dangling'], { cwd: prepared.repo })).exitCode).toBe(0);
    await removeWorktree(checkout.dir);
  });

  it('folds the commits an agent made on its own branch into the work, and drops that branch', async () => {
    const made = await checkoutOf('c7', { 'a.txt': 'a\n' });
    const { prepared, checkout } = made;
    await git(checkout.dir, 'checkout', '--quiet', '-b', 'feature');
    await writeFile(join(checkout.dir, 'b.txt'), 'b\n');
    await git(checkout.dir, 'add', 'b.txt');
    await git(
      checkout.dir,
      '-c',
      'user.name=agent',
      '-c',
      'user.email=a@a',
      'commit',
      '--quiet',
      '-m',
      'agent',
    );
    const { committed } = await commitLocally(made, 'c7');
    expect(await git(prepared.repo, 'show', `${committed.workCommit}:b.txt`)).toBe('b');
    expect(await git(checkout.dir, 'rev-parse', `${committed.workCommit}^`)).toBe(checkout.baseCommit);
    // Detached at the attempt, and the branch gone from the host's cache, which every checkout shares.
    expect(await git(checkout.dir, 'rev-parse', '--abbrev-ref', 'HEAD')).toBe('HEAD');
    expect(await git(checkout.dir, 'branch', '--list', 'feature')).toBe('');
    await removeWorktree(checkout.dir);
  });

  it('pushes when the local mission repo cannot take the commits, and leaves no crash report there', async () => {
    const { prepared, checkout } = await checkoutOf('c5', { 'a.txt': 'a\n' });
    await writeFile(join(checkout.dir, 'a.txt'), 'a, changed\n');
    // A repository without the base commit (the mission repo was rewritten, say).
    const stranger = scratch('stranger');
    await runGit(['init', '--quiet', '--bare', stranger]);
    const ref = attemptRef('c5', 't', 1);
    const committed = await commitAttempt({
      dir: checkout.dir,
      message: 't',
      ref,
      baseCommit: checkout.baseCommit,
      localRepo: stranger,
    });
    expect(await git(prepared.repo, 'rev-parse', ref)).toBe(committed.commit);
    expect((await readdir(stranger)).filter((name) => name.startsWith('fast_import_crash_'))).toEqual([]);
    await removeWorktree(checkout.dir);
  });

  it('keeps a local mission repo packed: it asks git for gc --auto every 50 imports', async () => {
    const { prepared, checkout } = await checkoutOf('c6', { 'a.txt': 'a\n' });
    // Thresholds as low as they go, and in the foreground, so the test sees the packing happen.
    await runGit(['config', 'gc.auto', '1'], { cwd: prepared.repo });
    await runGit(['config', 'gc.autoDetach', 'false'], { cwd: prepared.repo });
    const packs = async () =>
      Number(/^packs: (\d+)$/m.exec(await git(prepared.repo, 'count-objects', '-v'))?.[1] ?? 0);
    // git's gc --auto estimates the loose objects from one of the 256 object folders: enough of
    // them that the estimate is certain to pass the threshold.
    const blobs = scratch('blobs');
    await mkdir(blobs, { recursive: true });
    const names: string[] = [];
    for (let i = 0; i < 3000; i++) {
      names.push(join(blobs, `b${i}`));
      await writeFile(names[i] ?? '', `blob ${i}\n`);
    }
    await runGit(['hash-object', '-w', '--stdin-paths'], {
      cwd: prepared.repo,
      input: `${names.join('\n')}\n`,
    });
    const before = await packs();
    let base = checkout.baseCommit;
    for (let i = 0; i < 50; i++) {
      await writeFile(join(checkout.dir, 'a.txt'), `a ${i}\n`);
      const committed = await commitAttempt({
        dir: checkout.dir,
        message: `t ${i}`,
        ref: attemptRef('c6', 't', 1),
        baseCommit: base,
        localRepo: prepared.repo,
      });
      base = committed.commit;
    }
    expect(await packs()).toBeGreaterThan(before);
    await removeWorktree(checkout.dir);
  });
});
