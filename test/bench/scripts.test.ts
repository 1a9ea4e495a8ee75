import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/paths.js';

/**
 * The benchmarks are plain JavaScript outside the typechecked tree, so nothing else notices when a
 * merge leaves one unparsable (it happened: `npm run bench` died at the overhead benchmark).
 */
describe('bench/ scripts', async () => {
  const files = [
    ...(await readdir(join(ROOT, 'bench'))).filter((f) => f.endsWith('.js')).map((f) => join('bench', f)),
    ...(await readdir(join(ROOT, 'bench', 'lib')))
      .filter((f) => f.endsWith('.js'))
      .map((f) => join('bench', 'lib', f)),
  ];
  it('has scripts to check', () => {
    expect(files).toContain(join('bench', 'overhead.js'));
  });
  it.each(files)('%s parses', async (file) => {
    const checked = await execa('node', ['--check', file], { cwd: ROOT, reject: false });
    expect(checked.stderr).toBe('');
    expect(checked.exitCode).toBe(0);
  });
});
