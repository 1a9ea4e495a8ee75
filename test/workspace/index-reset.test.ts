import {
  chmod,
  lstat,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  readlink,
  rm,
  symlink,
  unlink,
  utimes,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runGit } from '../../src/workspace/git.js';
import { checkoutablePath, resetInProcess } from '../../src/workspace/index-reset.js';

/**
 * The in-process reset is held to git's: the same checkout, reset by `git checkout --force
 * --detach` in a twin worktree, must come out with the same files, modes, links and index.
 */
let root: string;
let counter = 0;
const scratch = (name: string) => join(root, `${name}-${++counter}`);
const ID = ['-c', 'user.name=t', '-c', 'user.email=t@t'];
const git = async (cwd: string, ...args: string[]) => (await runGit(args, { cwd })).stdout.trim();

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'flotilla-index-reset-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

async function put(dir: string, files: Record<string, string | { link: string } | { exec: string }>) {
  for (const [path, what] of Object.entries(files)) {
    const full = join(dir, path);
    await mkdir(join(full, '..'), { recursive: true });
    await rm(full, { recursive: true, force: true });
    if (typeof what === 'string') await writeFile(full, what);
    else if ('link' in what) await symlink(what.link, full);
    else {
      await writeFile(full, what.exec);
      await chmod(full, 0o755);
    }
  }
}

async function commitAll(dir: string, message: string): Promise<string> {
  await runGit(['add', '-A'], { cwd: dir });
  await runGit([...ID, 'commit', '-q', '--allow-empty', '-m', message], { cwd: dir });
  return git(dir, 'rev-parse', 'HEAD');
}

/** A repository with commits `a` and `b` (b: edited, added deep, removed, mode and link changed, file ↔ folder). */
async function history() {
  const repo = scratch('repo');
  await mkdir(repo, { recursive: true });
  await runGit(['init', '-q', repo]);
  await put(repo, {
    'a.txt': 'a\n',
    'dir/b.txt': 'b\n',
    'dir/sub/c.txt': 'c\n',
    'run.sh': { exec: 'echo run\n' },
    link: { link: 'a.txt' },
    'gone.txt': 'gone\n',
    'solo/only.txt': 'only\n',
    ab: 'a file\n',
  });
  const a = await commitAll(repo, 'a');
  await rm(join(repo, 'gone.txt'));
  await rm(join(repo, 'solo'), { recursive: true });
  await rm(join(repo, 'ab'));
  await put(repo, {
    'a.txt': 'a, changed\n',
    'new/deep/n.txt': 'new\n',
    'run.sh': 'echo run\n',
    link: { link: 'dir/b.txt' },
    'ab/x.txt': 'now a folder\n',
  });
  await chmod(join(repo, 'run.sh'), 0o644);
  const b = await commitAll(repo, 'b');
  return { repo, a, b };
}

async function twins(repo: string, at: string) {
  const ours = scratch('ours');
  const theirs = scratch('theirs');
  for (const dir of [ours, theirs])
    await runGit(['worktree', 'add', '-q', '--detach', dir, at], { cwd: repo });
  return { ours, theirs };
}

/** Every path below `dir` but `.git`, with its kind, executable bit and content or link target. */
async function listing(dir: string, prefix = ''): Promise<string[]> {
  const out: string[] = [];
  for (const name of (await readdir(join(dir, prefix))).sort()) {
    const path = prefix === '' ? name : `${prefix}/${name}`;
    if (path === '.git') continue;
    const info = await lstat(join(dir, path));
    if (info.isDirectory()) out.push(`${path}/`, ...(await listing(dir, path)));
    else if (info.isSymbolicLink()) out.push(`${path} -> ${await readlink(join(dir, path))}`);
    else
      out.push(
        `${path} ${info.mode & 0o100 ? 'x' : '-'} ${JSON.stringify(await readFile(join(dir, path), 'utf8'))}`,
      );
  }
  return out;
}

/** The same edits in both twins, as criteria or a careless agent might leave them. */
async function edit(dir: string) {
  // The same size in the same second: only the content tells (racily clean).
  await writeFile(join(dir, 'dir/b.txt'), 'B\n');
  await writeFile(join(dir, 'a.txt'), 'a, edited to another size\n');
  await unlink(join(dir, 'dir/sub/c.txt'));
}

