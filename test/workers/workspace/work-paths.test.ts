import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attemptRef, integrationBranch } from '../../../src/shared/contracts.js';
import { runGit } from '../../../src/workers/workspace/git.js';
import { integrateAttempt } from '../../../src/workers/workspace/integrate.js';
import { ObjectBatch } from '../../../src/workers/workspace/object-batch.js';
import { prepareWorkspace } from '../../../src/workers/workspace/prepare-workspace.js';
import { openRepoCache } from '../../../src/workers/workspace/repo-cache.js';
import { refusedInWork } from '../../../src/workers/workspace/work-paths.js';

/**
 * The path gate on the gate's merge (work-paths.ts): a work commit that holds a path git refuses,
 * made without commitAttempt() (trees written with `git mktree`, which checks no names), is found
 * in-process and by `git diff-tree` alike, and is never merged into the integration branch.
 */
let root: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'flotilla-work-paths-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

async function git(cwd: string, args: string[], input?: string): Promise<string> {
  return (await runGit(args, { cwd, ...(input === undefined ? {} : { input }) })).stdout.trim();
}

/** A tree holding `entries` (`<mode> <type> <id>\t<name>` lines), as mktree writes it. */
function mktree(repo: string, entries: readonly string[]): Promise<string> {
  return git(repo, ['mktree'], `${entries.join('\n')}\n`);
}

/** The base's tree plus `name/…/leaf` holding a hook: a commit on the base, as an agent could craft. */
async function craftedWork(repo: string, base: string, parts: readonly string[]): Promise<string> {
  const blob = await git(repo, ['hash-object', '-w', '--stdin'], '#!/bin/sh\necho owned\n');
  let entry = `100755 blob ${blob}\t${parts.at(-1)}`;
  for (const part of parts.slice(0, -1).reverse())
    entry = `040000 tree ${await mktree(repo, [entry])}\t${part}`;
  const top = (await git(repo, ['ls-tree', base])).split('\n').filter(Boolean);
  const tree = await mktree(repo, [...top, entry]);
  return git(repo, ['commit-tree', tree, '-p', base, '-m', 'crafted']);
}

describe('the path gate on merges', () => {
  it('finds a refused path in a work commit in-process and through git, and nothing in a clean one', async () => {
    const dir = join(root, 'finds');
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, 'README.md'), '# seed\n');
    const prepared = await prepareWorkspace({ workspace: dir, missionId: 'w1' });
    const repo = prepared.repo;
    const gitDir = await git(repo, ['rev-parse', '--path-format=absolute', '--git-dir']);
    const bad = await craftedWork(repo, prepared.baseCommit, ['sub', '.Git', 'hooks', 'post-checkout']);
    const good = await craftedWork(repo, prepared.baseCommit, ['tools', 'hooks', 'post-checkout']);
    const expected = [{ path: 'sub/.Git/hooks/post-checkout', refusal: 'dotgit' }];
    expect(await refusedInWork(repo, new ObjectBatch(gitDir), bad)).toEqual(expected);
    expect(await refusedInWork(repo, null, bad)).toEqual(expected);
    expect(await refusedInWork(repo, new ObjectBatch(gitDir), good)).toEqual([]);
    expect(await refusedInWork(repo, null, good)).toEqual([]);
  });

  it('does not merge such a work commit: the branch stays where it was, the gate is told why', async () => {
    const dir = join(root, 'merge');
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, 'README.md'), '# seed\n');
    const prepared = await prepareWorkspace({ workspace: dir, missionId: 'w2' });
    const repo = prepared.repo;
    const work = await craftedWork(repo, prepared.baseCommit, ['GIT~1', 'hooks', 'post-checkout']);
    const ref = attemptRef('w2', 't', 1);
    await git(repo, ['update-ref', ref, work]);
    const branch = `refs/heads/${integrationBranch('w2')}`;
    const before = await git(repo, ['rev-parse', branch]);
    const cache = await openRepoCache({ repo, cacheDir: join(root, 'merge-cache') });
    const result = await integrateAttempt({
      cache,
      missionId: 'w2',
      attemptId: 't/a1',
      ref,
      workCommit: work,
      message: 'merge t',
    });
    expect(result).toEqual({
      ok: false,
      refused: true,
      files: ['GIT~1/hooks/post-checkout'],
      conflict: expect.stringContaining('`GIT~1/hooks/post-checkout`: git refuses this path (Windows'),
    });
    expect(await git(repo, ['rev-parse', branch])).toBe(before);
  });
});
