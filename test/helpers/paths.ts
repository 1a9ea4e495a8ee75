import { join, resolve } from 'node:path';

/** The repository root and the fixture folders, wherever a test file sits in the tree. */
export const ROOT = resolve(import.meta.dirname, '..', '..');
export const FIXTURES = join(ROOT, 'test', 'fixtures');
export const GOLDEN = join(ROOT, 'test', 'golden');