async function expectTwins(ours: string, theirs: string, commit: string) {
  expect(await listing(ours)).toEqual(await listing(theirs));
  expect(await git(ours, 'ls-files', '-s')).toBe(await git(theirs, 'ls-files', '-s'));
  expect(await git(ours, 'rev-parse', 'HEAD')).toBe(commit);
  expect(await git(ours, 'status', '--porcelain', '--ignored', '--untracked-files=all')).toBe('');
}

describe('resetInProcess', () => {
  it('leaves a checkout as git checkout --force --detach does, both ways between two commits, edits undone', async () => {
    const { repo, a, b } = await history();
    const { ours, theirs } = await twins(repo, b);
    for (const dir of [ours, theirs]) await edit(dir);
    expect(await resetInProcess(ours, a)).toBe(true);
    await runGit(['checkout', '-q', '--force', '--detach', a], { cwd: theirs });
    await expectTwins(ours, theirs, a);
    // The folder only `b` had is gone, as git removes it.
    expect(await listing(ours)).not.toContain('new/');

    for (const dir of [ours, theirs]) await writeFile(join(dir, 'dir/sub/c.txt'), 'c edited\n');
    expect(await resetInProcess(ours, b)).toBe(true);
    await runGit(['checkout', '-q', '--force', '--detach', b], { cwd: theirs });
    await expectTwins(ours, theirs, b);
  });

  it('rewrites only what differs: an untouched file keeps its inode', async () => {
    const { repo, a, b } = await history();
    const { ours } = await twins(repo, b);
    // Out of the racy second, so the stat data alone tells the files are unchanged.
    const past = new Date(Date.now() - 10_000);
    for (const path of ['dir/b.txt', 'dir/sub/c.txt']) await utimes(join(ours, path), past, past);
    await runGit(['update-index', '--refresh', '-q'], { cwd: ours, allowFailure: true });
    const before = await lstat(join(ours, 'dir/b.txt'));
    expect(await resetInProcess(ours, a)).toBe(true);
    expect((await lstat(join(ours, 'dir/b.txt'))).ino).toBe(before.ino);
    expect(await readFile(join(ours, 'a.txt'), 'utf8')).toBe('a\n');
  });

  it('leaves to git, touching nothing, a folder where a file goes, attributes, a submodule', async () => {
    const { repo, a, b } = await history();
    const { ours } = await twins(repo, b);
    await rm(join(ours, 'a.txt'));
    await mkdir(join(ours, 'a.txt'));
    expect(await resetInProcess(ours, a)).toBe(false);
    expect(await git(ours, 'rev-parse', 'HEAD')).toBe(b);
    expect((await lstat(join(ours, 'a.txt'))).isDirectory()).toBe(true);

    await put(repo, { '.gitattributes': '*.txt text\n' });
    const withAttributes = await commitAll(repo, 'attributes');
    const second = await twins(repo, b);
    expect(await resetInProcess(second.ours, withAttributes)).toBe(false);
    expect(await git(second.ours, 'rev-parse', 'HEAD')).toBe(b);

    const sub = scratch('sub');
    await mkdir(sub);
    await runGit(['init', '-q', sub]);
    await runGit([...ID, 'commit', '-q', '--allow-empty', '-m', 's'], { cwd: sub });
    const subCommit = await git(sub, 'rev-parse', 'HEAD');
    await runGit(['update-index', '--add', '--cacheinfo', `160000,${subCommit},mod`], { cwd: repo });
    await runGit([...ID, 'commit', '-q', '-m', 'gitlink'], { cwd: repo });
    const withGitlink = await git(repo, 'rev-parse', 'HEAD');
    expect(await resetInProcess(second.ours, withGitlink)).toBe(false);
    expect(await git(second.ours, 'status', '--porcelain')).toBe('');
  });

  it.each([
    ['src/a.ts', true],
    ['a/.gitignore', true],
    ['.git/config', false],
    ['x/.GIT/hooks/post-checkout', false],
    ['a/../b', false],
    ['sub/.gitattributes', false],
  ])('checks out %s in-process: %s', (path, ok) => {
    expect(checkoutablePath(path)).toBe(ok);
  });
});
