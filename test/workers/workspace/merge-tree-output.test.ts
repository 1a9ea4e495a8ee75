import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseMergeTree } from '../../../src/workers/workspace/merge-tree-output.js';

const TREE = '3f20fa2735216668cde55380a5db265b679e2c7b';
const SHA256_TREE = 'a'.repeat(64);

describe('parseMergeTree', () => {
  it.each([
    ['clean merge', `${TREE}\0`, 0, { kind: 'clean', tree: TREE }],
    [
      'clean merge with informational messages',
      `${TREE}\0\x001\0f.txt\0Auto-merging\0Auto-merging f.txt\n\0`,
      0,
      { kind: 'clean', tree: TREE },
    ],
    ['a sha256 repository', `${SHA256_TREE}\0`, 0, { kind: 'clean', tree: SHA256_TREE }],
    [
      'one content conflict',
      `${TREE}\0f.txt\0\x001\0f.txt\0Auto-merging\0Auto-merging f.txt\n\x001\0f.txt\0CONFLICT (contents)\0CONFLICT (content): Merge conflict in f.txt\n\0`,
      1,
      {
        kind: 'conflict',
        tree: TREE,
        files: ['f.txt'],
        messages: ['CONFLICT (content): Merge conflict in f.txt'],
      },
    ],
    [
      'a rename/rename conflict names two paths in one message; paths are sorted and listed once',
      `${TREE}\0z.txt\0a b.txt\0z.txt\0\x002\0a b.txt\0z.txt\0CONFLICT (rename/rename)\0CONFLICT (rename/rename): x renamed to a b.txt and z.txt\n\0`,
      1,
      {
        kind: 'conflict',
        tree: TREE,
        files: ['a b.txt', 'z.txt'],
        messages: ['CONFLICT (rename/rename): x renamed to a b.txt and z.txt'],
      },
    ],
    [
      'conflicted paths without messages',
      `${TREE}\0f.txt\0\0`,
      1,
      { kind: 'conflict', tree: TREE, files: ['f.txt'], messages: [] },
    ],
    ['git 2.39 exits 1 for a revision it cannot resolve, with nothing on stdout', '', 1, { kind: 'error' }],
    ['a fatal error', '', 128, { kind: 'error' }],
    ['an exit status other than 0 or 1, even with a tree', `${TREE}\0`, 2, { kind: 'error' }],
    ['garbage first field', 'fatal: bad\0', 0, { kind: 'error' }],
  ])('%s', (_name, stdout, exitCode, expected) => {
    expect(parseMergeTree(stdout, exitCode)).toEqual(expected);
  });

  it("reads what this machine's git prints for a content and a modify/delete conflict", () => {
    const dir = mkdtempSync(join(tmpdir(), 'merge-tree-'));
    const git = (...args: string[]) =>
      execFileSync('git', ['-C', dir, '-c', 'user.name=t', '-c', 'user.email=t@t', ...args], {
        encoding: 'utf8',
        env: { ...process.env, LC_ALL: 'C' },
      });
    try {
      git('init', '-q', '-b', 'main');
      writeFileSync(join(dir, 'f.txt'), 'base\n');
      writeFileSync(join(dir, 'g.txt'), 'base\n');
      git('add', '.');
      git('commit', '-qm', 'base');
      git('checkout', '-qb', 'ours');
      writeFileSync(join(dir, 'f.txt'), 'ours\n');
      git('rm', '-q', 'g.txt');
      git('commit', '-qam', 'ours');
      git('checkout', '-q', 'main');
      writeFileSync(join(dir, 'f.txt'), 'theirs\n');
      writeFileSync(join(dir, 'g.txt'), 'theirs\n');
      writeFileSync(join(dir, 'h.txt'), 'new\n');
      git('add', '.');
      git('commit', '-qm', 'theirs');
      let stdout = '';
      let status = 0;
      try {
        stdout = git('merge-tree', '--write-tree', '--name-only', '-z', 'ours', 'main');
      } catch (error) {
        const failure = error as { status: number; stdout: string };
        status = failure.status;
        stdout = failure.stdout;
      }
      const parsed = parseMergeTree(stdout, status);
      expect(parsed.kind).toBe('conflict');
      if (parsed.kind !== 'conflict') return;
      expect(parsed.files).toEqual(['f.txt', 'g.txt']);
      expect(parsed.messages.some((m) => m.includes('Merge conflict in f.txt'))).toBe(true);
      expect(parsed.messages.some((m) => m.includes('modify/delete'))).toBe(true);
      // The clean side of the same pair of commits: h.txt alone merges.
      const clean = git('merge-tree', '--write-tree', '--name-only', '-z', 'main', 'main~1');
      expect(parseMergeTree(clean, 0)).toEqual({
        kind: 'clean',
        tree: git('rev-parse', 'main^{tree}').trim(),
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
