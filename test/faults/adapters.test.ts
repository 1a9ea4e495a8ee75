import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { adaptersCheck } from '../../src/cli/commands/adapters-check.js';
import { ROOT } from '../helpers/paths.js';
import { createRandom, type Random } from '../helpers/random.js';

/**
 * Malformed input at the edges a user touches: a few hundred adapter files from a seeded generator
 * go through `adaptersCheck` (the function behind `flotilla adapters check`), and a sample of them,
 * plus generated malformed missions, through the real CLI process. Every one must be rejected with
 * exit 2 and a message naming the file, and nothing may crash or print a stack trace. A failing
 * case's name carries its number and mutations, so the same seed reproduces it.
 * (test/unit/fuzz-inputs.test.ts fuzzes the mission loader itself; here only the CLI level.)
 */
const SEED = 0xada_97e5;
const ADAPTER_CASES = 320;
const CLI_SAMPLE = 20;
const MISSION_CASES = 20;
const BIN = join(ROOT, 'bin', 'flotilla.js');

type Value = string | number | boolean | null | Value[] | { [key: string]: Value };
type Config = Record<string, Value>;

function baseConfig(random: Random): Config {
  const delivery = random.pick(['file_path', 'stdin_pipe', 'content_flag'] as const);
  const config: Config = {
    available: true,
    capabilities: random.pick([['code_implementation'], ['code_review', 'testing'], ['documentation']]),
    detection_command: 'fuzz-cli --version',
    invoke_command: 'fuzz-cli',
    invoke_flags: random.pick([['--json'], '--model {model} --json', []]),
    prompt_delivery: delivery,
    result_path: '.planning/dispatch/{task-id}-RESULT.md',
    timeout_ms: 600000,
  };
  if (delivery !== 'stdin_pipe') config.prompt_flag = random.pick(['--prompt-file', '-p']);
  if (random.chance(0.3)) config.max_concurrent = 2;
  if (random.chance(0.3)) config.model_execution = 'fuzz-medium';
  return config;
}

/** Wrong values per required or typed key; every one of them is rejected by the schema. */
const WRONG: Record<string, readonly Value[]> = {
  available: ['yes', 1, null, ['true']],
  capabilities: ['code_implementation', [], [1], [''], { a: 1 }, null],
  detection_command: ['', 42, [], null],
  invoke_command: ['', null, 7, { cmd: 'x' }],
  invoke_flags: [42, { a: 1 }, [1, 2], true],
  prompt_delivery: ['telepathy', 3, '', null, ['file_path']],
  result_path: ['out.md', 42, '', '{task_id}.md', null],
  timeout_ms: [-1, 0, 1.5, '60s', null, []],
  max_concurrent: [0, -3, '4', 2.5],
  max_prompt_size: [0, -10, 'big'],
  usage_format: ['xml', 3],
  env: ['A=1', { A: 1 }, ['A']],
  internal: ['true', 1],
  rate_limit_patterns: ['429', 429, [1]],
  auth_error_patterns: [true, [null]],
  cooldown_ms: [-1, 0, 'soon'],
  prerequisites: ['git', 5],
};
const REQUIRED = [
  'available',
  'capabilities',
  'detection_command',
  'invoke_command',
  'prompt_delivery',
  'result_path',
  'timeout_ms',
];

interface Draft {
  front: Record<string, Value> | string | null;
  config: Config;
  /** Replaces the serialised yaml block when set. */
  block?: string;
  fenceInfo: string;
  closeFence: boolean;
  closeFront: boolean;
  fileName: string;
  /** A second, valid file claiming the same cli. */
  duplicate: boolean;
}

type Mutation = { name: string; apply: (random: Random, draft: Draft) => void };

