/**
 * The walked reset's `git clean` is left out when the checkout's folders hold only what its index
 * tracks (src/workers/workspace/untracked-left.ts). The answer is held to git's own: `git clean -n -ffdx`
 * (what the reset's clean would remove) on seeded random checkouts, and the decision by a table.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EntryKind } from '../../../src/workers/workspace/index-file.js';
import { keptMatcher } from '../../../src/workers/workspace/monitored-paths.js';
import {
  keptAsNames,
  type Listed,
  leftUntracked,
  untrackedFound,
} from '../../../src/workers/workspace/untracked-left.js';
import { createRandom, putRandomFile, type Random, randomPath } from '../../helpers/random.js';

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'flotilla-untracked-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('untrackedFound', () => {
  const tracked = new Map<string, EntryKind>([
    ['README', 'file'],
    ['src/a.c', 'file'],
    ['src/lib/b.c', 'file'],
    ['link', 'link'],
    ['vendor/mod', 'gitlink'],
  ]);
  /** A tree as folder → entries; `kind` by a trailing `/` (folder) or `@` (link). */
  const tree =
    (folders: Record<string, string[]>) =>
    (path: string): Listed[] | null =>
      folders[path]?.map((name) => ({
        name: name.replace(/[/@]$/, ''),
        kind: name.endsWith('/') ? 'dir' : name.endsWith('@') ? 'link' : 'file',
      })) ?? null;
  const clean = {
    '': ['.git/', 'README', 'src/', 'link@', 'vendor/'],
    src: ['a.c', 'lib/'],
    'src/lib': ['b.c'],
    vendor: ['mod/'],
  };
  /** `keep` in setup's form (`/node_modules/`), as leftUntracked() takes it. */
  const cases: [string, Record<string, string[]>, readonly string[], boolean | null][] = [
    ['only what the index tracks', clean, [], false],
    ['tracked files missing (the checkout puts them back)', { ...clean, src: ['lib/'] }, [], false],
    ['an untracked file at the top', { ...clean, '': [...clean[''], 'new.txt'] }, [], true],
    ['an untracked file two folders down', { ...clean, 'src/lib': ['b.c', 'b.o'] }, [], true],
    ['an untracked empty folder', { ...clean, '': [...clean[''], 'out/'], out: [] }, [], true],
    ['a link where a tracked folder was', { ...clean, '': ['README', 'src@', 'link@', 'vendor/'] }, [], true],
    [
      'a folder where a tracked file was',
      { ...clean, '': [...clean[''].filter((n) => n !== 'README'), 'README/'], README: [] },
      [],
      true,
    ],
    ['a file where a tracked folder was', { ...clean, '': ['README', 'src', 'link@', 'vendor/'] }, [], true],
    ['a nested repository', { ...clean, 'src/lib': ['b.c', 'inner/'], 'src/lib/inner': ['.git/'] }, [], true],
    [
      'a repository made inside a tracked folder',
      { ...clean, src: ['a.c', 'lib/', '.git/'], 'src/.git': [] },
      [],
      true,
    ],
    ['inside a submodule: its own repository’s', { ...clean, 'vendor/mod': ['anything'] }, [], false],
    [
      'setup’s kept output',
      { ...clean, '': [...clean[''], 'node_modules/'], node_modules: ['x'] },
      ['/node_modules/'],
      false,
    ],
    [
      'a kept path does not keep its neighbours',
      { ...clean, '': [...clean[''], 'node_modules/', 'dist/'], dist: [] },
      ['/node_modules/'],
      true,
    ],
    [
      'a file where a kept folder was',
      { ...clean, '': [...clean[''], 'node_modules'] },
      ['/node_modules/'],
      true,
    ],
    [
      'a link where a kept folder was',
      { ...clean, '': [...clean[''], 'node_modules@'] },
      ['/node_modules/'],
      true,
    ],
    ['a kept file', { ...clean, '': [...clean[''], 'out.log'] }, ['/out.log'], false],
    [
      'an unreadable folder',
      { ...clean, src: ['a.c', 'lib/'], 'src/lib': null as unknown as string[] },
      [],
      null,
    ],
  ];
  it.each(cases)('%s', (_name, folders, kept, expected) => {
    expect(untrackedFound(tracked, tree(folders), keptMatcher(kept))).toBe(expected);
  });
});

