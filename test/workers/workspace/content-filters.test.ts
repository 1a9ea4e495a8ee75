import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  attributeFiles,
  attributesConvert,
  contentMayConvert,
} from '../../../src/workers/workspace/content-filters.js';
import { runGit } from '../../../src/workers/workspace/git.js';

describe('attributesConvert', () => {
  it.each([
    ['text=auto on everything', '* text=auto\n', true],
    ['git-lfs', '*.psd filter=lfs diff=lfs merge=lfs -text\n', true],
    ['an eol alone (it implies text)', '*.sh eol=lf\n', true],
    ['text set', 'docs/** text\n', true],
    ['ident', '*.c ident\n', true],
    ['a working-tree encoding', '*.ps1 working-tree-encoding=UTF-16LE\n', true],
    ['a macro that converts', '[attr]crlf text eol=crlf\n', true],
    ['the legacy crlf (text)', '*.txt crlf\n', true],
    ['the legacy crlf=input (eol=lf)', '*.sh crlf=input\n', true],
    ['the legacy -crlf (text unset)', '*.raw -crlf\n', false],
    ['after a comment and a blank line', '# ours\n\n*.md text\n', true],
    ['a quoted pattern with a space', '"a b.txt" text\n', true],
    ['diff drivers only (the kernel)', '*.c   diff=cpp\n*.h   diff=cpp\n*.dtsi diff=dts\n', false],
    ['text unset (binary)', '*.png -text\n*.bin binary\n', false],
    ['text unspecified', '*.txt !text !eol\n', false],
    ['a commented-out rule', '# * text=auto\n', false],
    ['a pattern named like an attribute', 'text export-ignore\n', false],
    ['nothing', '', false],
  ])('%s', (_name, text, converts) => {
    expect(attributesConvert(text)).toBe(converts);
  });
});

describe('contentMayConvert', () => {
  let root: string;
  let dir: string;
  const plainRules = { autocrlf: false };
  const env = (extra: Record<string, string> = {}) => ({
    HOME: join(root, 'home'),
    GIT_ATTR_NOSYSTEM: '1',
    ...extra,
  });

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'flotilla-attrs-'));
    dir = join(root, 'repo');
    await mkdir(join(dir, 'src/deep'), { recursive: true });
    await runGit(['init', '--quiet', dir]);
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('is false where no attribute file converts, and core.autocrlf or GIT_ATTR_SOURCE make it true', () => {
    expect(contentMayConvert(dir, ['src/deep/a.c'], plainRules, env())).toBe(false);
    expect(contentMayConvert(dir, ['src/deep/a.c'], { autocrlf: true }, env())).toBe(true);
    expect(contentMayConvert(dir, ['src/deep/a.c'], plainRules, env({ GIT_ATTR_SOURCE: 'HEAD' }))).toBe(true);
  });

  it('reads the .gitattributes of every folder a path is in, and only those', async () => {
    await writeFile(join(dir, 'src/deep/.gitattributes'), '*.c text\n');
    expect(contentMayConvert(dir, ['src/deep/a.c'], plainRules, env())).toBe(true);
    expect(contentMayConvert(dir, ['src/b.c', 'top.c'], plainRules, env())).toBe(false);
    await rm(join(dir, 'src/deep/.gitattributes'));
  });

  it("reads the repository's info/attributes and the user's own file", async () => {
    await mkdir(join(dir, '.git/info'), { recursive: true });
    await writeFile(join(dir, '.git/info/attributes'), '* filter=lfs\n');
    expect(contentMayConvert(dir, ['a.c'], plainRules, env())).toBe(true);
    await rm(join(dir, '.git/info/attributes'));
    await mkdir(join(root, 'home/.config/git'), { recursive: true });
    await writeFile(join(root, 'home/.config/git/attributes'), '* text=auto\n');
    expect(contentMayConvert(dir, ['a.c'], plainRules, env())).toBe(true);
    // core.attributesFile replaces the XDG file.
    await writeFile(join(root, 'home/mine'), '*.c diff=cpp\n');
    expect(contentMayConvert(dir, ['a.c'], { ...plainRules, attributesFile: '~/mine' }, env())).toBe(false);
    await rm(join(root, 'home/.config/git/attributes'));
  });

  it('is true when a .gitattributes among the paths was deleted (git reads the index copy)', () => {
    expect(contentMayConvert(dir, ['src/.gitattributes'], plainRules, env())).toBe(true);
  });

  it('names the system files unless GIT_ATTR_NOSYSTEM, and cannot name ~user/ paths', () => {
    expect(attributeFiles(dir, ['a'], {}, { HOME: '/h' })).toContain('/etc/gitattributes');
    expect(attributeFiles(dir, ['a'], {}, { HOME: '/h', GIT_ATTR_NOSYSTEM: 'true' })).not.toContain(
      '/etc/gitattributes',
    );
    expect(attributeFiles(dir, ['a'], {}, { HOME: '/h', XDG_CONFIG_HOME: '/x' })).toContain(
      '/x/git/attributes',
    );
    expect(attributeFiles(dir, ['a'], { attributesFile: '~alice/attrs' }, { HOME: '/h' })).toBeNull();
  });
});
