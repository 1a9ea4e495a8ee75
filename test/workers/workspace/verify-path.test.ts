/**
 * The path gate (src/workers/workspace/verify-path.ts) held to git itself: for every row, adversarial
 * (`.git` in every case and spelling, HFS+'s ignored code points inside it, NTFS short names and
 * trailing dots and spaces, `..`, `.`, empty parts, backslashes, `.gitmodules` as a link, bytes
 * that are not UTF-8) and seeded random names built from the same pieces, `git update-index`
 * on a scratch repository with protectNTFS and protectHFS on (git's defaults on macOS) takes the
 * path into its index exactly when the gate does.
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeRefusal, pathRefusal, verifyPath } from '../../../src/workers/workspace/verify-path.js';
import { createRandom } from '../../helpers/random.js';

interface Row {
  readonly path: Buffer;
  readonly mode: '100644' | '100755' | '120000';
}

const file = (path: string | Buffer, mode: Row['mode'] = '100644'): Row => ({
  path: typeof path === 'string' ? Buffer.from(path, 'utf8') : path,
  mode,
});
const link = (path: string | Buffer): Row => file(path, '120000');
const bytes = (...parts: (string | number[])[]) =>
  Buffer.concat(
    parts.map((part) => (typeof part === 'string' ? Buffer.from(part, 'utf8') : Buffer.from(part))),
  );

/** Rows chosen by hand: each of git's checks, and the names just beside each. */
const ADVERSARIAL: readonly Row[] = [
  ...[
    '.GIT/hooks/post-checkout',
    'GIT~1/config',
    'sub/.Git/config',
    '.git',
    '.git/config',
    'a/.git',
    '.gIt/x',
    'git~1',
    'Git~1/x',
    'git~2/x',
    'git~10',
    '.git.',
    '.git./x',
    '.git . ./x',
    '.git ',
    '.git::$INDEX_ALLOCATION/x',
    '.git:stream',
    'git~1.',
    'git~1 /x',
    '.gitx',
    '.git-x',
    'x.git',
    '.gi',
    '.g',
    '..',
    '../x',
    'a/../b',
    'a/..',
    '.',
    './x',
    'a/./b',
    'a/.',
    '...',
    '..x',
    '.x',
    '',
    '/x',
    'a//b',
    'a/',
    'x/',
    'a\\.git',
    'a\\.git\\config',
    '\\.git',
    'a\\\\.git',
    'a\\git~1',
    'a\\b',
    '.git\\x',
    'git~1\\x',
    'a\\..\\b',
    '\u200c.git/x',
    '.\u200cgit/x',
    '.g\u200dit',
    '.gi\u200et/hooks',
    '.git\u200f',
    '.g\u202ait',
    '.g\u206fit',
    '.\ufeffGIT/config',
    '.g\u200bit',
    '.gït',
    '.GİT',
    'é/.git',
    '.gitmodules',
    'a/.gitmodules',
  ].map((path) => file(path)),
  ...[
    '.gitmodules',
    'a/.gitmodules',
    '.GITMODULES',
    '.gitmodules.',
    '.gitmodules ',
    '.gitmodules:x',
    '.gitmodules/x',
    '.gitmodulesx',
    'gitmod~1',
    'GITMOD~4',
    'gitmod~5',
    'gi7eba~1',
    'gi7eba~9',
    'gi7eb~12',
    'gi7e~123',
    'gi7eba~10',
    'gi7ebb~1',
    'a\\.gitmodules',
    'a\\gitmod~1',
    '.gitmo\u200cdules',
    '.\u200cgitmodules',
    'x/.gitmodules.. .',
    '.gitattributes',
    '.gitignore',
    'normal-link',
  ].map(link),
  file('.gitmodules', '100755'),
  // Not UTF-8: git compares bytes, and HFS+'s reading stops at the first bad one.
  file(bytes('.git', [0xff])),
  file(bytes('.git', [0xc3])),
  file(bytes('.', [0xff], 'git')),
  file(bytes([0xff], '.git')),
  file(bytes('a/.gi', [0xe2, 0x80, 0x8c], 't')),
  file(bytes('.g', [0xed, 0xa0, 0x80], 'it')),
  file(bytes('.g', [0xc0, 0xaf], 'it')),
  file(bytes('.g', [0xe0, 0x80, 0x80], 'it')),
  file(bytes('.g', [0xef, 0xbf, 0xbe], 'it')),
  file(bytes('.g', [0xf4, 0x90, 0x80, 0x80], 'it')),
  file(bytes('.git', [0xf0, 0x80, 0x80, 0x80])),
  file(bytes('.git', [0xe2, 0x80, 0x8c])),
  file(bytes('.git', [0xef, 0xbb, 0xbf], '/x')),
  file(bytes('x', [0xfe, 0xff])),
];

