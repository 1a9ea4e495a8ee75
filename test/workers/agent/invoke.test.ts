/**
 * One CLI run (src/workers/agent/invoke.ts) around what the CLI leaves at its result path: the host reads
 * the result file synchronously, so only a regular file is read.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { dispatchPaths, invokeAgent } from '../../../src/workers/agent/invoke.js';
import { adapter } from '../../helpers/factories.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'flotilla-invoke-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const run = (script: string) => {
  const cli = adapter({
    config: { invoke_command: `bash -c ${JSON.stringify(script)}`, timeout_ms: 20_000 },
  });
  return invokeAgent({
    adapter: cli,
    cwd: dir,
    paths: dispatchPaths(cli, 't-a1'),
    prompt: 'p',
    timeoutMs: 20_000,
  });
};

it('reads the result file the CLI wrote', async () => {
  const done = await run('cat > /dev/null; echo answer > .planning/dispatch/t-a1-RESULT.md');
  expect(done.outcome.exitCode).toBe(0);
  expect(done.resultFileText).toBe('answer\n');
});

it('takes a FIFO left at the result path for no result, without waiting on it', async () => {
  // Read as a file, a FIFO nobody writes to would hold the host's thread for good.
  const done = await run('cat > /dev/null; mkfifo .planning/dispatch/t-a1-RESULT.md');
  expect(done.outcome.exitCode).toBe(0);
  expect(done.resultFileText).toBeNull();
});
