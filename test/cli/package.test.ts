import { cp, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/flotilla.js';
import { type RedisHandle, startRedis, uniquePrefix } from '../helpers/redis-server.js';

/**
 * What `npm pack` ships is what a user gets: pack a clean copy of the source tree, install the
 * tarball into a fresh project, and use it as the README says — the CLI, the library snippet and
 * the example scripts (examples/scripts/, the TypeScript one type-checked under `tsc --strict`
 * first), against one worker host from the installed package itself.
 */

describe('the npm package', () => {
  let dir: string;
  let redis: RedisHandle;
  let project: string;
  let tarball: string;
  let installed: string;
  let env: NodeJS.ProcessEnv;
  let worker: ResultPromise | undefined;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'flotilla-pack-'));
    redis = await startRedis();
    // A copy of what git would check out (tracked and new files, not dist/ or node_modules/),
    // with this checkout's node_modules borrowed for the build that `prepack` runs.
    const clone = join(dir, 'clone');
    const listed = await execa('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
      cwd: ROOT,
    });
    for (const file of listed.stdout.split('\0').filter(Boolean)) {
      await mkdir(dirname(join(clone, file)), { recursive: true });
      await cp(join(ROOT, file), join(clone, file)).catch(() => undefined); // deleted but still listed
    }
    await symlink(join(ROOT, 'node_modules'), join(clone, 'node_modules'));
    const packed = await execa('npm', ['pack', '--json', '--pack-destination', dir], { cwd: clone });
    const [info] = JSON.parse(packed.stdout) as [{ filename: string; files: { path: string }[] }];
    tarball = join(dir, info.filename);

    project = join(dir, 'project');
    await mkdir(project);
    await writeFile(
      join(project, 'package.json'),
      '{ "name": "uses-flotilla", "private": true, "type": "module" }\n',
    );
    // TypeScript and Node's types as a TypeScript user has them, at this repository's versions.
    const { devDependencies: dev } = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as {
      devDependencies: Record<string, string>;
    };
    const typescript = [`typescript@${dev.typescript}`, `@types/node@${dev['@types/node']}`];
    await execa(
      'npm',
      ['install', '--prefer-offline', '--no-audit', '--no-fund', '--omit=dev', tarball, ...typescript],
      { cwd: project },
    );
    // Packing builds with tsc and installing unpacks ~370 packages: minutes on a slow, shared machine.

    installed = join(project, 'node_modules', 'flotilla');
    env = {
      ...process.env,
      REDIS_URL: redis.url,
      FLOTILLA_PREFIX: uniquePrefix(),
      FLOTILLA_HOME: join(dir, 'home'),
      LOG_LEVEL: 'silent',
      PATH: `${join(installed, 'examples', 'bin')}${delimiter}${process.env.PATH ?? ''}`,
    };
    // One worker host of the installed package, with the stand-in agent, serves every mission here.
    worker = execa(
      'node',
      [
        join(installed, 'bin', 'flotilla.js'),
        'worker',
        '--adapters',
        join(installed, 'examples', 'adapters'),
      ],
      { env, reject: false },
    );
  }, 300_000);
  afterAll(async () => {
    worker?.kill('SIGTERM');
    await worker;
    await redis?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('ships the build, the licence, the docs the README links to, and source maps that resolve', async () => {
    const listed = await execa('tar', ['-tzf', tarball]);
    const files = listed.stdout.split('\n').map((name) => name.replace(/^package\//, ''));
    expect(files).toEqual(
      expect.arrayContaining(['dist/index.js', 'dist/cli/main.js', 'bin/flotilla.js', 'LICENSE']),
    );
    const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
    for (const [, link] of readme.matchAll(/\]\(((?:docs|examples)\/[^)#]+)\)/g))
      expect(files, link).toContain(link);
    const map = JSON.parse(
      await readFile(join(project, 'node_modules/flotilla/dist/cli/main.js.map'), 'utf8'),
    ) as {
      sourcesContent?: string[];
    };
    expect(map.sourcesContent?.[0]).toContain('export async function main');
  });

  it('works as a CLI: flotilla --version', async () => {
    const { version } = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const result = await execa('npx', ['--offline', 'flotilla', '--version'], { cwd: project });
    expect(result.stdout.trim()).toBe(`flotilla ${version}`);
  });

  it("works as the README's library: the snippet runs a mission on a host of the installed package", async () => {
    const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('## From a script'));
    const snippet = /```ts\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
    expect(snippet).toContain("from 'flotilla'");
    await writeFile(join(project, 'snippet.mjs'), snippet);
    await mkdir(join(project, 'missions', 'calc'), { recursive: true });
    await writeFile(
      join(project, 'missions', 'stats.yaml'),
      [
        'goal: Packaged stats',
        'workspace: ./calc',
        'tasks:',
        '  - id: mean',
        '    title: Add mean',
        '    critic: false',
        '    exit_criteria: ["test -f stats.txt"]',
        '    description: |',
        '      ```sim',
        '      - write: {path: stats.txt, content: mean}',
        '      ```',
      ].join('\n'),
    );
    const result = await execa('node', ['snippet.mjs'], { cwd: project, env, reject: false });
    expect(result.exitCode, result.stderr).toBe(0);
    const lines = result.stdout.trim().split('\n');
    expect(lines.at(-1)).toBe("done [ 'mean:completed' ]");
    // Its onEvent lines: the mission's own events name the mission, never `undefined undefined`.
    expect(result.stdout).not.toContain('undefined');
    expect(lines).toContainEqual(
      expect.stringMatching(/^\d\d:\d\d:\d\d mission +submitted +mission submitted: /),
    );
    expect(lines).toContainEqual(expect.stringMatching(/^\d\d:\d\d:\d\d mean a1 +completed /));
  });

  it('ships the mission JSON Schema where its exports say: flotilla/mission.schema.json', async () => {
    const file = createRequire(join(project, 'package.json')).resolve('flotilla/mission.schema.json');
    expect(file).toBe(join(installed, 'schema', 'mission.schema.json'));
    expect(await readFile(file, 'utf8')).toBe(
      await readFile(join(ROOT, 'schema', 'mission.schema.json'), 'utf8'),
    );
  });

  /** What an example script printed, with the events and summary every run of it must show. */
  function expectGreeted(result: { exitCode?: number; stdout: string; stderr: string }): string[] {
    expect(result.exitCode, result.stderr).toBe(0);
    const lines = result.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^submitted \S+$/);
    expect(result.stdout).not.toContain('undefined');
    for (const task of ['hello', 'goodbye'])
      expect(lines).toContainEqual(
        expect.stringMatching(new RegExp(`^\\d\\d:\\d\\d:\\d\\d ${task} a1 +completed `)),
      );
    expect(lines).toContainEqual(expect.stringMatching(/^\d\d:\d\d:\d\d mission +done /));
    expect(lines).toContainEqual(expect.stringMatching(/^✅ Mission complete: Greet from a/));
    expect(lines).toContain('- ✅ Write goodbye.txt');
    return lines;
  }

  it('runs examples/scripts/follow-mission.js as shipped: submits an object, follows its events, prints the summary', async () => {
    await cp(join(installed, 'examples', 'scripts', 'follow-mission.js'), join(project, 'follow-mission.js'));
    const result = await execa('node', ['follow-mission.js', './ws-js'], {
      cwd: project,
      env,
      reject: false,
    });
    expectGreeted(result);
  });

  it('type-checks examples/scripts/follow-mission.ts under tsc --strict against the installed types, then runs it', async () => {
    await cp(join(installed, 'examples', 'scripts', 'follow-mission.ts'), join(project, 'follow-mission.ts'));
    const compilerOptions = {
      strict: true,
      module: 'nodenext',
      target: 'es2022',
      types: ['node'],
      outDir: 'out',
    };
    await writeFile(
      join(project, 'tsconfig.json'),
      JSON.stringify({ compilerOptions, files: ['follow-mission.ts'] }),
    );
    const tsc = join(project, 'node_modules', 'typescript', 'bin', 'tsc');
    const checked = await execa('node', [tsc, '-p', '.'], { cwd: project, reject: false });
    expect(checked.exitCode, checked.stdout).toBe(0);

    // The check has teeth: the internal spelling of a field is a type error in a user's project.
    await writeFile(
      join(project, 'wrong.ts'),
      "import { defineMission } from 'flotilla';\n" +
        "defineMission({ goal: 'g', tasks: [{ id: 'a', title: 'A', exitCriteria: ['true'] }] });\n",
    );
    await writeFile(
      join(project, 'tsconfig.wrong.json'),
      JSON.stringify({ compilerOptions: { ...compilerOptions, noEmit: true }, files: ['wrong.ts'] }),
    );
    const wrong = await execa('node', [tsc, '-p', 'tsconfig.wrong.json'], { cwd: project, reject: false });
    expect(wrong.exitCode).not.toBe(0);
    expect(wrong.stdout).toMatch(/wrong\.ts\(2,\d+\): error TS\d+: .*'exitCriteria'/);

    const result = await execa('node', ['out/follow-mission.js', './ws-ts'], {
      cwd: project,
      env,
      reject: false,
    });
    expect(expectGreeted(result).at(-1)).toBe('attempts: hello 1, goodbye 1');
  });
});
