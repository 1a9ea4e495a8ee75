import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { Ajv, type ErrorObject } from 'ajv';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadMission } from '../../src/producer/load.js';
import { parseDuration } from '../../src/shared/duration.js';
import { parseToolRequirement } from '../../src/shared/host-facts.js';
import { parseCheckpointInterval } from '../../src/shared/mission.js';
import { missionJsonSchema, missionJsonSchemaText } from '../../src/shared/mission-json-schema.js';
import { INVALID_MISSIONS, type InvalidMission } from '../fixtures/missions/invalid.js';
import { FIXTURES, ROOT } from '../helpers/paths.js';

/**
 * The JSON Schema editors read (schema/mission.schema.json) against the validator: generated from
 * the zod schema and committed, it must equal a fresh generation; it accepts every example and
 * fixture mission and rejects each invalid one at the fields `flotilla validate` names, except
 * where a rule is beyond JSON Schema, each such case named below with the reason.
 */

// zod writes `format: uri` for URLs (deliver.api_url), as editors read it; ajv knows no formats
// without a plugin, so the one the schema uses is given here, as a URL parse.
const uri = (text: string) => URL.canParse(text);
const validate = new Ajv({ allErrors: true, strict: true, formats: { uri } }).compile(missionJsonSchema());

/** The fields the schema faults, as the validator writes paths: `tasks[0].depends_on`, '' the top. */
function schemaFaults(value: unknown): string[] {
  if (validate(value)) return [];
  const fields = (validate.errors ?? []).map((error: ErrorObject) => {
    const segments = error.instancePath.split('/').slice(1);
    if (error.keyword === 'additionalProperties') segments.push(String(error.params.additionalProperty));
    if (error.keyword === 'required') segments.push(String(error.params.missingProperty));
    return segments
      .map((segment, i) => (/^\d+$/.test(segment) ? `[${segment}]` : i === 0 ? segment : `.${segment}`))
      .join('');
  });
  return [...new Set(fields)].sort();
}

/** Why a problem the validator finds is not the schema's to find. */
const CROSS_TASK =
  'a cross-task rule (producer/rules.ts): it relates one task to the others, which JSON Schema cannot';
const ON_DISK = 'reads the file system (agents/<id>.md beside the mission); a schema sees only the text';
const YAML_TEXT = "the YAML text itself, which the editor's YAML parser reports before any schema applies";

/** Problems excluded by case name: every path of the case, or only those listed. */
const NOT_THE_SCHEMAS: Readonly<Record<string, { reason: string; paths?: readonly string[] }>> = {
  'checkpoint interval below a second': {
    reason: "checkpoint_interval's at least 1s is a bound on the sum of a text's parts; a pattern cannot add",
  },
  'duplicate id, at the second': { reason: CROSS_TASK },
  'unknown dependency, at the list item, with the known ids': { reason: CROSS_TASK },
  'unknown dependency of the only task: the task itself is named, not "none"': { reason: CROSS_TASK },
  'unknown dependency where no task has an id': { reason: CROSS_TASK, paths: ['tasks[0].depends_on'] },
  'self-dependency': { reason: CROSS_TASK },
  'cycle, with its path from the first task in the file': { reason: CROSS_TASK },
  'capability and task_type disagree': { reason: CROSS_TASK },
  'missing agent file names the path looked at': { reason: ON_DISK },
  'YAML syntax error, with its line': { reason: YAML_TEXT },
  'duplicate YAML key': { reason: YAML_TEXT },
  'two documents in one file': { reason: YAML_TEXT },
  'alias to no anchor': { reason: YAML_TEXT },
  'an empty file': { reason: YAML_TEXT },
  'five-mistakes.yaml': { reason: CROSS_TASK, paths: ['tasks[2].id', 'tasks[3].depends_on'] },
};

async function yamlFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile() && /\.ya?ml$/.test(entry.name))
    .map((entry) => path.join(entry.parentPath, entry.name))
    .sort();
}

