import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { MissionStatusJson } from '../../../../src/shared/contracts.js';
import { indent, sim, startCluster, type TestCluster } from '../../../helpers/flotilla.js';
import { type LocalForge, startLocalForge } from '../../../helpers/local-forge.js';
import { lastJson, runFlotilla } from '../../../helpers/worker-process.js';

/**
 * Delivery end to end on a real Redis, real git and the stand-in agent: the mission's branch pushed
 * to a bare repository (a path remote, and one served over smart HTTP by the local forge), and the
 * pull request opened through the local forge's GitHub REST endpoints, each request checked against
 * GitHub's documented shape. The forge fails on demand: a 500 then a 201, a bad token.
 */

const TOKEN = 'ghp_localforgetoken0123456789';

let cluster: TestCluster;
let forge: LocalForge;
let missions = 0;

beforeAll(async () => {
  cluster = await startCluster({
    hosts: 1,
    env: { FLOTILLA_FORGE_TOKEN: TOKEN, FLOTILLA_DELIVER_BACKOFF_MS: '200' },
  });
  forge = await startLocalForge({ kind: 'github', token: TOKEN, root: cluster.dir });
});
afterAll(async () => {
  await forge?.stop();
  await cluster?.stop();
});
afterEach(() => {
  forge.log.length = 0;
});

async function git(cwd: string, ...args: string[]): Promise<string> {
  return (await execa('git', ['-C', cwd, ...args])).stdout.trim();
}

/** A workspace repository with one commit on main, its `origin` at `remote` (main pushed there). */
async function workspace(remote: string): Promise<string> {
  const dir = join(cluster.dir, `ws-${++missions}`);
  await mkdir(dir, { recursive: true });
  await git(dir, 'init', '--quiet', '--initial-branch=main');
  await writeFile(join(dir, 'README.md'), 'calc\n');
  await git(dir, 'add', '-A');
  await git(dir, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '--quiet', '-m', 'start');
  await git(dir, 'remote', 'add', 'origin', remote);
  await git(dir, 'push', '--quiet', 'origin', 'main');
  return dir;
}

async function runMission(dir: string, deliver: string): Promise<MissionStatusJson> {
  const file = join(dir, '..', `mission-${missions}.yaml`);
  const yaml = [
    'goal: Add a mean function',
    `workspace: ${dir}`,
    'defaults: { max_attempts: 2, backoff: 200ms, timeout: 60s, critic: false }',
    `deliver: ${deliver}`,
    'tasks:',
    '  - id: mean',
    '    title: Add mean()',
    '    exit_criteria: ["test -f mean.txt"]',
    '    description: |',
    '      Write mean.',
    '',
    indent(sim('- write: {path: mean.txt, content: "mean"}')),
  ].join('\n');
  await writeFile(file, yaml);
  const { id } = await cluster.client.submit(file);
  try {
    return await cluster.client.wait(id, { pollMs: 200, timeoutMs: 60_000 });
  } catch (error) {
    const audit = await cluster.client.store.getAudit(id);
    console.log(
      JSON.stringify(await cluster.client.status(id)),
      audit.map((e) => `${e.stage} ${e.message}`).join('\n'),
    );
    throw error;
  }
}

