import { chmod, mkdir, readFile, realpath, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { indent, sim, startCluster, type TestCluster } from '../../../helpers/flotilla.js';

/**
 * `on_finish`: a script of the mission's own, run by the finishing host once the mission has ended
 * (after its delivery), with the mission's facts in FLOTILLA_* variables and its summary, status and
 * receipt as files, and none of the host's secrets.
 */
const FORGE_TOKEN = 'forge-token-on-finish-0123';
let cluster: TestCluster;

beforeAll(async () => {
  cluster = await startCluster({ hosts: 1, env: { FLOTILLA_FORGE_TOKEN: FORGE_TOKEN } });
});
afterAll(async () => {
  await cluster?.stop();
});

describe('on_finish', () => {
  it('runs the command with the facts and files of the ended mission, after delivery, without secrets', async () => {
    const dir = join(cluster.dir, 'finish');
    const ws = join(dir, 'ws');
    const bare = join(dir, 'origin.git');
    await mkdir(ws, { recursive: true });
    await execa('git', ['init', '--bare', '--quiet', bare]);
    await execa('git', ['-C', ws, 'init', '--quiet', '--initial-branch=main']);
    await writeFile(join(ws, 'README.md'), 'x\n');
    await execa('git', ['-C', ws, 'add', '-A']);
    await execa('git', [
      '-C',
      ws,
      '-c',
      'user.name=t',
      '-c',
      'user.email=t@t',
      'commit',
      '--quiet',
      '-m',
      'start',
    ]);
    await execa('git', ['-C', ws, 'remote', 'add', 'origin', bare]);
    const out = join(dir, 'announced');
    const script = join(dir, 'announce.sh');
    await writeFile(
      script,
      [
        '#!/bin/bash',
        `{ echo "args: $*"; echo "pwd: $PWD"; env | grep -E '^(FLOTILLA_|REDIS)' | sort;`,
        '  echo "--- summary"; cat "$FLOTILLA_SUMMARY_FILE";',
        `  echo "--- receipt"; head -c 200 "$FLOTILLA_RECEIPT_FILE"; } > ${JSON.stringify(out)}`,
        'echo announced',
      ].join('\n'),
    );
    await chmod(script, 0o755);
    const file = join(dir, 'mission.yaml');
    await writeFile(
      file,
      [
        'goal: Announce the end',
        'workspace: ./ws',
        'defaults: { critic: false, timeout: 60s }',
        'deliver: { push: origin }',
        `on_finish: [${JSON.stringify(script)}, --channel, dev]`,
        'tasks:',
        '  - id: a',
        '    title: A',
        '    exit_criteria: ["test -f a.txt"]',
        '    description: |',
        indent(sim('- write: {path: a.txt, content: "a"}')),
      ].join('\n'),
    );
    const { id } = await cluster.client.submit(file);
    const status = await cluster.client.wait(id, { pollMs: 200, timeoutMs: 120_000 });
    expect(status.delivery?.state).toBe('delivered');
    // It runs once the end is told, so a follower may see the end first.
    let audit = await cluster.client.store.getAudit(id);
    for (let i = 0; i < 200 && audit.at(-1)?.stage !== 'finish'; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      audit = await cluster.client.store.getAudit(id);
    }
    expect(audit.at(-1)).toMatchObject({
      stage: 'finish',
      event: {
        kind: 'on-finish',
        command: [script, '--channel', 'dev'],
        exitCode: 0,
        timedOut: false,
        tail: 'announced\n',
      },
    });
    const text = await readFile(out, 'utf8');
    expect(text).toContain('args: --channel dev');
    expect(text).toContain(`pwd: ${await realpath(ws)}`);
    expect(text).toContain(`FLOTILLA_MISSION_ID=${id}`);
    expect(text).toContain('FLOTILLA_MISSION_STATUS=done');
    expect(text).toContain(`FLOTILLA_BRANCH=flotilla/${id}`);
    // The summary the script reads is the final one, delivery included.
    expect(text).toContain(`Delivered: flotilla/${id} pushed to origin`);
    expect(text).toContain('"format": "flotilla-receipt/1"');
    expect(text).not.toContain(FORGE_TOKEN);
    expect(text).not.toMatch(/^REDIS_URL=/m);
    expect(text).not.toMatch(/^FLOTILLA_SECRET=/m);
  });
});
