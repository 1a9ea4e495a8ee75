import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MissionStatusJson } from '../../../../src/shared/contracts.js';
import { indent, sim, startCluster, type TestCluster } from '../../../helpers/flotilla.js';

/**
 * What git commits, on the real pipeline: an agent that replaces a tracked folder by a link out
 * of its checkout, writes a file whose name is not UTF-8 and creates a nested repository gets
 * what `git add -A` would commit onto its attempt ref and the integration branch (the link, the
 * folder's deletions, the name's bytes, a gitlink), nothing from behind the link, and a task that
 * completes on its first attempt (before, the link failed the attempt as an infrastructure error
 * or committed the files behind it, and the name and the repository were dropped).
 */

const LATIN1_NAME = [0x63, 0x61, 0x66, 0xe9, 0x2e, 0x74, 0x78, 0x74]; // "café.txt" in latin-1

function agentScript(outside: string): string {
  return [
    "const fs = require('fs');",
    "const cp = require('child_process');",
    "fs.rmSync('vault', { recursive: true });",
    `fs.symlinkSync(${JSON.stringify(outside)}, 'vault');`,
    `fs.writeFileSync(Buffer.from(${JSON.stringify(LATIN1_NAME)}), 'latin-1 name\\n');`,
    "fs.mkdirSync('nested');",
    "fs.writeFileSync('nested/n.txt', 'nested\\n');",
    "const id = ['-c', 'user.name=agent', '-c', 'user.email=agent@example.com'];",
    "cp.execFileSync('git', ['init', '-q'], { cwd: 'nested' });",
    "cp.execFileSync('git', ['add', 'n.txt'], { cwd: 'nested' });",
    "cp.execFileSync('git', [...id, 'commit', '-q', '-m', 'nested'], { cwd: 'nested' });",
  ].join('\n');
}

describe.each([
  ['in-process where it can (the default)', undefined],
  ['git commands only (FLOTILLA_GIT=cli)', 'cli'],
] as const)('links, names and repositories as git commits them, %s', (_mode, setting) => {
  const saved = process.env.FLOTILLA_GIT;
  let cluster: TestCluster;
  let status: MissionStatusJson;
  let repo: string;
  let outside: string;

  beforeAll(async () => {
    if (setting) process.env.FLOTILLA_GIT = setting;
    else delete process.env.FLOTILLA_GIT;
    outside = await mkdtemp(join(tmpdir(), 'flotilla-outside-'));
    await writeFile(join(outside, 'key.txt'), 'the secret behind the link\n');
    cluster = await startCluster({ hosts: 1, slots: 2 });
    const yaml = [
      'goal: Commit what git commits',
      'workspace: ./ws',
      'defaults: { max_attempts: 2, backoff: 100ms, timeout: 60s }',
      'tasks:',
      '  - id: names',
      '    title: Link the vault away, add a latin-1 name and a nested repository',
      '    capability: code_implementation',
      '    critic: false',
      '    exit_criteria: ["test -L vault"]',
      '    description: |',
      '      Do it.',
      '',
      indent(
        sim(`- run: [${JSON.stringify(process.execPath)}, -e, ${JSON.stringify(agentScript(outside))}]`),
      ),
    ].join('\n');
    const id = await cluster.submit(yaml, {
      'ws/README.md': '# seed\n',
      'ws/vault/key.txt': 'tracked key\n',
    });
    status = await cluster.client.wait(id, { pollMs: 200 });
    repo = (await cluster.client.store.getMission(id)).meta.repo;
  });
  afterAll(async () => {
    await cluster?.stop();
    await rm(outside, { recursive: true, force: true });
    if (saved === undefined) delete process.env.FLOTILLA_GIT;
    else process.env.FLOTILLA_GIT = saved;
  });

  it('completes the task on its first attempt', () => {
    expect(status.status).toBe('done');
    const task = status.tasks.find((t) => t.id === 'names');
    expect(task?.status).toBe('completed');
    expect(task?.attempts).toBe(1);
  });

  it('puts the link, the bytes of the name and the gitlink on the integration branch, and nothing from behind the link', async () => {
    const listing = (
      await execa('git', ['-C', repo, 'ls-tree', '-r', '-z', status.branch], { encoding: 'buffer' })
    ).stdout;
    const entries = Buffer.from(listing)
      .toString('latin1')
      .split('\0')
      .filter((entry) => entry && !entry.includes('\t.planning/'));
    const named = new Map(entries.map((entry) => [entry.split('\t')[1], entry.split(' ')[0]]));
    expect(named.get('vault')).toBe('120000');
    expect(named.has('vault/key.txt')).toBe(false);
    expect(named.get(Buffer.from(LATIN1_NAME).toString('latin1'))).toBe('100644');
    expect(named.get('nested')).toBe('160000');
    const link = (await execa('git', ['-C', repo, 'cat-file', 'blob', `${status.branch}:vault`])).stdout;
    expect(link).toBe(outside);
    const objects = await execa('git', ['-C', repo, 'cat-file', '--batch-all-objects', '--batch'], {
      encoding: 'buffer',
    });
    expect(Buffer.from(objects.stdout).toString('latin1')).not.toContain('the secret behind the link');
    const fsck = await execa('git', ['-C', repo, 'fsck', '--strict', '--no-dangling'], { reject: false });
    expect(fsck.exitCode).toBe(0);
    // Nothing was removed or written through the link.
    expect(await readFile(join(outside, 'key.txt'), 'utf8')).toBe('the secret behind the link\n');
  });
});
