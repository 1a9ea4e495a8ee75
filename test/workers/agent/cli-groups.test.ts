/**
 * The host's record of its CLIs' process groups (src/workers/agent/cli-groups.ts): a host started again
 * kills the groups a killed run left, and only those (not one whose CLI ended, nor a process id
 * since given to another program); the slot files are reused, not made anew for every CLI run.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCliGroups } from '../../../src/workers/agent/cli-groups.js';
import { processAlive } from '../../../src/workers/workspace/checkout-root.js';

let root: string;
const children: ChildProcess[] = [];

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'flotilla-cli-groups-'));
});
afterAll(async () => {
  for (const child of children)
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await rm(root, { recursive: true, force: true });
});

/** A CLI stand-in in its own process group, as spawnProcess starts one; its group id. */
function startGroup(): { pgid: number; exited: Promise<void> } {
  const child = spawn('sleep', ['60'], { detached: true, stdio: 'ignore' });
  children.push(child);
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  if (child.pid === undefined) throw new Error('sleep did not start');
  return { pgid: child.pid, exited };
}

describe('cli groups', () => {
  it('kills what a killed run left, reusing its slot files, and nothing else', async () => {
    const dir = join(root, 'groups');
    const running = createCliGroups(dir);
    const first = startGroup();
    const ended = startGroup();
    await running.record(first.pgid);
    await running.record(ended.pgid);
    await running.forget(ended.pgid);
    const third = startGroup();
    await running.record(third.pgid);
    // Two CLIs at once at most: two slot files, the ended CLI's taken again by the third.
    const files = await readdir(dir);
    expect(files).toHaveLength(2);
    expect(files.every((name) => name.startsWith(`${process.pid}-`))).toBe(true);

    // A process id the kernel gave to another program since: its start time differs.
    const reused = startGroup();
    await writeFile(join(dir, 'other-0'), JSON.stringify({ pgid: reused.pgid, startTime: '1' }));
    // A record cut short by a kill is left alone.
    await writeFile(join(dir, 'other-1'), '{"pgid": ');

    // The host started again (the run above killed with SIGKILL: nothing forgot its CLIs).
    const restarted = createCliGroups(dir);
    const killed = await restarted.killLeftovers();
    expect(killed.sort((a, b) => a - b)).toEqual([first.pgid, third.pgid].sort((a, b) => a - b));
    await Promise.all([first.exited, third.exited]);
    expect(processAlive(ended.pgid)).toBe(true);
    expect(processAlive(reused.pgid)).toBe(true);
    expect(await readdir(dir)).toEqual([]);
  });

  it('blanks a slot when its CLI ends, so a restart finds nothing to kill', async () => {
    const dir = join(root, 'ended');
    const groups = createCliGroups(dir);
    const one = startGroup();
    await groups.record(one.pgid);
    const [file = ''] = await readdir(dir);
    expect(JSON.parse(await readFile(join(dir, file), 'utf8'))).toMatchObject({ pgid: one.pgid });
    await groups.forget(one.pgid);
    expect((await readFile(join(dir, file), 'utf8')).trim()).toBe('');
    expect(await createCliGroups(dir).killLeftovers()).toEqual([]);
    expect(processAlive(one.pgid)).toBe(true);
  });
});