describe('keptAsNames, as keptMatcher() keeps them', () => {
  it.each([
    ['a folder', ['/node_modules/'], [['node_modules', true]]],
    [
      'a file, and a folder below the top',
      ['/out.log', '/build/gen/'],
      [
        ['out.log', false],
        ['build/gen', true],
      ],
    ],
    ['a name that is not ASCII, as its bytes', ['/zé/'], [[Buffer.from('zé').toString('latin1'), true]]],
  ] as const)('%s', (_name, keep, expected) => {
    const names = keptAsNames(keep);
    expect(names).not.toBeNull();
    // Each name kept as a folder; as a file or link too unless only a folder is kept there.
    const kept = keptMatcher(names ?? []);
    for (const [path, folderOnly] of expected) {
      expect(kept(path, true)).toBe(true);
      expect(kept(path, false)).toBe(!folderOnly);
    }
  });
  it.each([
    ['not anchored', 'node_modules/'],
    ['a wildcard', '/*.log'],
    ['a bracket', '/a[1]/'],
    ['an escape', '/a\\b'],
    ['a negation', '/!x'],
    ['the top itself', '/'],
  ])('leaves %s to git', (_name, pattern) => {
    expect(keptAsNames([pattern])).toBeNull();
  });
});

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { cwd, encoding: 'utf8' });

/** What the reset's `git clean -ffdx -e <keep>…` would remove, as git says it. */
function gitWouldClean(dir: string, keep: readonly string[]): string {
  return git(dir, 'clean', '-n', '-ffdx', ...keep.flatMap((pattern) => ['-e', pattern])).trim();
}

/** One thing an attempt, its criteria or a person can leave in a checkout. */
type Leftover = (dir: string, random: Random, i: number) => Promise<void>;
const LEFTOVERS: readonly Leftover[] = [
  // an untracked file, in a folder that may be new
  async (dir, random, i) => putRandomFile(dir, `${randomPath(random)}-u${i}`, random, 'untracked'),
  // an ignored file (build output)
  async (dir, _random, i) => {
    await mkdir(join(dir, 'build'), { recursive: true });
    await writeFile(join(dir, 'build', `out${i}.o`), 'built\n');
  },
  // an empty folder
  async (dir, _random, i) => {
    await mkdir(join(dir, `empty-${i}`, 'inner'), { recursive: true });
  },
  // a tracked file no longer in the index (`git rm --cached`), still on disk
  async (dir) => {
    const files = git(dir, 'ls-files', '-z').split('\0').filter(Boolean);
    if (files.length > 0) git(dir, 'rm', '--cached', '--quiet', '--', files[0] as string);
  },
  // a link where a tracked folder was
  async (dir) => {
    const folder = git(dir, 'ls-files', '-z')
      .split('\0')
      .find((path) => path.includes('/'))
      ?.split('/')[0];
    if (!folder) return;
    await rm(join(dir, folder), { recursive: true, force: true });
    await symlink('/tmp', join(dir, folder));
  },
  // a file or a link where setup's kept folder was
  async (dir, random) => {
    await rm(join(dir, 'node_modules'), { recursive: true, force: true });
    if (random.chance(0.5)) await writeFile(join(dir, 'node_modules'), 'not a folder\n');
    else await symlink('/tmp', join(dir, 'node_modules'));
  },
  // a nested repository
  async (dir, _random, i) => {
    await mkdir(join(dir, `nested-${i}`), { recursive: true });
    git(join(dir, `nested-${i}`), 'init', '--quiet');
  },
];

