/**
 * A merge commit written in-process on a file system without hard links (vfat, some network
 * mounts): the object is renamed into place, as git falls back to, instead of failing the gate.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it, vi } from 'vitest';
import { commitBody, writeLooseObject } from '../../../src/workers/workspace/git-files.js';

const links = vi.hoisted(() => ({ refused: 0 }));

vi.mock('node:fs', async (original) => {
  const real = await original<typeof import('node:fs')>();
  return {
    ...real,
    linkSync: () => {
      links.refused++;
      throw Object.assign(new Error('EPERM: operation not permitted, link'), { code: 'EPERM' });
    },
  };
});

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

it('renames the object into place where the file system refuses a hard link', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'flotilla-no-links-'));
  dirs.push(dir);
  execFileSync('git', ['init', '-q'], { cwd: dir });
  const tree = execFileSync('git', ['write-tree'], { cwd: dir }).toString().trim();
  const id = await writeLooseObject(
    join(dir, '.git'),
    'commit',
    commitBody({
      tree,
      parents: [],
      author: 'A <a@x>',
      committer: 'A <a@x>',
      time: 1,
      zoneMinutes: 0,
      message: 'm\n',
    }),
  );
  expect(links.refused).toBe(1);
  expect(execFileSync('git', ['cat-file', '-t', id], { cwd: dir }).toString().trim()).toBe('commit');
  // No temporary file is left beside it.
  expect(
    execFileSync('ls', [join(dir, '.git', 'objects', id.slice(0, 2))])
      .toString()
      .trim(),
  ).toBe(id.slice(2));
});
