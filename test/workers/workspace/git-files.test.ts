/**
 * The gate's in-process merge commit (src/workers/workspace/git-files.ts) against real git: byte for byte
 * the one `git commit-tree` writes, and left to git where the repository asks for more.
 */
import { mkdir, mkdtemp, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runGit } from '../../../src/workers/workspace/git.js';
import {
  cachedWriteRules,
  commitBody,
  gitZone,
  writeLooseObject,
  writeRules,
} from '../../../src/workers/workspace/git-files.js';

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
    const body = commitBody({
      tree,
      parents: [first, second],
      author: `${NAME} <${EMAIL}>`,
      committer: `${NAME} <${EMAIL}>`,
      time: 1_700_000_000,
      zoneMinutes: 60,
      message,
    });
    const ours = await writeLooseObject(gitDir, 'commit', body);
    expect(ours).toBe(theirs);
    expect(await git(dir, ['cat-file', '-t', ours])).toBe('commit');
    expect(await git(dir, ['log', '--format=%P|%an <%ae>|%ad', '--date=raw', '-1', ours])).toBe(
      `${first} ${second}|${NAME} <${EMAIL}>|1700000000 +0100`,
    );
    expect(
      (await runGit(['fsck', '--strict', '--no-dangling'], { cwd: dir, allowFailure: true })).exitCode,
    ).toBe(0);
    // Written again: the object is there already, and stays as it was, its time made now (a
    // prune of old unreachable objects must not take one a new commit has come to name).
    const path = join(gitDir, 'objects', theirs.slice(0, 2), theirs.slice(2));
    const before = await readFile(path);
    await utimes(path, new Date('2020-01-01'), new Date('2020-01-01'));
    expect(await writeLooseObject(gitDir, 'commit', body)).toBe(theirs);
    expect((await readFile(path)).equals(before)).toBe(true);
    expect((await stat(path)).mtimeMs).toBeGreaterThan(Date.now() - 60_000);
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
    ['nothing set', '', {}, true],
    ['signed commits', 'commit.gpgsign true', {}, false],
    ['signed commits off', 'commit.gpgsign false', {}, true],
    ['a group-shared repository', 'core.sharedrepository group', {}, false],
    ['a repository shared by umask', 'core.sharedrepository umask', {}, true],
    ['SHA-256 objects', 'extensions.objectformat sha256', {}, false],
    ['fsync asked for', 'core.fsync objects', {}, false],
    ['a date from the environment', '', { GIT_COMMITTER_DATE: '1700000000 +0000' }, false],
    ['keys in any case', 'Commit.GPGSign true', {}, false],
    ['commits in UTF-8, said', 'i18n.commitencoding UTF-8', {}, true],
    ['commits in another encoding', 'i18n.commitencoding iso-8859-1', {}, false],
    ['reftable refs', 'extensions.refstorage reftable', {}, false],
    ['names matched ignoring case (the merge commit is unaffected)', 'core.ignorecase true', {}, true],
  ])('%s', (_name, config, env: Record<string, string>, plain) => {
    expect(writeRules(config, env).plain).toBe(plain);
  });

  it('says when names are matched ignoring case (macOS, Windows)', () => {
    expect(writeRules('core.ignorecase true', {}).ignoreCase).toBe(true);
    expect(writeRules('', {}).ignoreCase).toBe(false);
  });

  it.each([
    ['a repository with a work tree, unset', '', 'normal'],
    ['a bare repository, unset', 'core.bare true', 'none'],
    ['a bare repository that asks for them', 'core.bare true\ncore.logallrefupdates true', 'normal'],
    ['turned off', 'core.logallrefupdates false', 'none'],
    ['every ref', 'core.logallrefupdates always', 'always'],
  ])('keeps reflogs as git would: %s', (_name, config, refLogs) => {
    expect(writeRules(config, {}).refLogs).toBe(refLogs);
  });

  it.each([
    ['both unset', '', true],
    ['core.fileMode off', 'core.filemode false', false],
    ['core.symlinks off', 'core.symlinks false', false],
    ['core.fileMode on', 'core.filemode true', true],
  ])('takes modes from the file system unless told not to: %s', (_name, config, trusted) => {
    expect(writeRules(config, {}).modesTrusted).toBe(trusted);
  });

  it.each([
    ['unset', '', false],
    ['false', 'core.autocrlf false', false],
    ['true', 'core.autocrlf true', true],
    ['input', 'core.autocrlf input', true],
  ])('says when git converts line endings on the way in: core.autocrlf %s', (_name, config, converts) => {
    expect(writeRules(config, {}).autocrlf).toBe(converts);
  });

  it('keeps core.attributesFile as written, its case included', () => {
    expect(writeRules('core.attributesfile ~/Git/Attributes', {}).attributesFile).toBe('~/Git/Attributes');
    expect(writeRules('', {}).attributesFile).toBeUndefined();
  });

  it('reads every scope with one git config, and sees a repository that signs its commits', async () => {
    const { dir, gitDir } = await repo();
    await git(dir, ['config', 'commit.gpgSign', 'true']);
    expect((await cachedWriteRules(gitDir)).plain).toBe(false);
    // Another commit encoding: commit-tree adds an `encoding` header.
    const latin = await repo();
    await git(latin.dir, ['config', 'i18n.commitEncoding', 'ISO-8859-1']);
    expect((await cachedWriteRules(latin.gitDir)).plain).toBe(false);
    const other = await repo();
    expect((await cachedWriteRules(other.gitDir)).plain).toBe(true);
  });
});
