/**
 * The gate's in-process git writes (src/workspace/git-files.ts) against real git: the merge
 * commit is byte for byte the one `git commit-tree` writes, the compare-and-swap moves the ref and
 * logs it as `git update-ref` does, and each defers to git where the repository asks for more.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runGit } from '../../src/workspace/git.js';
import {
  cachedWriteRules,
  commitBody,
  compareAndSwapRef,
  gitZone,
  writeLooseObject,
  writeRules,
} from '../../src/workspace/git-files.js';

let root: string;
let counter = 0;
const NAME = 'Ada Gate';
const EMAIL = 'ada@example.org';
const ENV = {
  GIT_AUTHOR_NAME: NAME,
  GIT_AUTHOR_EMAIL: EMAIL,
  GIT_COMMITTER_NAME: NAME,
  GIT_COMMITTER_EMAIL: EMAIL,
  GIT_AUTHOR_DATE: '1700000000 +0100',
  GIT_COMMITTER_DATE: '1700000000 +0100',
};

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'flotilla-git-files-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

const git = async (cwd: string, args: string[], input?: string) =>
  (await runGit(args, { cwd, env: ENV, ...(input === undefined ? {} : { input }) })).stdout.trim();

/** A repository with two commits on main and a branch `flotilla/m` at the first. */
async function repo() {
  const dir = join(root, `repo-${++counter}`);
  await mkdir(dir);
  await git(dir, ['init', '--quiet', '--initial-branch', 'main']);
  await writeFile(join(dir, 'a.txt'), 'a\n');
  await git(dir, ['add', 'a.txt']);
  await git(dir, ['commit', '--quiet', '-m', 'first']);
  const first = await git(dir, ['rev-parse', 'HEAD']);
  await writeFile(join(dir, 'b.txt'), 'b\n');
  await git(dir, ['add', 'b.txt']);
  await git(dir, ['commit', '--quiet', '-m', 'second']);
  const second = await git(dir, ['rev-parse', 'HEAD']);
  await git(dir, ['branch', 'flotilla/m', first]);
  return { dir, gitDir: join(dir, '.git'), first, second };
}

describe('the merge commit, written in-process', () => {
  it('is the commit git commit-tree writes, byte for byte, and git reads it', async () => {
    const { dir, gitDir, first, second } = await repo();
    const tree = await git(dir, ['rev-parse', `${second}^{tree}`]);
    const message = 'Merge mean/a2: compute the mean\n\nFlotilla-Attempt: m/mean/a2\n';
    const theirs = await git(dir, ['commit-tree', tree, '-p', first, '-p', second, '-F', '-'], message);
    await git(dir, ['update-ref', '-d', 'refs/heads/flotilla/m']);
    // Remove git's copy, so the in-process write makes the object anew.
    await rm(join(gitDir, 'objects', theirs.slice(0, 2), theirs.slice(2)));
    const ours = await writeLooseObject(
      gitDir,
      'commit',
      commitBody({
        tree,
        parents: [first, second],
        author: `${NAME} <${EMAIL}>`,
        committer: `${NAME} <${EMAIL}>`,
        time: 1_700_000_000,
        zoneMinutes: 60,
        message,
      }),
    );
    expect(ours).toBe(theirs);
    expect(await git(dir, ['cat-file', '-t', ours])).toBe('commit');
    expect(await git(dir, ['log', '--format=%P|%an <%ae>|%ad', '--date=raw', '-1', ours])).toBe(
      `${first} ${second}|${NAME} <${EMAIL}>|1700000000 +0100`,
    );
    expect(
      (await runGit(['fsck', '--strict', '--no-dangling'], { cwd: dir, allowFailure: true })).exitCode,
    ).toBe(0);
    // Written again: the object is there already, and stays as it was.
    expect(
      await writeLooseObject(
        gitDir,
        'commit',
        commitBody({
          tree,
          parents: [first, second],
          author: `${NAME} <${EMAIL}>`,
          committer: `${NAME} <${EMAIL}>`,
          time: 1_700_000_000,
          zoneMinutes: 60,
          message,
        }),
      ),
    ).toBe(theirs);
  });

  it.each([
    [0, '+0000'],
    [60, '+0100'],
    [-330, '-0530'],
    [345, '+0545'],
  ])('writes a zone of %i minutes as %s', (minutes, zone) => {
    expect(gitZone(minutes)).toBe(zone);
  });
});

describe('what a repository asks of a write', () => {
  it.each([
    ['nothing set: plain, and a non-bare repository logs', '', {}, { plain: true, logRefs: true }],
    ['core.bare true: no log by default', 'core.bare true', {}, { plain: true, logRefs: false }],
    [
      'logAllRefUpdates false',
      'core.bare false\ncore.logallrefupdates false',
      {},
      { plain: true, logRefs: false },
    ],
    [
      'logAllRefUpdates always, bare',
      'core.bare true\ncore.logallrefupdates always',
      {},
      { plain: true, logRefs: true },
    ],
    ['signed commits', 'commit.gpgsign true', {}, { plain: false, logRefs: true }],
    ['signed commits off', 'commit.gpgsign false', {}, { plain: true, logRefs: true }],
    ['a group-shared repository', 'core.sharedrepository group', {}, { plain: false, logRefs: true }],
    ['SHA-256 objects', 'extensions.objectformat sha256', {}, { plain: false, logRefs: true }],
    ['reftable refs', 'extensions.refstorage reftable', {}, { plain: false, logRefs: true }],
    ['fsync asked for', 'core.fsync objects', {}, { plain: false, logRefs: true }],
    [
      'a date from the environment',
      '',
      { GIT_COMMITTER_DATE: '1700000000 +0000' },
      { plain: false, logRefs: true },
    ],
    ['keys in any case', 'Commit.GPGSign true', {}, { plain: false, logRefs: true }],
  ])('%s', (_name, config, env: Record<string, string>, rules) => {
    expect(writeRules(config, env)).toEqual(rules);
  });

  it('reads every scope with one git config, and sees a repository that signs its commits', async () => {
    const { dir, gitDir } = await repo();
    await git(dir, ['config', 'commit.gpgSign', 'true']);
    expect((await cachedWriteRules(gitDir)).plain).toBe(false);
    const other = await repo();
    expect((await cachedWriteRules(other.gitDir)).plain).toBe(true);
  });
});

