import { lstat, mkdir, realpath, writeFile } from 'node:fs/promises';
import { dirname, isAbsolute, relative, resolve, sep } from 'node:path';
import type { SimIo } from './execute.js';
import { takeRateLimit } from './rate-limit-state.js';

/** The real effects of flotilla-sim: files inside its working directory, programs without a shell. */

export class SimPathError extends Error {}

/** What a `run` step keeps of each of its program's streams: its findings quote the last lines. */
const KEPT_OUTPUT_CHARS = 64 * 1024;

/** Where `print` writes: the process's own streams, whose `write` says false while the reader is behind. */
export interface SimOutput {
  write(chunk: string | Uint8Array): unknown;
  once?(event: 'drain', listener: () => void): unknown;
}

export function createSimIo(options: {
  cwd: string;
  stateDir: string;
  stateKey: string;
  out: { readonly stdout: SimOutput; readonly stderr: SimOutput };
}): SimIo {
  const { cwd } = options;
  return {
    async writeFile(path, content, append) {
      const target = await resolveInside(cwd, path);
      await mkdir(dirname(target.absolute), { recursive: true });
      await assertRealInside(cwd, target.absolute);
      await writeFile(target.absolute, content, { flag: append ? 'a' : 'w' });
      return target.relative;
    },
    run: (argv, timeoutMs) => runProgram(cwd, argv, timeoutMs),
    sleep: (ms) => new Promise((done) => setTimeout(done, ms)),
    uptimeMs: () => performance.now(),
    takeRateLimit: (times) => takeRateLimit(options.stateDir, options.stateKey, times),
    async print(stream, data) {
      const out = options.out[stream];
      if (out.write(data) === false && out.once) await new Promise<void>((done) => out.once?.('drain', done));
    },
  };
}

/**
 * A path from the prompt, resolved against the working directory. Anything that would land outside
 * it, or inside `.git`, is refused: the sim is a test double and must not be a way to touch the host.
 */
export async function resolveInside(
  cwd: string,
  path: string,
): Promise<{ absolute: string; relative: string }> {
  const absolute = resolve(cwd, path);
  const rel = relative(cwd, absolute);
  if (rel === '' || isOutside(rel)) {
    throw new SimPathError(`refusing to write '${path}': it is outside the working directory`);
  }
  if (rel.split(sep).includes('.git'))
    throw new SimPathError(`refusing to write '${path}': it is inside .git`);
  return { absolute, relative: rel.split(sep).join('/') };
}

async function assertRealInside(cwd: string, absolute: string): Promise<void> {
  const root = await realpath(cwd);
  const parent = await realpath(dirname(absolute));
  const rel = relative(root, parent);
  if (isOutside(rel)) {
    throw new SimPathError(
      `refusing to write '${absolute}': a symbolic link leads outside the working directory`,
    );
  }
  const existing = await lstat(absolute).catch(() => undefined);
  if (existing?.isSymbolicLink())
    throw new SimPathError(`refusing to write '${absolute}': it is a symbolic link`);
}

function isOutside(rel: string): boolean {
  return rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel);
}

async function runProgram(
  cwd: string,
  argv: readonly string[],
  timeoutMs: number,
): Promise<{ exitCode: number | null; output: string; error?: string }> {
  const [file, ...args] = argv;
  // Loaded here, not at the top: most runs have no `run` step, and every run pays for a module it loads.
  const { spawn } = await import('node:child_process');
  return new Promise((done) => {
    // Read as it comes and only the end kept (the result quotes the last lines): a program that
    // prints a lot, a verbose test run, is judged by its exit code and not cut off past a buffer.
    const out = { stdout: '', stderr: '' };
    const keep = (stream: 'stdout' | 'stderr') => (chunk: Buffer) => {
      const text = out[stream] + chunk.toString('utf8');
      out[stream] = text.length > 2 * KEPT_OUTPUT_CHARS ? text.slice(-KEPT_OUTPUT_CHARS) : text;
    };
    const child = spawn(file ?? '', args, { cwd, shell: false });
    child.stdout.on('data', keep('stdout'));
    child.stderr.on('data', keep('stderr'));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGTERM');
    }, timeoutMs);
    const output = () => `${out.stdout}${out.stderr}`;
    child.on('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      if (error.code === 'ENOENT')
        done({ exitCode: null, output: output(), error: `'${file}' was not found` });
      else done({ exitCode: null, output: output(), error: error.message });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (timedOut)
        done({ exitCode: null, output: output(), error: `timed out after ${timeoutMs}ms (${signal})` });
      else if (code !== null) done({ exitCode: code, output: output() });
      else done({ exitCode: null, output: output(), error: `${argv.join(' ')} was killed by ${signal}` });
    });
  });
}
