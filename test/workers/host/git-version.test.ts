import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../../src/cli/main.js';
import { exitCodeFor, isFlotillaError } from '../../../src/shared/errors.js';
import { assertGitVersion } from '../../../src/workers/workspace/git.js';

/** A `git` on PATH that reports an old version, as an old distribution's git would. */
let fakeBin: string;
const savedPath = process.env.PATH;

beforeAll(async () => {
  fakeBin = await mkdtemp(join(tmpdir(), 'flotilla-old-git-'));
  await writeFile(join(fakeBin, 'git'), '#!/bin/sh\necho "git version 2.34.1"\n');
  await chmod(join(fakeBin, 'git'), 0o755);
});

afterAll(async () => {
  process.env.PATH = savedPath;
  await rm(fakeBin, { recursive: true, force: true });
});

describe('the git version check at host start', () => {
  it('accepts the git on this machine', async () => {
    await expect(assertGitVersion()).resolves.toBeUndefined();
  });

  it('refuses git older than 2.38 with a clear message, as exit 3', async () => {
    const error = await assertGitVersion({ env: { PATH: `${fakeBin}${delimiter}${savedPath}` } }).catch(
      (e: unknown) => e,
    );
    expect(isFlotillaError(error, 'git/unsupported')).toBe(true);
    expect((error as Error).message).toBe(
      "git 2.34.1 is too old: flotilla needs git 2.38.0 or newer (for 'git merge-tree --write-tree')",
    );
    expect(exitCodeFor('git/unsupported')).toBe(3);
  });

  it('`flotilla worker` exits 3 with one line, before it even tries Redis', async () => {
    const err: string[] = [];
    const out: string[] = [];
    process.env.PATH = `${fakeBin}${delimiter}${savedPath}`;
    try {
      // A Redis error would be exit 3 too; the message tells them apart.
      const code = await main(['worker'], {
        out: (line: string) => out.push(line),
        err: (line: string) => err.push(line),
        isTTY: false,
      });
      expect(code).toBe(3);
    } finally {
      process.env.PATH = savedPath;
    }
    expect(err).toEqual([
      "flotilla: git 2.34.1 is too old: flotilla needs git 2.38.0 or newer (for 'git merge-tree --write-tree')",
    ]);
  });
});
