/**
 * The checkout's index moved to an attempt's commit: in-process (workspace/index-file.ts) against
 * `git update-index --add --remove --replace` of the same two changed paths, alternating, on
 * indexes of several sizes (a repository of N small files in folders of 100). The wall time of
 * each update, the git process's start included; this decides the size above which the index is
 * left to git (IN_PROCESS_MAX_BYTES). Each size once whole and once split (core.splitIndex, as the
 * warm checkouts of a large tree keep it: the small file over the shared one written; the first
 * in-process update, which reads the shared index, is among the measured).
 */
import { spawnSync } from 'node:child_process';
import { lstat, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeLooseObject } from '../dist/workers/workspace/git-files.js';
import { writeIndexUpdates } from '../dist/workers/workspace/index-file.js';
import { fmt, printTable, summarize } from './lib/util.js';

export const defaults = { sizes: [1_000, 10_000, 40_000], runs: 10 };

function git(cwd, args, input) {
  const done = spawnSync('git', ['-c', 'user.name=b', '-c', 'user.email=b@b', '-c', 'gc.auto=0', ...args], {
    cwd,
    input,
    encoding: 'utf8',
  });
  if (done.status !== 0) throw new Error(`git ${args.join(' ')}: ${done.stderr}`);
  return done.stdout;
}

async function repoOf(dir, files) {
  await mkdir(dir);
  git(dir, ['init', '-q']);
  for (let folder = 0; folder * 100 < files; folder++) {
    await mkdir(join(dir, `d${folder}`));
    for (let i = 0; i < Math.min(100, files - folder * 100); i++) {
      await writeFile(join(dir, `d${folder}`, `f${i}.c`), `file ${folder}/${i}\n`);
    }
  }
  git(dir, ['add', '-A']);
  git(dir, ['commit', '-q', '-m', 'base']);
}

export async function run(options = {}) {
  const sizes = options.sizes ?? defaults.sizes;
  const runs = options.runs ?? defaults.runs;
  const root = await mkdtemp(join(tmpdir(), 'flotilla-bench-index-'));
  const rows = [['entries', 'index', 'in-process ms', 'git update-index ms', 'in-process / git']];
  const forms = options.forms ?? ['whole', 'split'];
  const results = [];
  try {
    for (const size of sizes)
      for (const form of forms) {
        const dir = join(root, `repo-${size}-${form}`);
        await repoOf(dir, size);
        if (form === 'split') git(dir, ['update-index', '--split-index']);
        const ours = [];
        const theirs = [];
        for (let round = 0; round < runs * 2; round++) {
          const folders = Math.ceil(size / 100);
          const paths = [`d${round % folders}/new-${round}.txt`, `d${(round * 7) % folders}/f0.c`];
          const entries = [];
          for (const path of paths) {
            await writeFile(join(dir, path), `round ${round}\n`);
            const seen = await lstat(join(dir, path), { bigint: true });
            const content = await readFile(join(dir, path));
            await writeLooseObject(join(dir, '.git'), 'blob', content);
            entries.push({ path, entry: { mode: '100644', content, seen } });
          }
          const began = performance.now();
          if (round % 2 === 0) {
            if (!(await writeIndexUpdates(dir, entries, Number.POSITIVE_INFINITY)))
              throw new Error('the in-process update declined');
            ours.push(performance.now() - began);
          } else {
            git(
              dir,
              ['update-index', '--add', '--remove', '--replace', '-z', '--stdin'],
              `${paths.join('\0')}\0`,
            );
            theirs.push(performance.now() - began);
          }
        }
        // Both left the same index behind: nothing differs from the files by stat data.
        if (git(dir, ['diff-files', '--name-only']) !== '')
          throw new Error('the index disagrees with the files');
        const bytes = (await stat(join(dir, '.git', 'index'))).size;
        if (form === 'split' && !(await readFile(join(dir, '.git', 'index'))).includes('link'))
          throw new Error('the index is no longer split');
        const a = summarize(ours);
        const b = summarize(theirs);
        rows.push([
          size,
          `${fmt(bytes / 1024 / 1024, 2)} MiB${form === 'split' ? ' split' : ''}`,
          `${fmt(a.median, 1)} (${fmt(a.min, 1)}–${fmt(a.max, 1)})`,
          `${fmt(b.median, 1)} (${fmt(b.min, 1)}–${fmt(b.max, 1)})`,
          fmt(a.median / b.median, 2),
        ]);
        results.push({ entries: size, form, bytes, inProcess: a, git: b });
      }
    printTable(rows);
    return results;
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}
