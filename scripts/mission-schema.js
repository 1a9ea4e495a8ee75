#!/usr/bin/env node
// Writes schema/mission.schema.json from the built zod schema (dist/), so the JSON Schema editors
// read can never be edited by hand; `npm run build` runs it. test/shared/mission-json-schema.test.ts
// fails when the committed file differs from a fresh generation.
import { writeFileSync } from 'node:fs';
import { missionJsonSchemaText } from '../dist/shared/mission-json-schema.js';

const target = new URL('../schema/mission.schema.json', import.meta.url);
writeFileSync(target, missionJsonSchemaText());
