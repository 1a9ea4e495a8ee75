import { copyFile, mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { main } from '../../../src/cli/main.js';
import { indent, ROOT, SIM_ADAPTERS, sim, startCluster, type TestCluster } from '../../helpers/flotilla.js';

/**
 * escalate: [tier, cli] with the stand-in adapters: attempt 1 fails at the execution tier, attempt 2
 * runs with the planning tier's model flag, attempt 3 on the other CLI (another vendor).
 */

describe('escalation', () => {
  let cluster: TestCluster;
  let adapters: string;

  beforeAll(async () => {
    cluster = await startCluster({ hosts: 0 });
    adapters = join(cluster.dir, 'adapters');
    await mkdir(adapters, { recursive: true });
    for (const file of await readdir(SIM_ADAPTERS))
      await copyFile(join(SIM_ADAPTERS, file), join(adapters, file));
    // Ties in matching go to adapter file order: named to sort after sim.md, so attempt 1 goes to
    // flotilla-sim as it does everywhere else, and only escalation moves the task.
    await copyFile(join(ROOT, 'examples', 'escalation', 'sim-other.md'), join(adapters, 'z-sim-other.md'));
    await cluster.addHost({ adaptersDir: adapters });
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  const mission = (escalate: string) =>
    [
      'goal: escalation',
      'workspace: ./ws',
      `defaults: { max_attempts: 3, backoff: 100ms${escalate ? `, escalate: ${escalate}` : ''} }`,
      'tasks:',
      '  - id: hard',
      '    title: hard',
      '    critic: false',
      '    capability: code_implementation',
      '    exit_criteria: ["test -f done.txt"]',
      '    description: |',
      indent(sim('- fail_until_attempt: 3\n- write: {path: done.txt, content: "done\\n"}')),
    ].join('\n');

  /** Per attempt: the CLI, the model it was given (from the CLI's own result) and why. */
  async function attempts(id: string) {
    const audit = await cluster.client.store.getAudit(id);
    return audit
      .filter((e) => e.stage === 'run' && e.files?.['result.md'] !== undefined)
      .map((e) => {
        const event = e.event?.kind === 'run' ? e.event : undefined;
        return {
          attempt: e.attempt,
          cli: e.cli,
          tier: event?.tier,
          modelSeen: /model ([\w-]+)/.exec(e.files?.['result.md'] ?? '')?.[1],
          escalation: event?.escalation ?? null,
        };
      });
  }

  it('attempt 1 at the execution tier, 2 with the planning model flag, 3 on the other vendor’s CLI', async () => {
    const id = await cluster.submit(mission('[tier, cli]'));
    const final = await cluster.client.wait(id, { pollMs: 200 });
    expect(final.status).toBe('done');
    const runs = await attempts(id);
    expect(runs.map(({ escalation: _e, ...rest }) => rest)).toEqual([
      { attempt: 1, cli: 'flotilla-sim', tier: 'execution', modelSeen: 'sim-medium' },
      { attempt: 2, cli: 'flotilla-sim', tier: 'planning', modelSeen: 'sim-large' },
      { attempt: 3, cli: 'flotilla-sim-other', tier: 'planning', modelSeen: 'other-large' },
    ]);
    expect(runs[0]?.escalation).toBeNull();
    expect(runs[1]?.escalation).toBe('attempt 1 failed; escalated to the planning tier (from execution)');
    expect(runs[2]?.escalation).toBe('attempt 2 failed; escalated to flotilla-sim-other (another vendor)');
    const routes = (await cluster.client.store.getAudit(id)).filter((e) => e.event?.kind === 'route');
    expect(routes.map((e) => e.message)).toEqual([
      expect.stringMatching(/^attempt 1 → dispatch\.code_implementation: /),
      expect.stringMatching(/^attempt 2 → dispatch\.code_implementation: /),
      expect.stringMatching(
        /^attempt 3 → dispatch\.code_implementation: escalated: pinned to flotilla-sim-other/,
      ),
    ]);
    // status JSON and the receipt say the same.
    expect(final.tasks[0]).toMatchObject({
      cli: 'flotilla-sim-other',
      tier: 'planning',
      escalation: 'attempt 2 failed; escalated to flotilla-sim-other (another vendor)',
    });
    // `flotilla status <id>` says it under the table.
    vi.stubEnv('REDIS_URL', cluster.redis.url);
    vi.stubEnv('FLOTILLA_PREFIX', cluster.config.prefix);
    const lines: string[] = [];
    const io = { out: (t: string) => lines.push(t), err: (t: string) => lines.push(t), isTTY: false };
    expect(await main(['status', id], io)).toBe(0);
    vi.unstubAllEnvs();
    expect(lines).toContain(
      '  hard: planning tier; attempt 2 failed; escalated to flotilla-sim-other (another vendor)',
    );
    let receipt = await cluster.client.store.getReceipt(id);
    for (let i = 0; i < 100 && !receipt; i++) {
      await new Promise((r) => setTimeout(r, 100));
      receipt = await cluster.client.store.getReceipt(id);
    }
    expect(receipt?.tasks[0]?.attempts.map((a) => [a.cli, a.modelTier, a.model, a.gate])).toEqual([
      ['flotilla-sim', 'execution', 'sim-medium', 'retry'],
      ['flotilla-sim', 'planning', 'sim-large', 'retry'],
      ['flotilla-sim-other', 'planning', 'other-large', 'approve'],
    ]);
  }, 120_000);

  it('without escalate every retry runs on the same CLI at the same tier', async () => {
    const id = await cluster.submit(mission(''));
    const final = await cluster.client.wait(id, { pollMs: 200 });
    expect(final.status).toBe('done');
    expect((await attempts(id)).map((r) => [r.cli, r.modelSeen])).toEqual([
      ['flotilla-sim', 'sim-medium'],
      ['flotilla-sim', 'sim-medium'],
      ['flotilla-sim', 'sim-medium'],
    ]);
    expect(final.tasks[0]).toMatchObject({ tier: null, escalation: null });
  }, 120_000);
});
