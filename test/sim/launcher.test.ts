import { execFile } from 'node:child_process';
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/paths.js';

const run = promisify(execFile);

/**
 * examples/bin/flotilla-sim runs a bundle of the sim with its dependencies inside
 * (vite.sim.config.ts), so a run does not pay for loading yaml and zod from ~180 files. Shown by
 * running a copy of the launcher and of dist/sim where no node_modules can be found. `npm test`
 * builds first, so dist/ exists.
 */
describe('the flotilla-sim launcher', () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  /** The launcher and dist/sim under a temporary folder, as they lie in the repository; `keep` filters dist/sim's files. */
  async function copyOfLauncher(keep: (file: string) => boolean = () => true): Promise<string> {
    const root = await mkdtemp(join(tmpdir(), 'flotilla-sim-launcher-'));
    dirs.push(root);
    await writeFile(join(root, 'package.json'), '{"type": "module"}\n');
    await cp(join(ROOT, 'examples/bin/flotilla-sim'), join(root, 'examples/bin/flotilla-sim'));
    await cp(join(ROOT, 'dist/sim'), join(root, 'dist/sim'), {
      recursive: true,
      filter: (file) => keep(basename(file)),
    });
    return join(root, 'examples/bin/flotilla-sim');
  }

  it('runs a task without node_modules, and --version without even the sim language', async () => {
    // The sim language (steps.js: yaml and zod) is a chunk of its own that --version never loads.
    const bare = await copyOfLauncher((file) => file !== 'steps.js');
    expect((await run(process.execPath, [bare, '--version'])).stdout).toBe('flotilla-sim 0.1.0\n');

    const launcher = await copyOfLauncher();
    const work = await mkdtemp(join(tmpdir(), 'flotilla-sim-launcher-work-'));
    dirs.push(work);
    await mkdir(join(work, '.git'));
    const prompt = [
      '## Task',
      '```sim',
      '- write: {path: t1.txt, content: "t1 done"}',
      '```',
      '## Result Instructions',
      'When you complete this task, write your result to: .planning/dispatch/t1-a1-RESULT.md',
    ].join('\n\n');
    const out = await run(process.execPath, [launcher, '--output-format', 'json', '--prompt', prompt], {
      cwd: work,
    });
    expect(out.stderr).toBe('');
    expect(JSON.parse(out.stdout)).toMatchObject({ is_error: false });
    expect(await readFile(join(work, 't1.txt'), 'utf8')).toBe('t1 done');
    expect(await readFile(join(work, '.planning/dispatch/t1-a1-RESULT.md'), 'utf8')).toMatch(
      /\*\*Status\*\*: Complete\n/,
    );
  });
});
