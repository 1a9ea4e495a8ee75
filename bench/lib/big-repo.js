/**
 * Large repositories for the workspace benchmark, made once and cached between runs under
 * `~/.cache/flotilla-bench` (or `$FLOTILLA_BENCH_CACHE`), as bare repositories:
 *
 *   generated  a seeded synthetic monorepo written with `git fast-import`: 26,000 files in a tree of
 *              packages, then a history of commits that rewrite a few dozen files each, until the
 *              pack holds about 240 MB. The same seed gives the same commits, byte for byte.
 *   linux      Debian's `linux-source` tarball (/usr/src/linux-source-*.tar.xz) imported as one
 *              commit: a real tree of about 80,000 files.
 *
 * A benchmark mission never writes to the cached repository: each run works on a `--bare --local`
 * clone of it (objects hard-linked, so making one costs a second, not a copy of the history).
 */
import { execFile, spawn } from 'node:child_process';
import { createCipheriv, createHash } from 'node:crypto';
import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const exec = promisify(execFile);

/** Bump when the generator's output changes, so an old cache entry is not taken for the new one. */
const GENERATOR_VERSION = 1;

export const GENERATED_DEFAULTS = { seed: 11, files: 26_000, commits: 500, filesPerCommit: 60 };

export function benchCacheDir() {
  return process.env.FLOTILLA_BENCH_CACHE || join(homedir(), '.cache', 'flotilla-bench');
}