/** Pieces the random names are made of: the characters git's checks look at, and plain ones. */
const PIECES = [
  '.',
  '..',
  '.git',
  '.GIT',
  '.Git',
  'git',
  'GIT',
  'git~1',
  'gitmod~1',
  'gi7eba~2',
  '.gitmodules',
  'modules',
  '~',
  '1',
  '4',
  ' ',
  ':',
  '/',
  '/',
  '\\',
  'a',
  'b',
  'x',
  'é',
  '\u200c',
  '\u200d',
  '\ufeff',
  '\u202e',
  '\u200b',
] as const;
const BAD_BYTES = [[0xff], [0xc3], [0xe2, 0x80], [0xed, 0xa0, 0x80]] as const;

function randomRows(seed: number, count: number): Row[] {
  const random = createRandom(seed);
  const rows: Row[] = [];
  for (let n = 0; n < count; n++) {
    const parts: Buffer[] = [];
    const length = 1 + random.int(6);
    for (let k = 0; k < length; k++) {
      parts.push(
        random.chance(0.05) ? Buffer.from(random.pick(BAD_BYTES)) : Buffer.from(random.pick(PIECES), 'utf8'),
      );
    }
    rows.push({ path: Buffer.concat(parts), mode: random.chance(0.3) ? '120000' : '100644' });
  }
  return rows;
}

const SEEDS = [1, 2, 3, 4, 5];
const ROWS: readonly Row[] = [...ADVERSARIAL, ...SEEDS.flatMap((seed) => randomRows(seed, 120))];

let repo: string;
let blob: string;

beforeAll(async () => {
  repo = await mkdtemp(join(tmpdir(), 'flotilla-verify-path-'));
  const run = (args: string[], input?: Buffer) => spawnSync('git', args, { cwd: repo, input });
  run(['init', '--quiet']);
  blob = run(['hash-object', '-w', '--stdin'], Buffer.from('x\n')).stdout.toString().trim();
});
afterAll(async () => {
  await rm(repo, { recursive: true, force: true });
});

/**
 * git's answer for one row: `update-index --index-info -z` into an index of its own (raw bytes on
 * stdin, so names that are not UTF-8 reach git as they are), which runs the same verify_path() as
 * `--cacheinfo` and says "Ignoring path" for a path it refuses.
 */
function gitTakes(row: Row, index: number, config: readonly string[]): boolean {
  const input = Buffer.concat([Buffer.from(`${row.mode} ${blob}\t`), row.path, Buffer.from([0])]);
  const ran = spawnSync('git', [...config, 'update-index', '-z', '--index-info'], {
    cwd: repo,
    input,
    env: { ...process.env, GIT_INDEX_FILE: join(repo, `.git/index-${index}`) },
  });
  if (ran.status !== 0) throw new Error(`git update-index failed: ${ran.stderr.toString()}`);
  return !ran.stderr.toString().includes('Ignoring path');
}

const MACOS_DEFAULTS = ['-c', 'core.protectNTFS=true', '-c', 'core.protectHFS=true'];

describe('the path gate', () => {
  it(`agrees with git update-index on every row (${ROWS.length} rows: adversarial and seeded random)`, () => {
    const disagreements: string[] = [];
    let refused = 0;
    ROWS.forEach((row, index) => {
      const git = gitTakes(row, index, MACOS_DEFAULTS);
      const gate = verifyPath(row.path, row.mode);
      if (!git) refused++;
      if (git !== gate) {
        disagreements.push(
          `${JSON.stringify(row.path.toString('latin1'))} ${row.mode}: git ${git ? 'takes' : 'refuses'} it, the gate ${gate ? 'takes' : `refuses it (${pathRefusal(row.path, row.mode)})`}`,
        );
      }
    });
    expect(disagreements).toEqual([]);
    // Both answers are well represented, so agreement is not a table of one kind.
    expect(refused).toBeGreaterThan(ROWS.length / 5);
    expect(ROWS.length - refused).toBeGreaterThan(ROWS.length / 5);
  });

  it('refuses the names an agent can plant a hook with, and says why', () => {
    expect(pathRefusal('.GIT/hooks/post-checkout')).toBe('dotgit');
    expect(pathRefusal('GIT~1/config')).toBe('ntfs-dotgit');
    expect(pathRefusal('sub/.Git/config')).toBe('dotgit');
    expect(pathRefusal('.g\u200cit/config')).toBe('hfs-dotgit');
    expect(pathRefusal('.gitmodules', '120000')).toBe('gitmodules-link');
    expect(pathRefusal('a/../b')).toBe('dot-component');
    expect(pathRefusal('a//b')).toBe('empty-component');
    expect(pathRefusal('src/main.ts')).toBeNull();
    expect(describeRefusal('.GIT/hooks/post-checkout', 'dotgit')).toBe(
      '`.GIT/hooks/post-checkout`: git refuses this path (a part of it is `.git`, in upper or lower case)',
    );
  });

  it('is stricter than git on Linux only where macOS git is: HFS+ spellings', () => {
    // git here leaves protectHFS off; the gate keeps macOS's default, where reviewers check out.
    const hfs = file('.g\u200cit/config');
    expect(gitTakes(hfs, 100_000, [])).toBe(true);
    expect(gitTakes(hfs, 100_001, MACOS_DEFAULTS)).toBe(false);
    expect(verifyPath(hfs.path)).toBe(false);
  });
});
