import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedHosts, seedMission } from '../../bench/lib/seed-mission.js';
import type { MissionSpec } from '../../src/shared/mission.js';
import { connectOrFail, type RedisClient } from '../../src/shared/redis.js';
import { MissionStore } from '../../src/shared/store/mission-store.js';
import { publishHost } from '../../src/shared/store/registry.js';
import { indent, ROOT, SIM_ADAPTERS, SIM_BIN, sim } from '../helpers/flotilla.js';
import { leakCheck, trackConnection } from '../helpers/leak-check.js';
import { type RedisHandle, startRedis, uniquePrefix } from '../helpers/redis-server.js';

/**
 * `flotilla status <id> --watch` on a 300-task mission inside a real pseudo-terminal of a fixed
 * size (tmux, 120 × 40), and through a pipe. The mission is written into mission state directly
 * (bench/lib/seed-mission.js). Like test/integration/cli.test.ts, it runs bin/flotilla.js, which
 * needs `npm run build` (`npm test` builds first).
 */

const run = promisify(execFile);
const BIN = join(ROOT, 'bin', 'flotilla.js');
const COLS = 120;
const ROWS = 40;
/** A tmux server of this test's own, so no other tmux session on the machine is touched. */
const SOCKET = `flotilla-test-${process.pid}`;

let server: RedisHandle;
let redis: RedisClient;
let store: MissionStore;
let spec: MissionSpec;
const prefix = uniquePrefix();
const id = 'live-300';

function tmux(...args: string[]) {
  return run('tmux', ['-L', SOCKET, ...args]);
}

/** The pane's lines; with `history`, the lines that scrolled off its top too. */
async function screen(session = 'watch', history = false): Promise<string[]> {
  const { stdout } = await tmux('capture-pane', '-p', '-t', session, ...(history ? ['-S', '-'] : []));
  return stdout.split('\n');
}