/** The README's mission examples: its yaml blocks that have a goal. */
async function readmeMissions(): Promise<string[]> {
  const readme = await readFile(path.join(ROOT, 'README.md'), 'utf8');
  return [...readme.matchAll(/^(`{3,4})yaml\n([\s\S]*?)^\1$/gm)]
    .map((match) => match[2] ?? '')
    .filter((text) => /^goal:/m.test(text));
}

describe('schema/mission.schema.json', () => {
  it('is what the zod schema generates today (npm run build writes it)', async () => {
    const committed = await readFile(path.join(ROOT, 'schema', 'mission.schema.json'), 'utf8');
    expect(committed).toBe(missionJsonSchemaText());
  });

  it('accepts every example and fixture mission, and the README’s', async () => {
    const files = [
      ...(await yamlFiles(path.join(ROOT, 'examples'))),
      path.join(FIXTURES, 'missions/valid.yaml'),
    ];
    const texts = [
      ...(await Promise.all(files.map(async (file) => ({ name: file, text: await readFile(file, 'utf8') })))),
      ...(await readmeMissions()).map((text, i) => ({ name: `README mission ${i + 1}`, text })),
    ];
    expect(texts.length).toBeGreaterThanOrEqual(4);
    for (const { name, text } of texts) expect(schemaFaults(parse(text)), name).toEqual([]);
  });

  /** The fields the validator names, less those excluded above, are exactly those the schema faults. */
  function expectFaultsAsNamed({ name, text, expected }: InvalidMission): void {
    const excluded = NOT_THE_SCHEMAS[name];
    const named = expected
      .map(([, at]) => at)
      .filter((at) => !excluded || (excluded.paths !== undefined && !excluded.paths.includes(at)));
    expect(expected.length, name).toBeGreaterThan(0);
    expect(schemaFaults(parse(text)), name).toEqual([...new Set(named)].sort());
  }

  it.each(INVALID_MISSIONS.filter((c) => NOT_THE_SCHEMAS[c.name]?.reason !== YAML_TEXT))(
    'rejects $name at the fields the validator names',
    expectFaultsAsNamed,
  );

  it('rejects five-mistakes.yaml at the fields the validator names', async () => {
    const file = path.join(FIXTURES, 'missions', 'five-mistakes.yaml');
    const { problems } = await loadMission(file);
    const expected = problems.map((p): [number | undefined, string, string] => [p.line, p.path, p.message]);
    expectFaultsAsNamed({ name: 'five-mistakes.yaml', text: await readFile(file, 'utf8'), expected });
  });

  it('names no case that is gone or that the schema does catch', () => {
    const names = new Set([...INVALID_MISSIONS.map((c) => c.name), 'five-mistakes.yaml']);
    expect(Object.keys(NOT_THE_SCHEMAS).filter((name) => !names.has(name))).toEqual([]);
  });
});

/** The schema's verdict on one value of a field, in a mission that is otherwise valid. */
function accepts(field: 'timeout' | 'checkpoint_interval' | 'tools', value: unknown): boolean {
  const task = { id: 'a', title: 'A', exit_criteria: ['true'] };
  const mission =
    field === 'tools'
      ? { goal: 'g', tasks: [{ ...task, requires: { tools: [value] } }] }
      : { goal: 'g', defaults: { [field]: value }, tasks: [task] };
  return schemaFaults(mission).length === 0;
}

describe('what the schema says of values the parsers read', () => {
  it.each<string | number | boolean>([
    '90s',
    '10m',
    '1h30m',
    '500ms',
    '7d',
    '1.5h',
    ' 90s ',
    '90',
    '0',
    90_000,
    0,
    1.5,
    '',
    'soon',
    '90 s',
    '1h 30m',
    '-5s',
    '1.s',
    's',
    '10ms5',
    '1e3',
    -1,
    true,
  ])('a duration %j: as parseDuration', (value) => {
    const parsed = typeof value === 'boolean' ? undefined : parseDuration(value);
    expect(accepts('timeout', value)).toBe(parsed !== undefined);
  });

  it.each<string | number | boolean>(['off', 'OFF', ' Off ', false, 0, '0', 1_000, '30s', '2m', '1m30s'])(
    'checkpoint_interval %j is taken',
    (value) => {
      expect(parseCheckpointInterval(value)).toBeDefined();
      expect(accepts('checkpoint_interval', value)).toBe(true);
    },
  );

  it.each<string | number | boolean>(['often', 'of', true, 999, -1, '1 m'])(
    'checkpoint_interval %j is refused',
    (value) => {
      expect(parseCheckpointInterval(value)).toBeUndefined();
      expect(accepts('checkpoint_interval', value)).toBe(false);
    },
  );

  it.each(['500ms', '0.5s'])(
    'checkpoint_interval %j: a text under 1s passes the schema, and only the validator refuses it',
    (value) => {
      expect(parseCheckpointInterval(value)).toBeUndefined();
      expect(accepts('checkpoint_interval', value)).toBe(true);
    },
  );

  it.each([
    'node>=20',
    'docker',
    'python3 >= 3.10',
    ' git ',
    'gcc=13.2',
    'node>>20',
    '>=20',
    '',
    'node >= x',
  ])('a required tool %j: as parseToolRequirement', (value) => {
    expect(accepts('tools', value)).toBe(parseToolRequirement(value) !== null);
  });

  it('a list of escalation steps names each at most once', () => {
    const mission = (escalate: string[]) => ({
      goal: 'g',
      defaults: { escalate },
      tasks: [{ id: 'a', title: 'A', exit_criteria: ['true'] }],
    });
    expect(schemaFaults(mission(['tier', 'cli']))).toEqual([]);
    expect(schemaFaults(mission(['tier', 'tier']))).toEqual(['defaults.escalate']);
  });
});