const MUTATIONS: Mutation[] = [
  {
    name: 'missing-required',
    apply: (random, draft) => {
      delete draft.config[random.pick(REQUIRED)];
    },
  },
  {
    name: 'wrong-value',
    apply: (random, draft) => {
      const key = random.pick(Object.keys(WRONG));
      draft.config[key] = random.pick(WRONG[key]!);
    },
  },
  {
    name: 'flag-missing',
    apply: (random, draft) => {
      draft.config.prompt_delivery = random.pick(['file_path', 'content_flag']);
      if (random.chance(0.5)) delete draft.config.prompt_flag;
      else draft.config.prompt_flag = random.pick(['', null]);
    },
  },
  {
    name: 'broken-yaml',
    apply: (random, draft) => {
      draft.block = random.pick([
        'available: true\ncapabilities: [code_implementation, testing\ntimeout_ms: 5',
        'available: true\n\tcapabilities: [x]',
        'available: true\navailable: false\ncapabilities: [x]',
        'capabilities: {a: 1\ninvoke_command: x',
        ': : :\n- - -',
        'prompt_delivery: "file_path\ntimeout_ms: 10',
        'a: &x 1\nb: *y',
        `available: true\n${'  '.repeat(3)}bad-indent: 1\n capabilities: [x]`,
      ]);
    },
  },
  {
    name: 'not-a-mapping',
    apply: (random, draft) => {
      draft.block = random.pick([
        '- available: true\n- capabilities: [x]',
        '42',
        '"just a string"',
        '',
        '~',
        '[]',
      ]);
    },
  },
  {
    name: 'unclosed-fence',
    apply: (_random, draft) => {
      draft.closeFence = false;
    },
  },
  {
    name: 'no-yaml-block',
    apply: (random, draft) => {
      draft.fenceInfo = random.pick(['json', 'text', '', 'yaml-ish', 'toml']);
    },
  },
  {
    name: 'front-matter-unclosed',
    apply: (_random, draft) => {
      draft.front ??= { cli: 'fuzz-cli' };
      draft.closeFront = false;
    },
  },
  {
    name: 'front-matter-broken',
    apply: (random, draft) => {
      draft.front = random.pick([
        'cli: [fuzz',
        'cli: "unterminated',
        '- a list\n- not a mapping',
        'cli: fuzz\ncli: twice',
        'max_prompt_size: {a: 1',
      ]);
    },
  },
  {
    name: 'front-matter-wrong',
    apply: (random, draft) => {
      draft.front = random.pick<Record<string, Value>>([
        { cli: 'has space' },
        { cli: 42 },
        { cli: 'a:b' },
        { cli: '' },
        { cli: '-leading-dash' },
        { cli: 'fuzz', cli_display_name: '' },
        { cli: 'fuzz', max_prompt_size: -1 },
        { cli: 'fuzz', max_prompt_size: 'huge' },
      ]);
    },
  },
  {
    name: 'bad-file-name',
    apply: (random, draft) => {
      draft.front = null;
      draft.fileName = random.pick([
        'has space.md',
        'a:b.md',
        'semi;colon.md',
        '$(touch x).md',
        '-dash.md',
        'ü.md',
      ]);
    },
  },
  {
    name: 'duplicate-cli',
    apply: (_random, draft) => {
      draft.duplicate = true;
    },
  },
];

function render(draft: Draft): string {
  const lines: string[] = [];
  if (draft.front !== null) {
    lines.push('---');
    lines.push((typeof draft.front === 'string' ? draft.front : stringify(draft.front)).trimEnd());
    if (draft.closeFront) lines.push('---');
  }
  lines.push(
    '',
    '# Fuzz CLI Adapter',
    '',
    'Generated by the adapter fuzz test.',
    '',
    '## Dispatch Configuration',
    '',
  );
  lines.push(`\`\`\`${draft.fenceInfo}`);
  lines.push((draft.block ?? stringify(draft.config)).trimEnd());
  if (draft.closeFence) lines.push('```');
  lines.push('');
  return lines.join('\n');
}

interface AdapterCase {
  readonly name: string;
  readonly dir: string;
  /** The file whose problem must be named. */
  readonly file: string;
}