async function exists(path) {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

/** A deterministic byte stream: AES-128-CTR over zeros, keyed by the seed. Fast and reproducible. */
function seededStream(seed) {
  const key = createHash('sha256').update(`flotilla-bench-${seed}`).digest().subarray(0, 16);
  const cipher = createCipheriv('aes-128-ctr', key, Buffer.alloc(16));
  return (bytes) => cipher.update(Buffer.alloc(bytes));
}

/** Text-like file content (base64 lines of 76 characters): no NUL, so git treats it as text. */
function content(random, bytes) {
  const raw = random(Math.ceil((bytes * 3) / 4)).toString('base64');
  const lines = [];
  for (let i = 0; i < raw.length; i += 76) lines.push(raw.slice(i, i + 76));
  return `${lines.join('\n')}\n`;
}

function filePath(index) {
  const pkg = String(index % 40).padStart(2, '0');
  const mod = String(Math.floor(index / 40) % 65).padStart(2, '0');
  return `packages/pkg-${pkg}/src/mod-${mod}/file-${String(index).padStart(5, '0')}.ts`;
}

/** Writes the fast-import stream for the generated repository into `stdin`, with backpressure. */
async function writeStream(stdin, { seed, files, commits, filesPerCommit }) {
  const random = seededStream(seed);
  const pick = seededStream(seed + 1_000_003);
  // A failing fast-import surfaces through its exit code; here only the pipe's backpressure matters.
  const write = (chunk) =>
    stdin.write(chunk) ? undefined : new Promise((done) => stdin.once('drain', done));
  const blob = async (path, text) => {
    const body = Buffer.from(text);
    await write(`M 100644 inline ${path}\ndata ${body.length}\n`);
    await write(body);
    await write('\n');
  };
  const commit = async (n, message) => {
    // Fixed dates, so the same seed always gives the same commit ids.
    const when = 1_700_000_000 + n * 60;
    await write(
      `commit refs/heads/main\ncommitter Bench <bench@flotilla.invalid> ${when} +0000\ndata ${Buffer.byteLength(message)}\n${message}\n`,
    );
  };
  await commit(0, 'initial tree');
  await blob('README.md', '# generated benchmark monorepo\n');
  await blob('.gitignore', 'node_modules/\ndist/\n');
  for (let i = 0; i < files; i++) {
    // 1–4 KB per file.
    const size = 1024 + (pick(2).readUInt16LE(0) % 3072);
    await blob(filePath(i), content(random, size));
  }
  for (let c = 1; c <= commits; c++) {
    await commit(c, `change ${c}`);
    for (let k = 0; k < filesPerCommit; k++) {
      const index = pick(4).readUInt32LE(0) % files;
      await blob(filePath(index), content(random, 8192));
    }
  }
  await write('done\n');
  stdin.end();
}

async function fastImport(dir, options) {
  await exec('git', ['init', '--quiet', '--bare', '--initial-branch=main', dir]);
  const child = spawn('git', ['fast-import', '--quiet', '--done'], {
    cwd: dir,
    stdio: ['pipe', 'inherit', 'inherit'],
  });
  const exited = new Promise((done, fail) => {
    child.on('error', fail);
    child.on('exit', (code) => (code === 0 ? done() : fail(new Error(`git fast-import exited ${code}`))));
  });
  await writeStream(child.stdin, options);
  await exited;
}

/** Makes `dir` by `make(temporary)` unless it exists; a crash never leaves a half repository in place. */
async function cached(dir, make) {
  if (await exists(join(dir, 'HEAD'))) return dir;
  await mkdir(join(dir, '..'), { recursive: true });
  const temporary = `${dir}.tmp-${process.pid}`;
  await rm(temporary, { recursive: true, force: true });
  await make(temporary);
  await rename(temporary, dir);
  return dir;
}

/** The generated repository (bare), made on first use; returns its path. */
export async function generatedRepo(options = {}, log = console.log) {
  const opts = { ...GENERATED_DEFAULTS, ...options };
  const name = `generated-v${GENERATOR_VERSION}-s${opts.seed}-f${opts.files}-c${opts.commits}x${opts.filesPerCommit}.git`;
  return cached(join(benchCacheDir(), name), async (dir) => {
    log(`  generating ${name} (once; cached in ${benchCacheDir()}) …`);
    const began = performance.now();
    await fastImport(dir, opts);
    log(`  generated in ${((performance.now() - began) / 1000).toFixed(0)} s`);
  });
}

/**
 * Debian's linux-source tarball imported as one commit, plus a second that drops the stanza Debian
 * appends to the top-level .gitignore ("ignore everything at the top level" but debian/, for its
 * packaging repository): with it, every file a task adds would be ignored, never committed. The
 * tree then behaves like the kernel's own repository.
 */
export async function linuxRepo(log = console.log) {
  const imported = await importedLinuxRepo(log);
  return cached(imported.replace(/\.git$/, '-upstream-ignores.git'), async (dir) => {
    await exec('git', ['clone', '--quiet', '--bare', '--local', imported, dir]);
    const git = (args, input) =>
      new Promise((done, fail) => {
        const child = execFile(
          'git',
          [`--git-dir=${dir}`, ...args],
          { maxBuffer: 1 << 26, env: BENCH_IDENTITY },
          (error, stdout) => (error ? fail(error) : done(stdout.trim())),
        );
        if (input !== undefined) child.stdin.end(input);
      });
    const ignore = await git(['show', 'HEAD:.gitignore']);
    const cut = ignore.indexOf('#\n# Debian packaging');
    const blob = await git(['hash-object', '-w', '--stdin'], `${cut >= 0 ? ignore.slice(0, cut) : ignore}\n`);
    const index = join(dir, 'bench-index');
    const withIndex = (args, input) =>
      new Promise((done, fail) => {
        const child = execFile(
          'git',
          [`--git-dir=${dir}`, ...args],
          { maxBuffer: 1 << 26, env: { ...BENCH_IDENTITY, GIT_INDEX_FILE: index } },
          (error, stdout) => (error ? fail(error) : done(stdout.trim())),
        );
        if (input !== undefined) child.stdin.end(input);
      });
    await withIndex(['read-tree', 'HEAD']);
    await withIndex(['update-index', '--cacheinfo', `100644,${blob},.gitignore`]);
    const tree = await withIndex(['write-tree']);
    await rm(index, { force: true });
    const commit = await git([
      'commit-tree',
      tree,
      '-p',
      'HEAD',
      '-m',
      "bench: the kernel's own .gitignore (without Debian's packaging stanza)",
    ]);
    await git(['update-ref', 'refs/heads/main', commit]);
  });
}

const BENCH_IDENTITY = {
  ...process.env,
  GIT_AUTHOR_NAME: 'Bench',
  GIT_AUTHOR_EMAIL: 'bench@flotilla.invalid',
  GIT_COMMITTER_NAME: 'Bench',
  GIT_COMMITTER_EMAIL: 'bench@flotilla.invalid',
  GIT_AUTHOR_DATE: '1700000000 +0000',
  GIT_COMMITTER_DATE: '1700000000 +0000',
};

/** The tarball as shipped, imported as one commit (bare), made on first use. */
async function importedLinuxRepo(log) {
  const tarball = (await readdir('/usr/src').catch(() => [])).find((f) =>
    /^linux-source-.*\.tar\.xz$/.test(f),
  );
  if (!tarball) {
    throw new Error(
      'no /usr/src/linux-source-*.tar.xz: run `apt-get update && apt-get install -y linux-source`',
    );
  }
  const name = `${tarball.replace(/\.tar\.xz$/, '')}.git`;
  return cached(join(benchCacheDir(), name), async (dir) => {
    log(`  importing /usr/src/${tarball} into git (once; cached in ${benchCacheDir()}) …`);
    const began = performance.now();
    const tree = `${dir}-tree`;
    await rm(tree, { recursive: true, force: true });
    await mkdir(tree, { recursive: true });
    await exec('tar', ['-xJf', join('/usr/src', tarball), '-C', tree, '--strip-components=1'], {
      maxBuffer: 1 << 26,
    });
    await exec('git', ['init', '--quiet', '--bare', '--initial-branch=main', dir]);
    const git = (args) =>
      exec('git', [`--git-dir=${dir}`, `--work-tree=${tree}`, ...args], {
        maxBuffer: 1 << 26,
        env: {
          ...process.env,
          GIT_AUTHOR_NAME: 'Bench',
          GIT_AUTHOR_EMAIL: 'bench@flotilla.invalid',
          GIT_COMMITTER_NAME: 'Bench',
          GIT_COMMITTER_EMAIL: 'bench@flotilla.invalid',
          GIT_AUTHOR_DATE: '1700000000 +0000',
          GIT_COMMITTER_DATE: '1700000000 +0000',
        },
      });
    // The tarball's own .gitignore files would drop tracked sources; import everything as shipped.
    await git(['-c', 'core.excludesFile=/dev/null', 'add', '-A', '--force', '.']);
    await git(['commit', '--quiet', '--no-verify', '-m', `import ${tarball}`]);
    await git(['repack', '-a', '-d', '--quiet']);
    await rm(tree, { recursive: true, force: true });
    log(`  imported in ${((performance.now() - began) / 1000).toFixed(0)} s`);
  });
}

/** Tracked files and packed size of a repository, for the report. */
export async function repoStats(dir) {
  const { stdout: files } = await exec('git', ['--git-dir', dir, 'ls-tree', '-r', '--name-only', 'HEAD'], {
    maxBuffer: 1 << 28,
  });
  const { stdout: counts } = await exec('git', ['--git-dir', dir, 'count-objects', '-v']);
  const kib = (key) => Number(new RegExp(`^${key}: (\\d+)`, 'm').exec(counts)?.[1] ?? 0);
  const { stdout: commits } = await exec('git', ['--git-dir', dir, 'rev-list', '--count', 'HEAD']);
  return {
    files: files.split('\n').filter(Boolean).length,
    mib: (kib('size-pack') + kib('size')) / 1024,
    commits: Number(commits.trim()),
  };
}

/** A throw-away copy of a cached repository for one benchmark run: bare, objects hard-linked. */
export async function scratchClone(source, dir) {
  await exec('git', ['clone', '--quiet', '--bare', '--local', source, dir]);
  return dir;
}
