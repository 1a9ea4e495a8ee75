import { z } from 'zod';
import { missionSchema } from './mission.js';

/**
 * The mission file's JSON Schema, made from the zod schema (never written by hand) for editors:
 * `# yaml-language-server: $schema=…` in a mission file gives completion, hover text and
 * checking as it is typed. It describes what a file may hold (zod's input side, so `timeout:
 * 90s` and `timeout: 90000` both fit). Draft 7, the draft yaml-language-server ships with.
 *
 * What it cannot say, `flotilla validate` still checks: the cross-task rules (unique ids, known
 * dependencies, no cycles, task_type agreeing with capability), agent files and the workspace on
 * disk, and a checkpoint_interval text of at least 1s. scripts/mission-schema.js writes it to
 * schema/mission.schema.json at build time; test/shared/mission-json-schema.test.ts holds the
 * committed file to a fresh generation.
 */
export function missionJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(missionSchema, { target: 'draft-7', io: 'input' });
  return { ...schema, title: 'flotilla mission file' };
}

/** The file's text: two-space JSON with a final newline, as committed. */
export function missionJsonSchemaText(): string {
  return `${JSON.stringify(missionJsonSchema(), null, 2)}\n`;
}