async function screenWith(text: string, session = 'watch', timeoutMs = 30_000): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const lines = await screen(session);
    if (lines.some((l) => l.includes(text))) return lines;
    if (Date.now() > deadline) throw new Error(`the screen never showed '${text}':\n${lines.join('\n')}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

beforeAll(async () => {
  server = await startRedis();
  redis = trackConnection(await connectOrFail(server.url));
  store = new MissionStore(redis, prefix);
  const now = Date.now();
  spec = await seedMission(store, { id, tasks: 300, now });
  for (const host of seedHosts(now)) await publishHost(redis, prefix, host, 600_000);
});

afterAll(async () => {
  await tmux('kill-server').catch(() => undefined);
  await redis?.quit();
  await leakCheck({ redis: server });
  await server?.stop();
});

describe('status --watch, the live view', () => {
  it('fits a 120 × 40 terminal: header, counts, attention list, running tasks; redrawn in place', async () => {
    const states = await store.getTasks(id);
    const count = (status: string) => Object.values(states).filter((s) => s.status === status).length;
    await tmux(
      'new-session',
      '-d',
      '-s',
      'watch',
      '-x',
      String(COLS),
      '-y',
      String(ROWS),
      '-e',
      `REDIS_URL=${server.url}`,
      '-e',
      `FLOTILLA_PREFIX=${prefix}`,
      '-e',
      'LOG_LEVEL=silent',
      'node',
      BIN,
      'status',
      id,
      '--watch',
    );
    const lines = await screenWith('Attention (');
    expect(lines[0]).toMatch(new RegExp(`^${id} — running — 2h 0m — \\$\\d+\\.\\d\\d — about .+ left`));
    const finished = count('completed') + count('failed') + count('skipped');
    expect(lines[1]).toContain(`${finished}/300 finished`);
    expect(lines[1]).toContain('hosts 3 busy, 1 idle · 9/16 slots');
    expect(lines[2]).toContain(`running ${count('running')}`);
    expect(lines[2]).toContain(`pending ${count('pending')}`);
    const attention = lines.findIndex((l) => l.startsWith('Attention ('));
    const failed = Object.entries(states).find(([, s]) => s.status === 'failed');
    const asking = Object.entries(states).find(([, s]) => s.status === 'needs_input');
    if (!failed || !asking) throw new Error('the seeded mission has no failed or waiting task');
    const block = lines.slice(attention, attention + 12).join('\n');
    expect(block).toMatch(new RegExp(`failed +${failed[0]} +out of attempts`));
    expect(block).toMatch(new RegExp(`question +${asking[0]} +Which storage backend`));
    expect(block).toContain("pinned CLI 'aider' is on no live host");
    // The running tasks come first in the table, and what does not fit is counted.
    const table = lines.findIndex((l) => l.startsWith('task  '));
    expect(lines[table + 1]).toMatch(/^t\d+ +running/);
    const drawn = lines.filter((l) => l.trim() !== '');
    expect(drawn.length).toBeLessThanOrEqual(ROWS - 1);
    expect(drawn.at(-1)).toMatch(/^\+ \d+ .*pending/);

    // A task starts: the next frame shows it, drawn over the last one, nothing scrolled away.
    const queued = spec.tasks.find(
      (t) => states[t.id]?.status === 'queued' && t.capability !== 'data_migration' && !t.cli,
    );
    if (!queued) throw new Error('no servable queued task');
    await store.mark(id, queued.id, states[queued.id]?.attempts ?? 1, 'running', {
      host: 'host-b',
      cli: 'codex',
    });
    const next = await screenWith(`running ${count('running') + 1}`);
    expect(next[0]).toMatch(new RegExp(`^${id} — running`));
    const { stdout: history } = await tmux('display-message', '-p', '-t', 'watch', '#{history_size}');
    expect(history.trim()).toBe('0');
  });

  it('prints plain lines, one per event, when stdout is not a terminal', async () => {
    const child = execa('node', [BIN, 'status', id, '--watch'], {
      env: { REDIS_URL: server.url, FLOTILLA_PREFIX: prefix, LOG_LEVEL: 'silent' },
      reject: false,
    });
    let out = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    // The watcher reads the stream from its start; an event arrives, and it prints it.
    await store.emit({
      missionId: id,
      taskId: 't150',
      attempt: 1,
      type: 'task',
      status: 'running',
      message: 'running on host-c',
    });
    await expect
      .poll(() => out, { timeout: 60_000 })
      .toMatch(/\d\d:\d\d:\d\d t150 a1 +running +running on host-c\n/);
    expect(out).not.toContain('\x1b[');
    child.kill('SIGTERM');
    await child;
  });

  it('run on a terminal draws its live view in place and ends with the summary', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'flotilla-live-'));
    try {
      await mkdir(join(dir, 'ws'));
      const task = (id: string, deps: string[], steps: string, criteria: string) => [
        `  - id: ${id}`,
        `    title: ${id}`,
        '    critic: false',
        `    depends_on: [${deps.join(', ')}]`,
        `    exit_criteria: [${JSON.stringify(criteria)}]`,
        '    description: |',
        indent(sim(steps)),
      ];
      const file = join(dir, 'mission.yaml');
      await writeFile(
        file,
        [
          'goal: live view mission',
          'workspace: ./ws',
          'defaults: { max_attempts: 2, backoff: 100ms }',
          'tasks:',
          ...task('good', [], '- write: {path: a.txt, content: a}', 'test -f a.txt'),
          ...task('bad', [], '- write: {path: b.txt, content: no}', 'grep -q yes b.txt'),
          ...task('after', ['bad'], '- write: {path: c.txt, content: c}', 'test -f c.txt'),
        ].join('\n'),
      );
      await tmux(
        'new-session',
        '-d',
        '-s',
        'run',
        '-x',
        String(COLS),
        '-y',
        String(ROWS),
        '-e',
        `REDIS_URL=${server.url}`,
        '-e',
        `FLOTILLA_PREFIX=${uniquePrefix()}`,
        '-e',
        `FLOTILLA_HOME=${join(dir, 'home')}`,
        '-e',
        'LOG_LEVEL=silent',
        // tmux sets PATH itself, so the stand-in agent's folder goes in through env(1). The pane
        // stays after the command exits, so its last screen can be read.
        'env',
        `PATH=${SIM_BIN}${delimiter}${process.env.PATH ?? ''}`,
        'sh',
        '-c',
        `node ${JSON.stringify(BIN)} run ${JSON.stringify(file)} --adapters ${JSON.stringify(SIM_ADAPTERS)}; sleep 600`,
      );
      await screenWith('Mission partial', 'run', 90_000);
      const all = await screen('run', true);
      // One frame, redrawn: its header is on the screen once, not once per redraw.
      const headers = all.filter((l) => /^\S+ — (running|partial) — /.test(l));
      expect(headers).toHaveLength(1);
      expect(headers[0]).toMatch(/ — partial — /);
      const frame = all.slice(all.indexOf(headers[0] ?? ''));
      expect(frame[1]).toContain('3/3 finished (100%)');
      expect(frame[2]).toBe('failed 1 · completed 1 · skipped 1');
      expect(frame[3]).toBe('Attention (1)');
      expect(frame[4]).toMatch(/^ {2}failed +bad +out of attempts/);
      expect(frame.join('\n')).toContain('Mission partial: live view mission');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
