import { cp, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/flotilla.js';
import { type RedisHandle, startRedis, uniquePrefix } from '../helpers/redis-server.js';

/**
 * What `npm pack` ships is what a user gets: pack a clean copy of the source tree, install the
 * tarball into a fresh project, and use it as the README says — the CLI and the library snippet,
 * against a worker host from the installed package itself.
 */

describe('the npm package', () => {
  let dir: string;
  let redis: RedisHandle;
  let project: string;
  let tarball: string;

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
    await execa('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--omit=dev', tarball], {
      cwd: project,
    });
    // Packing builds with tsc and installing unpacks ~370 packages: minutes on a slow, shared machine.
  }, 300_000);
  afterAll(async () => {
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
    const installed = join(project, 'node_modules', 'flotilla');
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
    const env = {
      ...process.env,
      REDIS_URL: redis.url,
      FLOTILLA_PREFIX: uniquePrefix(),
      FLOTILLA_HOME: join(dir, 'home'),
      LOG_LEVEL: 'silent',
      PATH: `${join(installed, 'examples', 'bin')}${delimiter}${process.env.PATH ?? ''}`,
    };
    const worker = execa(
      'node',
      [
        join(installed, 'bin', 'flotilla.js'),
        'worker',
        '--adapters',
        join(installed, 'examples', 'adapters'),
      ],
      {
        env,
        reject: false,
      },
    );
    try {
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
    } finally {
      worker.kill('SIGTERM');
      await worker;
    }
  });
});
