import { mkdtemp, readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { it } from 'vitest';
import { type AgentCli, setUpCli, writeFileTurn } from '../helpers/agent-clis.js';
import { errorTurn, startModelServer, textTurn, userText } from '../helpers/model-server.js';

const CLI = (process.env.PROBE_CLI ?? 'codex-cli') as AgentCli;
const ARGS: Record<string, string[]> = {
  'codex-cli': [
    'exec',
    '--sandbox',
    'workspace-write',
    '--skip-git-repo-check',
    '--ephemeral',
    '--json',
    '-m',
    'gpt-6.2-sol',
    '-',
  ],
  'gemini-cli': ['--approval-mode', 'yolo', '--skip-trust', '--output-format', 'json', '-m', 'pro'],
  opencode: ['run', '--auto', '-m', 'anthropic/claude-sonnet-4-6'],
};
const CMD: Record<string, string> = { 'codex-cli': 'codex', 'gemini-cli': 'gemini', opencode: 'opencode' };
it('probe', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'probe-'));
  const home = join(dir, 'home');
  const work = join(dir, 'work');
  await execa('git', ['init', '-q', work]);
  const err = process.env.PROBE_ERR;
  const server = await startModelServer(
    err
      ? [
          errorTurn(
            Number(err),
            err === '429' ? 'rate_limit_error' : 'authentication_error',
            err === '429'
              ? CLI === 'gemini-cli'
                ? 'Quota exceeded for quota metric GenerateContent requests per day'
                : 'Rate limit reached for requests'
              : 'Incorrect API key provided: test-key',
            {
              headers: { 'retry-after-ms': '10', 'retry-after': '0' },
              details: [
                {
                  '@type': 'type.googleapis.com/google.rpc.QuotaFailure',
                  violations: [
                    {
                      quotaId: 'GenerateRequestsPerDayPerProjectPerModel-FreeTier',
                      quotaMetric: 'generativelanguage.googleapis.com/generate_content_free_tier_requests',
                    },
                  ],
                },
              ],
            },
          ),
        ]
      : [writeFileTurn(CLI, join(work, 'out.txt'), 'hello\nworld\n'), textTurn('All done here.')],
  );
  const { env } = await setUpCli(CLI, { home, url: server.url });
  const started = Date.now();
  const run = await execa(join('/work/wt/i13/node_modules/.bin', CMD[CLI]!), ARGS[CLI]!, {
    cwd: work,
    env: { ...env, PWD: work, npm_config_registry: 'http://127.0.0.1:9/' },
    extendEnv: false,
    input: 'Write out.txt please.\n',
    reject: false,
    timeout: 100_000,
  });
  console.log(
    'EXIT',
    Date.now() - started,
    'ms',
    run.exitCode,
    run.timedOut,
    '\nSTDOUT',
    run.stdout.slice(-3000),
    '\nSTDERR',
    run.stderr.slice(-3000),
  );
  console.log(
    'FILES',
    await readdir(work),
    await readFile(join(work, 'out.txt'), 'utf8').catch(() => 'NO FILE'),
  );
  for (const r of server.requests)
    console.log('REQ', r.method, r.path, r.kind, r.turn, userText(r).slice(-100));
  console.log('PROBLEMS', server.problems);
  const last = server.main().at(-1);
  console.log('LASTBODY', JSON.stringify(last?.body).slice(-2500));
  await server.stop();
}, 120_000);