async function writeAdapterCases(root: string): Promise<AdapterCase[]> {
  const random = createRandom(SEED);
  const cases: AdapterCase[] = [];
  for (let i = 0; i < ADAPTER_CASES; i++) {
    const draft: Draft = {
      front: { cli: 'fuzz-cli', cli_display_name: 'Fuzz CLI' },
      config: baseConfig(random),
      fenceInfo: 'yaml',
      closeFence: true,
      closeFront: true,
      fileName: 'fuzz-cli.md',
      duplicate: false,
    };
    const applied = Array.from({ length: 1 + random.int(3) }, () => random.pick(MUTATIONS));
    for (const mutation of applied) mutation.apply(random, draft);
    const dir = join(root, `case-${String(i).padStart(3, '0')}`);
    await mkdir(dir);
    const file = join(dir, draft.fileName);
    await writeFile(file, render(draft));
    if (draft.duplicate) {
      // A valid file sorting after this one claims the same CLI name; the later file is reported.
      const twin: Draft = {
        ...draft,
        config: baseConfig(random),
        block: undefined,
        fenceInfo: 'yaml',
        closeFence: true,
        closeFront: true,
      };
      twin.front =
        typeof draft.front === 'object' && draft.front !== null && typeof draft.front.cli === 'string'
          ? draft.front
          : { cli: 'fuzz-cli' };
      await writeFile(join(dir, 'zz-twin.md'), render(twin));
    }
    cases.push({ name: `#${i} ${applied.map((m) => m.name).join('+')}`, dir, file });
  }
  return cases;
}

/** What a stack trace looks like in output: `    at fn (file:line:col)` frames or an uncaught error's name. */
const STACK_TRACE =
  /^\s+at .+[:(]\d+:\d+\)?$|^(Type|Reference|Syntax|Range)Error\b|FlotillaError|node:internal/m;

/**
 * A budget per `bin/flotilla.js` start, not a target: one start is about a second here, but on a
 * shared 2-core machine under a load of 40 it took over 6 s, and 20 of them in a row ran past the
 * suite's 120 s default.
 */
const PER_CLI_START_MS = 30_000;

function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { env: { ...process.env, LOG_LEVEL: 'silent' }, timeout: 60_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        done({ code, stdout, stderr });
      },
    );
  });
}

/** Any problem line may name either file of a duplicate pair; otherwise the case's own file. */
function namesFile(output: string, c: AdapterCase): boolean {
  return output.includes(c.file) || output.includes(join(c.dir, 'zz-twin.md'));
}

describe('malformed adapter files', () => {
  let root: string;
  let cases: AdapterCase[];

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'flotilla-fault-adapters-'));
    cases = await writeAdapterCases(root);
  });
  afterAll(async () => {
    if (root) await rm(root, { recursive: true, force: true });
  });

  it(`rejects all ${ADAPTER_CASES} generated files with exit 2 and a message naming the file`, async () => {
    const failures: string[] = [];
    for (const c of cases) {
      const out: string[] = [];
      const err: string[] = [];
      let code: number;
      try {
        code = await adaptersCheck(
          { dir: c.dir, json: false },
          { out: (l) => out.push(l), err: (l) => err.push(l) },
        );
      } catch (error) {
        failures.push(`${c.name}: threw ${(error as Error).stack ?? String(error)}`);
        continue;
      }
      const stderr = err.join('\n');
      if (code !== 2) failures.push(`${c.name}: exit ${code}, expected 2\n${stderr}\n${out.join('\n')}`);
      else if (!namesFile(stderr, c)) failures.push(`${c.name}: no problem names the file\n${stderr}`);
      else if (STACK_TRACE.test(`${stderr}\n${out.join('\n')}`))
        failures.push(`${c.name}: stack trace\n${stderr}`);
    }
    expect(failures).toEqual([]);
  });

  it(
    `rejects a sample of ${CLI_SAMPLE} of them through the real CLI: exit 2, the file named, no stack trace`,
    async () => {
      const random = createRandom(SEED ^ 0x5a5a);
      const sample = new Set<AdapterCase>();
      while (sample.size < CLI_SAMPLE) sample.add(random.pick(cases));
      const failures: string[] = [];
      for (const c of sample) {
        const { code, stdout, stderr } = await cli(['adapters', 'check', c.dir]);
        if (code !== 2) failures.push(`${c.name}: exit ${code}, expected 2\n${stderr}`);
        else if (!namesFile(stderr, c)) failures.push(`${c.name}: no problem names the file\n${stderr}`);
        else if (STACK_TRACE.test(`${stdout}\n${stderr}`)) failures.push(`${c.name}: stack trace\n${stderr}`);
      }
      expect(failures).toEqual([]);
    },
    CLI_SAMPLE * PER_CLI_START_MS,
  );
});

