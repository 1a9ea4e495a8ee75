/**
 * The Watchman client's answers when the daemon does not answer (src/workers/workspace/watchman.ts). A real
 * daemon's answers are tested through the warm checkouts (test/workers/workspace/monitored-checkout.test.ts);
 * a daemon that never completes a sync cannot be had on demand, so here a socket stands in for
 * one that answers `watch-project` and then nothing.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findWatchmanSocket, watchmanMonitor } from '../../../src/workers/workspace/watchman.js';

let dir: string;
let server: Server;
const received: string[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'flotilla-watchman-stub-'));
  server = createServer((socket) => {
    let buffer = '';
    socket.on('data', (chunk) => {
      buffer += chunk.toString();
      for (let end = buffer.indexOf('\n'); end !== -1; end = buffer.indexOf('\n')) {
        const [command, root] = JSON.parse(buffer.slice(0, end)) as [string, string];
        buffer = buffer.slice(end + 1);
        received.push(command);
        if (command === 'watch-project') socket.write(`${JSON.stringify({ watch: root })}\n`);
        if (command === 'watch-del') socket.write(`${JSON.stringify({ 'watch-del': true })}\n`);
        // Queries (a clock is one too): never answered, as a watch whose sync cookie is never seen.
      }
    });
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(join(dir, 'sock'), resolve));
});
afterAll(async () => {
  server.close();
  await rm(dir, { recursive: true, force: true });
});

describe('a Watchman that does not answer', () => {
  it('costs only the question that timed out, and after three in a row drops the watch and leaves the directory to the walks', async () => {
    received.length = 0;
    const monitor = watchmanMonitor(join(dir, 'sock'), 200);
    const checkout = join(dir, 'checkout');
    expect(await monitor.clock(checkout)).toBeNull();
    // A busy daemon: the connection goes, the watch (and a clean record by its clock) stays.
    expect(received).toEqual(['watch-project', 'query']);
    expect(await monitor.changedSince(checkout, 'c:1:2')).toBeNull();
    expect(received).toEqual(['watch-project', 'query', 'watch-project', 'query']);
    expect(await monitor.clock(checkout)).toBeNull();
    expect(received.slice(4)).toEqual(['watch-project', 'query', 'watch-del']);
    // A respite: no more waits for the same directory.
    expect(await monitor.clock(checkout)).toBeNull();
    expect(await monitor.changedSince(checkout, 'c:1:2')).toBeNull();
    expect(received).toHaveLength(7);
    monitor.close();
  });
});

describe('FLOTILLA_WATCHMAN', () => {
  it.each([
    ['unset: off (hosts walk by default)', {}, null],
    ['off', { FLOTILLA_WATCHMAN: 'off' }, null],
    ['a socket path', { FLOTILLA_WATCHMAN: '/run/w/sock' }, '/run/w/sock'],
    [
      "on: Watchman's own WATCHMAN_SOCK first",
      { FLOTILLA_WATCHMAN: 'on', WATCHMAN_SOCK: '/tmp/w.sock' },
      '/tmp/w.sock',
    ],
  ])('%s', async (_name, env, expected) => {
    expect(await findWatchmanSocket(env)).toBe(expected);
  });
});
