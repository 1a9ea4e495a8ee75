import type { Dirent } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Adapter } from '../../../shared/adapter.js';
import { FlotillaError, type Problem } from '../../../shared/errors.js';
import { type ParsedAdapterFile, parseAdapterFile } from './parse-adapter-file.js';

/**
 * Reads a folder of adapter files (cli-dispatch Steps 1–3): every `*.md` but `ADAPTER.md`, in file
 * name order, which is also the adapter order that breaks ties in matching. Problems of every file
 * come back together as data; only a folder that cannot be read at all throws.
 */
export interface SkippedAdapterFile {
  readonly file: string;
  readonly reason: string;
}

export interface LoadedAdapters {
  /** Valid adapters with `available: true`, in file order. */
  readonly adapters: Adapter[];
  /** Files that are not adapters, and adapters switched off with `available: false`. */
  readonly skipped: SkippedAdapterFile[];
  readonly problems: Problem[];
}

/** The format's own description, kept beside the adapters in Legion's folder. */
const FORMAT_DESCRIPTION = 'ADAPTER.md';

export const UNAVAILABLE = 'available: false';

export async function loadAdapters(dir: string): Promise<LoadedAdapters> {
  const names = await listAdapterFiles(dir);
  const files = await Promise.all(
    names.map(async (name, order): Promise<{ file: string; parsed: ParsedAdapterFile }> => {
      const file = join(dir, name);
      try {
        return { file, parsed: parseAdapterFile(file, await readFile(file, 'utf8'), order) };
      } catch (error) {
        return { file, parsed: { problems: [{ file, path: '', message: `cannot read: ${reason(error)}` }] } };
      }
    }),
  );

  const adapters: Adapter[] = [];
  const skipped: SkippedAdapterFile[] = [];
  const problems: Problem[] = [];
  const owners = new Map<string, string>();
  for (const { file, parsed } of files) {
    problems.push(...[...parsed.problems].sort((a, b) => (a.line ?? 0) - (b.line ?? 0)));
    if (parsed.skipped) skipped.push({ file, reason: parsed.skipped });
    if (!parsed.cli) continue;
    const owner = owners.get(parsed.cli.name);
    if (owner) {
      problems.push({
        file,
        ...(parsed.cli.line ? { line: parsed.cli.line } : {}),
        path: 'cli',
        message: `'${parsed.cli.name}' is already the cli of ${owner} (expected one file per CLI)`,
      });
      continue;
    }
    owners.set(parsed.cli.name, file);
    if (!parsed.adapter) continue;
    if (parsed.adapter.config.available) adapters.push(parsed.adapter);
    else skipped.push({ file, reason: UNAVAILABLE });
  }
  return { adapters, skipped, problems };
}

/** For a worker host, which must not start with a half-read folder: `adapter/invalid` on any problem. */
export async function loadAdaptersOrThrow(dir: string): Promise<LoadedAdapters> {
  const loaded = await loadAdapters(dir);
  const count = loaded.problems.length;
  if (count > 0) {
    throw new FlotillaError(
      'adapter/invalid',
      `${dir}: invalid adapter files (${count} ${count === 1 ? 'problem' : 'problems'})`,
      loaded.problems,
    );
  }
  return loaded;
}

async function listAdapterFiles(dir: string): Promise<string[]> {
  let entries: Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (error) {
    const code = error instanceof Error && 'code' in error ? error.code : undefined;
    const message =
      code === 'ENOENT'
        ? 'adapter folder not found'
        : code === 'ENOTDIR'
          ? 'not a folder (expected a folder of adapter .md files)'
          : `cannot read the adapter folder: ${reason(error)}`;
    throw new FlotillaError('adapter/invalid', `${dir}: ${message}`, [{ file: dir, path: '', message }]);
  }
  return (
    entries
      .filter((entry) => (entry.isFile() || entry.isSymbolicLink()) && entry.name.endsWith('.md'))
      .map((entry) => entry.name)
      .filter((name) => name !== FORMAT_DESCRIPTION)
      // Code-unit order, not the locale's, so every host ranks the same adapters the same way.
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
  );
}

function reason(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
