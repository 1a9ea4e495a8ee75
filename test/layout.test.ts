/**
 * The layout rule (.dependency-cruiser.cjs, docs/ARCHITECTURE.md): the producer and the workers never
 * import each other, shared/ imports nothing above it, the board never reaches into workers/, and
 * only cli/ ends the process. Each import below is written into a scratch tree shaped like src/ and
 * held to the project's own rules, so a rule that stops matching fails here.
 */
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from './helpers/paths.js';

const CRUISER = join(ROOT, 'node_modules', '.bin', 'depcruise');
let scratch: string;

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'flotilla-layout-'));
  await writeFile(
    join(scratch, 'tsconfig.json'),
    JSON.stringify({ compilerOptions: { module: 'nodenext' } }),
  );
});
afterAll(() => rm(scratch, { recursive: true, force: true }));

/** Runs the project's rules over a tree of two files, `from` importing `to`; the rules it broke. */
async function violations(from: string, to: string): Promise<string[]> {
  const dir = await mkdtemp(join(scratch, 'case-'));
  await writeFile(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { module: 'nodenext' } }));
  const spec = relative(dirname(join(dir, from)), join(dir, to)).replace(/\.ts$/, '.js');
  await mkdir(dirname(join(dir, from)), { recursive: true });
  await mkdir(dirname(join(dir, to)), { recursive: true });
  await writeFile(
    join(dir, from),
    `import { x } from '${spec.startsWith('.') ? spec : `./${spec}`}';\nexport const y = x;\n`,
  );
  await writeFile(join(dir, to), 'export const x = 1;\n');
  const run = await execa(
    CRUISER,
    ['src', '--config', join(ROOT, '.dependency-cruiser.cjs'), '--output-type', 'json'],
    {
      cwd: dir,
      reject: false,
    },
  );
  const report = JSON.parse(run.stdout) as { summary: { violations: { rule: { name: string } }[] } };
  return report.summary.violations.map((v) => v.rule.name);
}

describe('the three halves', () => {
  it.each([
    [
      'a producer module importing a worker stage',
      'src/producer/a.ts',
      'src/workers/stages/b.ts',
      'producer',
    ],
    [
      'a producer module importing the workspace',
      'src/producer/a.ts',
      'src/workers/workspace/git.ts',
      'producer',
    ],
    ['a worker importing the producer', 'src/workers/host/a.ts', 'src/producer/client.ts', 'workers-host'],
    ['a stage importing the producer', 'src/workers/stages/a.ts', 'src/producer/load.ts', 'workers-stages'],
    ['shared importing the producer', 'src/shared/a.ts', 'src/producer/b.ts', 'shared-base'],
    ['shared importing a worker', 'src/shared/store/a.ts', 'src/workers/host/b.ts', 'shared-store'],
    ['the board importing a stage', 'src/board/a.ts', 'src/workers/stages/gate/b.ts', 'board'],
    ['the store importing the queues', 'src/shared/store/a.ts', 'src/shared/queue/b.ts', 'shared-store'],
    [
      'the workspace importing a stage',
      'src/workers/workspace/a.ts',
      'src/workers/stages/b.ts',
      'workers-workspace',
    ],
  ])('refuses %s', async (_name, from, to, rule) => {
    expect(await violations(from, to)).toEqual([rule]);
  });

  it.each([
    ['the producer importing shared', 'src/producer/a.ts', 'src/shared/queue/b.ts'],
    ['a stage importing the workspace', 'src/workers/stages/a.ts', 'src/workers/workspace/b.ts'],
    ['the board importing the producer', 'src/board/a.ts', 'src/producer/client.ts'],
    ['the CLI importing a worker', 'src/cli/a.ts', 'src/workers/host/b.ts'],
  ])('allows %s', async (_name, from, to) => {
    expect(await violations(from, to)).toEqual([]);
  });

  it('the source tree itself keeps the rules', async () => {
    const run = await execa(CRUISER, ['src', '--config', '.dependency-cruiser.cjs', '--output-type', 'err'], {
      cwd: ROOT,
      reject: false,
    });
    expect(run.exitCode, run.stdout).toBe(0);
  });
});

async function sources(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries.filter((e) => e.isFile() && e.name.endsWith('.ts')).map((e) => join(e.parentPath, e.name));
}

it('only cli/ ends the process', async () => {
  const files = await sources(join(ROOT, 'src'));
  const exits: string[] = [];
  for (const file of files) {
    const path = relative(ROOT, file);
    if (path.startsWith('src/cli/')) continue;
    if (/process\.exit\(/.test(await readFile(file, 'utf8'))) exits.push(path);
  }
  expect(files.length).toBeGreaterThan(100);
  expect(exits).toEqual([]);
});