describe('deliver: push', () => {
  it('pushes the integration branch to the workspace’s origin, a bare repository', async () => {
    const bare = join(cluster.dir, `bare-${missions + 1}.git`);
    await execa('git', ['init', '--bare', '--quiet', bare]);
    const dir = await workspace(bare);
    const status = await runMission(dir, '{ push: origin }');
    expect(status.status).toBe('done');
    const tip = await git(dir, 'rev-parse', `refs/heads/${status.branch}`);
    expect(await git(bare, 'rev-parse', `refs/heads/${status.branch}`)).toBe(tip);
    expect(status.delivery).toMatchObject({
      state: 'delivered',
      remote: 'origin',
      branch: status.branch,
      pushedCommit: tip,
      pullRequest: null,
      tries: 1,
      error: null,
    });
    const audit = await cluster.client.store.getAudit(status.id);
    expect(audit.at(-1)).toMatchObject({
      stage: 'delivery',
      event: { kind: 'delivery', action: 'pushed', commit: tip },
    });
    const summary = await cluster.client.summary(status.id);
    expect(summary).toContain(`Delivered: ${status.branch} pushed to origin at ${tip.slice(0, 12)}`);
  });

  it('names a workspace without the remote, and keeps the branch', async () => {
    const bare = join(cluster.dir, `unused-${missions + 1}.git`);
    await execa('git', ['init', '--bare', '--quiet', bare]);
    const dir = await workspace(bare);
    await git(dir, 'remote', 'remove', 'origin');
    const status = await runMission(dir, '{ push: origin }');
    expect(status.delivery).toMatchObject({ state: 'failed', tries: 1 });
    expect(status.delivery?.error).toContain(`the workspace ${dir} has no remote 'origin'`);
    expect(await git(dir, 'rev-parse', `refs/heads/${status.branch}`)).toMatch(/^[0-9a-f]{40}$/);
    expect(await cluster.client.summary(status.id)).toContain(`flotilla deliver ${status.id}\` tries again`);
  });
});

describe('deliver: a GitHub pull request through the local forge', () => {
  const deliver = () =>
    `{ push: origin, forge: github, api_url: "${forge.apiUrl}", pull_request: { base: main, draft: true, labels: [flotilla, bot] } }`;

  it('opens the pull request: the branch pushed over HTTP, then list, create and label as GitHub documents them', async () => {
    const remote = await forge.createRepo('acme/calc');
    const dir = await workspace(remote);
    const status = await runMission(dir, deliver());
    expect(status.status).toBe('done');
    const tip = await git(dir, 'rev-parse', `refs/heads/${status.branch}`);
    expect(await git(forge.repoDir('acme/calc'), 'rev-parse', `refs/heads/${status.branch}`)).toBe(tip);
    expect(forge.log.map((r) => `${r.method} ${r.url} ${r.status}`)).toEqual([
      `GET /repos/acme/calc/pulls?state=open&head=acme%3A${encodeURIComponent(status.branch)}&base=main&per_page=100 200`,
      'POST /repos/acme/calc/pulls 201',
      'POST /repos/acme/calc/issues/1/labels 200',
    ]);
    expect(forge.log.every((r) => r.auth === 'Bearer ***')).toBe(true);
    const created = forge.log[1]?.body as Record<string, unknown>;
    expect(created).toMatchObject({
      title: 'Add a mean function',
      head: status.branch,
      base: 'main',
      draft: true,
    });
    const pulls = forge.pulls.get('acme/calc') ?? [];
    expect(pulls).toHaveLength(1);
    expect(pulls[0]?.labels).toEqual(['flotilla', 'bot']);
    const body = pulls[0]?.body ?? '';
    expect(body).toContain(`<!-- flotilla:mission=${status.id} -->`);
    expect(body).toContain('| Add mean() (`mean`) | ✅ completed | 1 |');
    expect(body).toContain('<summary>receipt.json</summary>');
    const receipt = await cluster.client.store.getReceipt(status.id);
    expect(body).toContain(JSON.stringify(receipt, null, 2));
    expect(status.delivery).toMatchObject({
      state: 'delivered',
      pullRequest: { forge: 'github', number: 1, url: `${forge.url}/acme/calc/pull/1`, action: 'opened' },
    });
    expect(await cluster.client.summary(status.id)).toContain(
      `Pull request: ${forge.url}/acme/calc/pull/1 (#1, opened)`,
    );
    const shown = await runFlotilla({ redisUrl: cluster.redis.url, prefix: cluster.config.prefix }, [
      'status',
      status.id,
    ]);
    expect(shown.stdout).toContain(
      `delivery: ${status.branch} pushed to origin; pull request ${forge.url}/acme/calc/pull/1 (opened)`,
    );
    console.log(`local forge request log (a mission ending in an opened PR):\n${forge.formatLog()}`);
  });

  it('tries again after a 500: the second try opens the one pull request', async () => {
    const remote = await forge.createRepo('acme/retry');
    const dir = await workspace(remote);
    forge.failNext('POST /repos/acme/retry/pulls', 500);
    const status = await runMission(dir, deliver());
    expect(forge.log.map((r) => `${r.method} ${r.url.replace(/\?.*/, '')} ${r.status}`)).toEqual([
      'GET /repos/acme/retry/pulls 200',
      'POST /repos/acme/retry/pulls 500',
      'GET /repos/acme/retry/pulls 200',
      'POST /repos/acme/retry/pulls 201',
      'POST /repos/acme/retry/issues/1/labels 200',
    ]);
    expect(forge.pulls.get('acme/retry')).toHaveLength(1);
    expect(status.delivery).toMatchObject({
      state: 'delivered',
      tries: 2,
      pullRequest: { number: 1, action: 'opened' },
    });
    const failed = (await cluster.client.store.getAudit(status.id)).filter(
      (e) => e.event?.kind === 'delivery' && e.event.action === 'failed',
    );
    expect(failed).toHaveLength(1);
    expect(failed[0]?.event).toMatchObject({ willRetry: true, tries: 1 });
    expect(failed[0]?.message).toContain('GitHub POST /repos/acme/retry/pulls: 500');
  });

  it('updates the open pull request a delivery finds for the same branch, never opening a second', async () => {
    const remote = await forge.createRepo('acme/again');
    const dir = await workspace(remote);
    const first = await runMission(dir, deliver());
    forge.log.length = 0;
    // The same mission id delivered again (as a replayed delivery job or `flotilla deliver` would).
    const { tryDelivery } = await import('../../../../src/workers/stages/deliver/try-delivery.js');
    const { silentLogger } = await import('../../../../src/shared/logger.js');
    const again = await tryDelivery(
      {
        store: cluster.client.store,
        cacheDir: join(cluster.dir, 'cli-cache'),
        tokens: { any: TOKEN },
        logger: silentLogger(),
        host: 'test',
      },
      first.id,
      { lastTry: true },
    );
    expect(forge.log.map((r) => `${r.method} ${r.url.replace(/\?.*/, '')} ${r.status}`)).toEqual([
      'GET /repos/acme/again/pulls 200',
      'PATCH /repos/acme/again/pulls/1 200',
      'POST /repos/acme/again/issues/1/labels 200',
    ]);
    expect(Object.keys(forge.log[1]?.body as object).sort()).toEqual(['body', 'title']);
    expect(forge.pulls.get('acme/again')).toHaveLength(1);
    expect(again).toMatchObject({
      state: 'delivered',
      tries: 2,
      pullRequest: { number: 1, action: 'updated' },
    });
  });
});