/** What leaves nothing for the clean: edits, deletions and staged additions of tracked paths. */
const HARMLESS: readonly ((dir: string, random: Random, i: number) => Promise<void>)[] = [
  async (dir, random, i) => {
    const files = git(dir, 'ls-files', '-z').split('\0').filter(Boolean);
    const file = files.length > 0 ? random.pick(files) : null;
    if (file) await writeFile(join(dir, file), `edited ${i}\n`).catch(() => undefined);
  },
  async (dir, random) => {
    const files = git(dir, 'ls-files', '-z').split('\0').filter(Boolean);
    const file = files.length > 0 ? random.pick(files) : null;
    if (file) await rm(join(dir, file), { force: true });
  },
  async (dir, random, i) => {
    const path = `${randomPath(random)}-s${i}`;
    await putRandomFile(dir, path, random, 'staged');
    git(dir, 'add', '--', path);
  },
  // setup's kept output
  async (dir) => {
    await mkdir(join(dir, 'node_modules', 'pkg'), { recursive: true });
    await writeFile(join(dir, 'node_modules', 'pkg', 'index.js'), 'kept\n');
  },
];

describe('leftUntracked, held to git clean -n', () => {
  const seeds = Array.from({ length: 24 }, (_, i) => i + 1);
  /** git's answers over the seeds: both must come up often, or the comparison proves little. */
  const answers = { clean: 0, untracked: 0 };
  it.each(seeds)('seed %i', async (seed) => {
    const random = createRandom(seed);
    const dir = join(root, `repo-${seed}`);
    await mkdir(dir);
    git(dir, 'init', '--quiet');
    await writeFile(join(dir, '.gitignore'), 'build/\nnode_modules/\n');
    for (let i = 0; i < 8; i++) await putRandomFile(dir, `${randomPath(random)}-t${i}`, random, 'tracked');
    git(dir, 'add', '-A');
    git(dir, 'commit', '--quiet', '-m', 'base');
    for (let i = 0; i < random.int(3); i++) await random.pick(HARMLESS)(dir, random, i);
    // Half the checkouts get something the clean must remove, each kind of it in turn.
    if (seed % 2 === 0) await (LEFTOVERS[(seed / 2) % LEFTOVERS.length] as Leftover)(dir, random, 99);
    const keep = ['/node_modules/'];
    const kept = gitWouldClean(dir, keep);
    answers[kept === '' ? 'clean' : 'untracked']++;
    expect(leftUntracked(dir, keep), kept).toBe(kept !== '');
    // Nothing kept: setup's output is the clean's too.
    const all = gitWouldClean(dir, []);
    expect(leftUntracked(dir, []), all).toBe(all !== '');
  });

  it('met both answers among the seeds', () => {
    expect(answers.clean).toBeGreaterThanOrEqual(6);
    expect(answers.untracked).toBeGreaterThanOrEqual(6);
  });

  it('answers yes where it cannot tell: an unmerged index, an index of version 4', async () => {
    const dir = join(root, 'unmerged');
    await mkdir(dir);
    git(dir, 'init', '--quiet', '--initial-branch=main');
    await writeFile(join(dir, 'f'), 'base\n');
    git(dir, 'add', 'f');
    git(dir, 'commit', '--quiet', '-m', 'base');
    expect(leftUntracked(dir, [])).toBe(false);
    git(dir, 'checkout', '--quiet', '-b', 'other');
    await writeFile(join(dir, 'f'), 'other\n');
    git(dir, 'commit', '--quiet', '-am', 'other');
    git(dir, 'checkout', '--quiet', 'main');
    await writeFile(join(dir, 'f'), 'main\n');
    git(dir, 'commit', '--quiet', '-am', 'main');
    expect(spawnSync('git', ['merge', 'other'], { cwd: dir }).status).not.toBe(0);
    expect(gitWouldClean(dir, [])).toBe('');
    expect(leftUntracked(dir, [])).toBe(true);

    const v4 = join(root, 'version-4');
    await mkdir(v4);
    git(v4, 'init', '--quiet');
    await writeFile(join(v4, 'f'), 'base\n');
    git(v4, 'add', 'f');
    git(v4, 'commit', '--quiet', '-m', 'base');
    expect(leftUntracked(v4, [])).toBe(false);
    git(v4, 'update-index', '--index-version', '4');
    expect(gitWouldClean(v4, [])).toBe('');
    expect(leftUntracked(v4, [])).toBe(true);
  });
});
