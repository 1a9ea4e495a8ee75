import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isFlotillaError } from '../../../src/shared/errors.js';
import { readGit, runGit } from '../../../src/workers/workspace/git.js';

/** The git wrapper every workspace step goes through: arguments, stdin, limits and its two error codes. */
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'flotilla-git-'));
  await runGit(['init', '--quiet', dir]);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('runGit', () => {
  it('passes bytes on stdin and reads stdout, arguments taken literally', async () => {
    const bytes = Buffer.from([0, 1, 2, 255, 10]);
    const id = await readGit(['hash-object', '-w', '--stdin'], { cwd: dir, input: bytes });
    expect(id).toMatch(/^[0-9a-f]{40}$/);
    expect(await readGit(['cat-file', '-s', id], { cwd: dir })).toBe('5');
    // `$(…)` and `;` reach git as they are: there is no shell in between.
    const odd = await runGit(['rev-parse', '--verify', '--quiet', '$(touch pwned); HEAD'], {
      cwd: dir,
      allowFailure: true,
    });
    expect(odd.exitCode).not.toBe(0);
  });

  it('fails with git/failed and git’s own first line, or returns the failure when asked to', async () => {
    const error = await runGit(['rev-parse', '--verify', 'no-such-ref'], { cwd: dir }).catch((e) => e);
    expect(isFlotillaError(error) && error.code).toBe('git/failed');
    expect(String(error.message)).toMatch(/^git rev-parse --verify no-such-ref: fatal: /);
    const returned = await runGit(['rev-parse', '--verify', 'no-such-ref'], { cwd: dir, allowFailure: true });
    expect(returned.exitCode).toBe(128);
    expect(returned.stderr).toContain('fatal');
  });

  it('cuts output beyond maxBuffer without failing the command', async () => {
    const many = await runGit(['help', '-a'], { cwd: dir, maxBuffer: 64 });
    expect(many.truncated).toBe(true);
    expect(Buffer.byteLength(many.stdout)).toBe(64);
  });

  it('stops a command that runs past its time limit', async () => {
    // An alias that starts a child of its own: the limit stops the child too, not only git.
    const error = await runGit(['-c', 'alias.wait=!sleep 30', 'wait'], { cwd: dir, timeoutMs: 300 }).catch(
      (e) => e,
    );
    expect(isFlotillaError(error) && error.code).toBe('git/failed');
    expect(String(error.message)).toMatch(/timed out after \d+ ms/);
  });

  it('says git is missing when it is not on PATH', async () => {
    const error = await runGit(['--version'], { env: { PATH: dir } }).catch((e) => e);
    expect(isFlotillaError(error) && error.code).toBe('git/missing');
  });
});