describe('deliver: a bad token', () => {
  it('fails at once (a 401 is not retried), says so in status and summary; flotilla deliver with the right token opens the pull request', async () => {
    const right = 'ghp_therightone0123456789';
    const strict = await startLocalForge({ kind: 'github', token: right, root: join(cluster.dir, 'strict') });
    try {
      const remote = await strict.createRepo('acme/token');
      const dir = await workspace(remote);
      const status = await runMission(
        dir,
        `{ forge: github, api_url: "${strict.apiUrl}", pull_request: { base: main } }`,
      );
      expect(status.status).toBe('done');
      expect(status.delivery).toMatchObject({ state: 'failed', tries: 1, pullRequest: null });
      expect(status.delivery?.error).toBe('GitHub GET /repos/acme/token/pulls: 401 Bad credentials');
      expect(strict.log.map((r) => r.status)).toEqual([401]);
      // The branch was pushed before the forge refused: nothing is lost.
      expect(await git(strict.repoDir('acme/token'), 'rev-parse', `refs/heads/${status.branch}`)).toBe(
        status.delivery?.pushedCommit ?? 'pushed',
      );
      const summary = await cluster.client.summary(status.id);
      expect(summary).toContain(
        '⚠️ Delivery failed after 1 try: GitHub GET /repos/acme/token/pulls: 401 Bad credentials',
      );
      expect(summary).not.toContain(TOKEN);

      const run = await runFlotilla(
        { redisUrl: cluster.redis.url, prefix: cluster.config.prefix },
        ['deliver', status.id, '--json'],
        { env: { FLOTILLA_FORGE_TOKEN: right, FLOTILLA_HOME: join(cluster.dir, 'cli-home') } },
      );
      expect(run.exitCode, run.stderr).toBe(0);
      expect(lastJson(run)).toMatchObject({
        state: 'delivered',
        tries: 2,
        pullRequest: { number: 1, action: 'opened' },
      });
      expect(strict.pulls.get('acme/token')).toHaveLength(1);
      const after = await cluster.client.status(status.id);
      expect(after.delivery).toMatchObject({ state: 'delivered', tries: 2 });
      const lines = (await cluster.client.summary(status.id)) ?? '';
      expect(lines).toContain(`Pull request: ${strict.url}/acme/token/pull/1 (#1, opened)`);
      expect(lines).not.toContain('Delivery failed');
    } finally {
      await strict.stop();
    }
  });
});