/** Generated malformed missions, each a different kind of mistake, through `flotilla validate`. */
function malformedMissions(random: Random): { name: string; content: string | Buffer }[] {
  const task = (id: string, extra: Record<string, unknown> = {}) => ({
    id,
    title: `Task ${id}`,
    exit_criteria: ['test -f done.txt'],
    ...extra,
  });
  const mission = (tasks: unknown[], extra: Record<string, unknown> = {}) => ({
    goal: 'fuzz',
    workspace: '.',
    tasks,
    ...extra,
  });
  const kinds: { name: string; make: () => string | Buffer }[] = [
    { name: 'missing-goal', make: () => stringify({ tasks: [task('a')] }) },
    { name: 'tasks-not-a-list', make: () => stringify({ goal: 'g', tasks: { a: task('a') } }) },
    {
      name: 'bad-id',
      make: () => stringify(mission([task(random.pick(['A', '-x', 'a b', 'a$(touch x)', 'é', '']))])),
    },
    { name: 'duplicate-id', make: () => stringify(mission([task('a'), task('a')])) },
    { name: 'unknown-dep', make: () => stringify(mission([task('a', { depends_on: ['buld'] })])) },
    {
      name: 'cycle',
      make: () => stringify(mission([task('a', { depends_on: ['b'] }), task('b', { depends_on: ['a'] })])),
    },
    { name: 'self-dep', make: () => stringify(mission([task('a', { depends_on: ['a'] })])) },
    { name: 'no-criteria', make: () => stringify(mission([{ id: 'a', title: 'A', exit_criteria: [] }])) },
    { name: 'unknown-field', make: () => stringify(mission([task('a', { dependson: ['b'] })])) },
    { name: 'wrong-types', make: () => stringify(mission([task('a', { critic: 'yes', max_attempts: 0 })])) },
    { name: 'bad-duration', make: () => stringify(mission([task('a', { timeout: 'ten minutes' })])) },
    {
      name: 'bad-defaults',
      make: () => stringify(mission([task('a')], { defaults: { control_mode: 'yolo' } })),
    },
    {
      name: 'yaml-syntax',
      make: () => 'goal: g\ntasks:\n  - id: a\n    title: [unclosed\n    exit_criteria: [x]\n',
    },
    { name: 'tabs', make: () => 'goal: g\ntasks:\n\t- id: a\n' },
    { name: 'empty-file', make: () => '' },
    { name: 'scalar-document', make: () => '42\n' },
    { name: 'binary', make: () => Buffer.from(Array.from({ length: 64 }, () => random.int(256))) },
    { name: 'unknown-alias', make: () => 'goal: *nothing\ntasks: []\n' },
    { name: 'deep-nesting', make: () => `goal: g\ntasks: ${'['.repeat(200)}${']'.repeat(200)}\n` },
    { name: 'no-tasks', make: () => stringify({ goal: 'g', tasks: [] }) },
  ];
  return Array.from({ length: MISSION_CASES }, (_, i) => {
    const kind = kinds[i % kinds.length]!;
    return { name: `#${i} ${kind.name}`, content: kind.make() };
  });
}

describe('flotilla validate on malformed missions', () => {
  let root: string;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'flotilla-fault-missions-'));
  });
  afterAll(async () => {
    if (root) await rm(root, { recursive: true, force: true });
  });

  it(
    `exits 2 with a message naming the file and no stack trace, for ${MISSION_CASES} generated missions`,
    async () => {
      const random = createRandom(SEED ^ 0x1234);
      const failures: string[] = [];
      for (const [i, m] of malformedMissions(random).entries()) {
        const file = join(root, `mission-${i}.yaml`);
        await writeFile(file, m.content);
        const { code, stdout, stderr } = await cli(['validate', file]);
        if (code !== 2) failures.push(`${m.name}: exit ${code}, expected 2\n${stderr}\n${stdout}`);
        else if (!stderr.includes(file))
          failures.push(`${m.name}: the message does not name ${file}\n${stderr}`);
        else if (STACK_TRACE.test(`${stdout}\n${stderr}`)) failures.push(`${m.name}: stack trace\n${stderr}`);
      }
      expect(failures).toEqual([]);
    },
    MISSION_CASES * PER_CLI_START_MS,
  );
});
