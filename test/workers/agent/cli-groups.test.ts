/**
 * The host's record of its CLIs' process groups (src/workers/agent/cli-groups.ts): a host started again
 * kills the groups a dead host of its id and cluster left, and only those (not a live host's, not
 * another cluster's, not one whose CLI ended, nor a process id since given to another program); a
 * host's shutdown kills its own; the slot files are reused, not made anew for every CLI run.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCliGroups, type ProcessId, startTimeOf } from '../../../src/workers/agent/cli-groups.js';
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

/** A host process that is gone: a child that ran and exited (its pid free, its start time known). */
async function deadProcess(): Promise<ProcessId> {
  const child = spawn('sleep', ['30'], { stdio: 'ignore' });
  if (child.pid === undefined) throw new Error('sleep did not start');
  const id = { pid: child.pid, startTime: startTimeOf(child.pid) };
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  child.kill('SIGKILL');
  await exited;
  return id;
}

/** A record as a host writes one (cli-groups.ts), by a host process `owner` of cluster `cluster`. */
function recordOf(pgid: number, owner: ProcessId, cluster: string): string {
  return JSON.stringify({ pgid, startTime: startTimeOf(pgid), owner, cluster });
}

describe('cli groups', () => {
  it("kills the groups a dead host of its cluster left, and no live host's nor another cluster's", async () => {
    const dir = join(root, 'groups');
    await mkdir(dir, { recursive: true });
    const dead = await deadProcess();
    const orphan = startGroup();
    const otherCluster = startGroup();
    const legacy = startGroup();
    const reused = startGroup();
    await writeFile(join(dir, `${dead.pid}-a-0`), recordOf(orphan.pgid, dead, 'c1'));
    await writeFile(join(dir, `${dead.pid}-b-0`), recordOf(otherCluster.pgid, dead, 'c2'));
    // Written before records named their host: the file name's pid (a dead one) stands in.
    await writeFile(
      join(dir, `${dead.pid}-0`),
      JSON.stringify({ pgid: legacy.pgid, startTime: startTimeOf(legacy.pgid) }),
    );
    // A process id the kernel gave to another program since: its start time differs.
    await writeFile(
      join(dir, `${dead.pid}-a-1`),
      JSON.stringify({ pgid: reused.pgid, startTime: '1', owner: dead, cluster: 'c1' }),
    );
    // A record cut short by a kill is removed.
    await writeFile(join(dir, `${dead.pid}-a-2`), '{"pgid": ');

    // A live host of this id and cluster (this process) runs a CLI meanwhile.
    const live = createCliGroups(dir, 'c1');
    const running = startGroup();
    await live.record(running.pgid);
    const liveFiles = (await readdir(dir)).filter((name) => name.startsWith(`${process.pid}-`));
    expect(liveFiles).toHaveLength(1);

    const starting = createCliGroups(dir, 'c1');
    const killed = await starting.killOrphans();
    expect(killed.sort((a, b) => a - b)).toEqual([orphan.pgid, legacy.pgid].sort((a, b) => a - b));
    await Promise.all([orphan.exited, legacy.exited]);
    expect(processAlive(running.pgid)).toBe(true);
    expect(processAlive(otherCluster.pgid)).toBe(true);
    expect(processAlive(reused.pgid)).toBe(true);
    // What is left: the live host's record and the other cluster's, for that cluster's host.
    expect((await readdir(dir)).sort()).toEqual([...liveFiles, `${dead.pid}-b-0`].sort());

    // The live host's shutdown kills its own CLI, not the other cluster's orphan.
    expect(await live.killRunning()).toEqual([running.pgid]);
    await running.exited;
    expect(processAlive(otherCluster.pgid)).toBe(true);
    expect(await readdir(dir)).toEqual([`${dead.pid}-b-0`]);
  });

  it('reuses its slot files and blanks one when its CLI ends, so nothing is killed for it', async () => {
    const dir = join(root, 'ended');
    const groups = createCliGroups(dir, 'c1');
    const one = startGroup();
    const two = startGroup();
    await groups.record(one.pgid);
    await groups.forget(one.pgid);
    await groups.record(two.pgid);
    // Two CLIs one after the other: one slot file, the ended CLI's taken again.
    const files = await readdir(dir);
    expect(files).toHaveLength(1);
    const file = join(dir, files[0] ?? '');
    expect(JSON.parse(await readFile(file, 'utf8'))).toMatchObject({ pgid: two.pgid, cluster: 'c1' });
    await groups.forget(two.pgid);
    expect((await readFile(file, 'utf8')).trim()).toBe('');
    expect(await groups.killRunning()).toEqual([]);
    expect(processAlive(one.pgid)).toBe(true);
    expect(processAlive(two.pgid)).toBe(true);
  });
});
