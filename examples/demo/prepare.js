#!/usr/bin/env node
// Copies the demo mission and a fresh copy of workspace-seed/ into a new temporary folder and prints
// the mission file's path, so every `npm run demo` starts from the same state and leaves the
// source tree untouched. The folder is left behind for inspection (the mission's git repository).
import { cpSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'flotilla-demo-'));
cpSync(join(here, 'mission.yaml'), join(dir, 'mission.yaml'));
cpSync(join(here, 'workspace-seed'), join(dir, 'workspace'), { recursive: true });
process.stdout.write(`${join(dir, 'mission.yaml')}\n`);