describe('deliver: GitLab and Gitea through the local forge', () => {
  it('opens a GitLab merge request in a nested group: PRIVATE-TOKEN, the encoded project path, a Draft: title, labels as text', async () => {
    const token = TOKEN;
    const lab = await startLocalForge({ kind: 'gitlab', token, root: join(cluster.dir, 'lab') });
    try {
      const remote = await lab.createRepo('acme/tools/calc');
      const dir = await workspace(remote);
      const deliver = `{ forge: gitlab, api_url: "${lab.apiUrl}", pull_request: { draft: true, labels: [flotilla, bot] } }`;
      const status = await runMission(dir, deliver);
      expect(lab.log.map((r) => `${r.method} ${r.url} ${r.status}`)).toEqual([
        `GET /projects/acme%2Ftools%2Fcalc/merge_requests?state=opened&source_branch=${encodeURIComponent(status.branch)}&target_branch=main 200`,
        'POST /projects/acme%2Ftools%2Fcalc/merge_requests 201',
      ]);
      expect(lab.log.every((r) => r.auth === '***')).toBe(true);
      expect(lab.log[1]?.body).toMatchObject({
        source_branch: status.branch,
        target_branch: 'main',
        title: 'Draft: Add a mean function',
        labels: 'flotilla,bot',
      });
      expect(status.delivery?.pullRequest).toEqual({
        forge: 'gitlab',
        number: 1,
        url: `${lab.url}/acme/tools/calc/-/merge_requests/1`,
        action: 'opened',
      });
    } finally {
      await lab.stop();
    }
  });

  it('opens a Gitea pull request with label ids, and names a label the repository lacks', async () => {
    const token = TOKEN;
    const tea = await startLocalForge({
      kind: 'gitea',
      token,
      root: join(cluster.dir, 'tea'),
      labels: ['bug', 'flotilla'],
    });
    try {
      const remote = await tea.createRepo('acme/calc');
      const dir = await workspace(remote);
      const deliver = `{ forge: gitea, api_url: "${tea.apiUrl}", pull_request: { draft: true, labels: [flotilla, nope] } }`;
      const status = await runMission(dir, deliver);
      expect(tea.log.map((r) => `${r.method} ${r.url} ${r.status}`)).toEqual([
        'GET /repos/acme/calc/pulls?state=open&page=1&limit=50 200',
        'GET /repos/acme/calc/labels?limit=50 200',
        'POST /repos/acme/calc/pulls 201',
      ]);
      expect(tea.log.every((r) => r.auth === 'token ***')).toBe(true);
      expect(tea.log[2]?.body).toMatchObject({
        head: status.branch,
        base: 'main',
        title: 'WIP: Add a mean function',
        labels: [2],
      });
      expect(tea.pulls.get('acme/calc')?.[0]?.labels).toEqual(['flotilla']);
      expect(status.delivery).toMatchObject({
        state: 'delivered',
        pullRequest: { forge: 'gitea', number: 1, url: `${tea.url}/acme/calc/pulls/1`, action: 'opened' },
        error: "label 'nope' does not exist in acme/calc (create it on the forge)",
      });
    } finally {
      await tea.stop();
    }
  });
});
