import { CAPABILITIES } from '../../shared/capabilities.js';
import { exitCodeFor, formatProblem } from '../../shared/errors.js';
import type { LoadedAdapters } from '../../workers/agent/adapters/load-adapters.js';
import { type CommandIo, readAdaptersFor } from './read-adapters.js';

export interface AdaptersCheckArgs {
  readonly dir: string;
  readonly json: boolean;
}

/**
 * `flotilla adapters check [DIR]`: what each adapter file gives the dispatcher, which files are
 * skipped and why, and one `file:line: path: message` per problem on stderr (exit 2). With
 * `--json`, stdout holds only `{ dir, adapters, skipped, problems }`.
 */
export async function adaptersCheck(args: AdaptersCheckArgs, io: CommandIo): Promise<number> {
  const loaded = await readAdaptersFor(args.dir, io, (problems) => {
    if (args.json) io.out(JSON.stringify({ dir: args.dir, adapters: [], skipped: [], problems }));
  });
  if (typeof loaded === 'number') return loaded;

  const { adapters, skipped, problems } = loaded;
  for (const problem of problems) io.err(formatProblem(problem));
  if (args.json) {
    io.out(JSON.stringify({ dir: args.dir, adapters: adapters.map(summarize), skipped, problems }));
  } else {
    printText(args.dir, loaded, io);
  }
  return problems.length > 0 ? exitCodeFor('adapter/invalid') : 0;
}

function summarize(adapter: LoadedAdapters['adapters'][number]) {
  const { config } = adapter;
  return {
    cli: adapter.cli,
    displayName: adapter.displayName,
    file: adapter.file,
    delivery: config.prompt_delivery,
    capabilities: [...config.capabilities],
    models: adapter.models,
    maxConcurrent: config.max_concurrent ?? null,
    maxPromptSize: adapter.maxPromptSize ?? null,
    timeoutMs: config.timeout_ms,
  };
}

function printText(dir: string, { adapters, skipped, problems }: LoadedAdapters, io: CommandIo): void {
  io.out(
    `${dir}: ${plural(adapters.length, 'adapter')}, ${skipped.length} skipped, ${plural(problems.length, 'problem')}`,
  );
  for (const adapter of adapters) {
    const { config } = adapter;
    const models = Object.entries(adapter.models).map(([tier, model]) => `${tier}=${model}`);
    const delivery = config.prompt_flag
      ? `${config.prompt_delivery} (${config.prompt_flag})`
      : config.prompt_delivery;
    io.out('');
    io.out(`${adapter.cli} — ${adapter.displayName} (${adapter.file})`);
    io.out(`  delivery:     ${delivery}`);
    io.out(`  capabilities: ${config.capabilities.join(', ')}`);
    io.out(`  models:       ${models.length > 0 ? models.join(', ') : '(CLI default)'}`);
    // New terms are allowed, but a typo would silently open a queue no task is routed to.
    const extra = config.capabilities.filter((term) => !(CAPABILITIES as readonly string[]).includes(term));
    if (extra.length > 0) io.out(`  note: not in the capability vocabulary: ${extra.join(', ')}`);
  }
  if (skipped.length > 0) io.out('');
  for (const file of skipped) io.out(`skipped ${file.file}: ${file.reason}`);
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}