describe('the compare-and-swap of the integration branch, in-process', () => {
  const swap = (gitDir: string, next: string, expected: string, log = true) =>
    compareAndSwapRef({
      gitDir,
      ref: 'refs/heads/flotilla/m',
      next,
      expected,
      committer: `${NAME} <${EMAIL}>`,
      message: 'flotilla: integrate',
      log,
      time: 1_700_000_000,
      zoneMinutes: 60,
    });

  it('moves the ref and logs it exactly as git update-ref does', async () => {
    const ours = await repo();
    expect(await swap(ours.gitDir, ours.second, ours.first)).toBe('published');
    expect(await git(ours.dir, ['rev-parse', 'flotilla/m'])).toBe(ours.second);
    const twin = await repo();
    await git(twin.dir, [
      'update-ref',
      '-m',
      'flotilla: integrate',
      'refs/heads/flotilla/m',
      twin.second,
      twin.first,
    ]);
    const lastLine = async (gitDir: string) =>
      (await readFile(join(gitDir, 'logs', 'refs', 'heads', 'flotilla', 'm'), 'utf8'))
        .trim()
        .split('\n')
        .at(-1);
    const mine = await lastLine(ours.gitDir);
    const theirs = await lastLine(twin.gitDir);
    // The same line but for the two repositories' own commit ids.
    expect(mine?.replaceAll(ours.first, 'FIRST').replaceAll(ours.second, 'SECOND')).toBe(
      theirs?.replaceAll(twin.first, 'FIRST').replaceAll(twin.second, 'SECOND'),
    );
    expect(await git(ours.dir, ['reflog', 'show', '--format=%gs', 'flotilla/m', '-1'])).toBe(
      'flotilla: integrate',
    );
  });

  it('loses the race when the ref moved, and changes nothing', async () => {
    const { dir, gitDir, first, second } = await repo();
    await git(dir, ['update-ref', 'refs/heads/flotilla/m', second]);
    expect(await swap(gitDir, first, first)).toBe('lost-race');
    expect(await git(dir, ['rev-parse', 'flotilla/m'])).toBe(second);
    expect((await runGit(['for-each-ref'], { cwd: dir })).stdout).not.toContain('.lock');
  });

  it('loses the race while another writer holds the lock, and leaves that writer’s lock alone', async () => {
    const { dir, gitDir, first, second } = await repo();
    const lock = join(gitDir, 'refs', 'heads', 'flotilla', 'm.lock');
    await writeFile(lock, 'someone else\n');
    expect(await swap(gitDir, second, first)).toBe('lost-race');
    expect(await readFile(lock, 'utf8')).toBe('someone else\n');
    expect(await git(dir, ['rev-parse', 'flotilla/m'])).toBe(first);
    // And git itself cannot take the ref while flotilla holds it: the same lock file.
  });

  it('moves a ref git keeps packed', async () => {
    const { dir, gitDir, first, second } = await repo();
    await git(dir, ['pack-refs', '--all']);
    expect(await swap(gitDir, second, first)).toBe('published');
    expect(await git(dir, ['rev-parse', 'flotilla/m'])).toBe(second);
  });

  it('logs nothing where the repository does not log', async () => {
    const { dir, gitDir, first, second } = await repo();
    await rm(join(gitDir, 'logs', 'refs', 'heads', 'flotilla'), { recursive: true, force: true });
    expect(await swap(gitDir, second, first, false)).toBe('published');
    expect(
      await readFile(join(gitDir, 'logs', 'refs', 'heads', 'flotilla', 'm'), 'utf8').catch(() => null),
    ).toBeNull();
    expect(await git(dir, ['rev-parse', 'flotilla/m'])).toBe(second);
  });

  it('leaves a branch checked out in a worktree to git (git logs that HEAD too)', async () => {
    const { dir, gitDir, first, second } = await repo();
    await git(dir, ['worktree', 'add', '--quiet', join(root, `wt-${++counter}`), 'flotilla/m']);
    expect(await swap(gitDir, second, first)).toBe('unknown');
    expect(await git(dir, ['rev-parse', 'flotilla/m'])).toBe(first);
  });

  it('leaves a symbolic ref to git', async () => {
    const { dir, gitDir, first, second } = await repo();
    await git(dir, ['symbolic-ref', 'refs/heads/flotilla/m', 'refs/heads/main']);
    expect(await swap(gitDir, first, second)).toBe('unknown');
    expect(await git(dir, ['rev-parse', 'main'])).toBe(second);
  });
});
