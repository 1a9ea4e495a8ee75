/**
 * A mission caught in the middle of its run, written through the mission store's API the way the
 * hosts write it (createMission, mark, settle, audit, addCost), without running anything: the board
 * tests and `bench/board.js` use it to look at 30, 300 and 10,000 tasks without running them.
 *
 * The graph is a DAG where each task depends on one or two of the tasks shortly before it (about
 * 1.5 dependencies a task, like the 300-task mission of issue 15). Tasks before the "frontier"
 * mostly completed (a few failed, which skipped their dependents); tasks at the frontier are
 * running, verifying, reviewing, retrying, waiting for an answer or queued; the rest are pending.
 * Two roots need a capability no host serves and one is pinned to a CLI no host has: they stay
 * queued and are what the board's attention list calls unservable.
 *
 * It takes the store (and nothing else) so the compiled library and the TypeScript sources both
 * work with it.
 */

const HOUR = 3_600_000;
export const SERVED_CAPABILITIES = ['code_implementation', 'testing', 'documentation'];
export const UNSERVED_CAPABILITY = 'data_migration';
export const MISSING_CLI = 'aider';

/** Deterministic pseudo-random numbers (mulberry32), so every run seeds the same mission. */
function random(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = [
  'parser',
  'schema',
  'cache',
  'router',
  'auth',
  'report',
  'export',
  'billing',
  'search',
  'queue',
];

export function taskIdFor(i, n) {
  return `t${String(i).padStart(String(n - 1).length, '0')}`;
}

/**
 * The mission spec: n tasks, ids t000…, in `lanes` chains side by side (level by level in file
 * order); each task depends on the one before it in its lane and, every other time, on a
 * neighbouring lane's task of the level before: about 1.5 dependencies a task, and a failure
 * skips a widening cone of tasks, not the whole rest of the mission.
 */
export function bigMissionSpec(n, seed = 15) {
  const rand = random(seed);
  const lanes = Math.max(3, Math.round(Math.sqrt(n)));
  const tasks = [];
  for (let i = 0; i < n; i++) {
    const id = taskIdFor(i, n);
    const deps = [];
    if (i >= lanes) {
      deps.push(taskIdFor(i - lanes, n));
      const lane = i % lanes;
      const side = rand() < 0.5 ? -1 : 1;
      const other = lane + side >= 0 && lane + side < lanes ? i - lanes + side : i - lanes - side;
      if (rand() < 0.5 && other >= 0 && other !== i - lanes) deps.push(taskIdFor(other, n));
    }
    const roots = lanes;
    // The last two roots need a capability nobody serves; the one before is pinned to a missing CLI.
    const unserved = i === roots - 1 || i === roots - 2;
    const pinned = i === roots - 3;
    const r = rand();
    const capability = unserved
      ? UNSERVED_CAPABILITY
      : r < 0.7
        ? 'code_implementation'
        : r < 0.9
          ? 'testing'
          : 'documentation';
    const word = WORDS[i % WORDS.length];
    tasks.push({
      id,
      title: `${capability === 'testing' ? 'Test' : capability === 'documentation' ? 'Document' : 'Build'} the ${word} module, part ${i}`,
      description: `Work on the ${word} module (part ${i}). `.repeat(4),
      capability,
      kind: capability === 'documentation' ? 'docs' : 'coding',
      languages: ['typescript'],
      frameworks: [],
      dependsOn: deps,
      exitCriteria: ['npm test', 'npx tsc --noEmit'],
      files: [],
      critic: true,
      ...(pinned ? { cli: MISSING_CLI } : {}),
      controlMode: 'guarded',
      maxAttempts: 3,
      timeoutMs: 600_000,
      minScore: 7,
      backoffMs: 5_000,
    });
  }
  return {
    goal: `Rebuild the platform in ${n} tasks`,
    workspace: '/srv/repos/platform',
    agents: {},
    tasks,
  };
}

function depthsOf(spec) {
  const depth = new Map();
  for (const task of spec.tasks) {
    depth.set(task.id, Math.max(-1, ...task.dependsOn.map((d) => depth.get(d) ?? 0)) + 1);
  }
  return depth;
}

const PASS = (command) => ({ command, exitCode: 0, timedOut: false, tail: 'ok' });
const FAIL = (command) => ({
  command,
  exitCode: 1,
  timedOut: false,
  tail: 'FAIL test/parser.test.ts\nexpected 2, received 3',
});
const PROMPT = `You are working on a task of a larger mission.\n${'Context line for the agent. '.repeat(70)}\n`;

/**
 * Writes the mission and moves its tasks to a mid-run snapshot. `frontier` is the share of tasks
 * (in file order) that had their turn; `now` is the snapshot's time (ms). Returns the spec.
 */
export async function seedMission(store, options) {
  const { id, tasks: n } = options;
  const now = options.now ?? Date.now();
  const frontier = options.frontier ?? 0.55;
  const rand = random((options.seed ?? 15) + 1);
  const spec = bigMissionSpec(n, options.seed ?? 15);
  const elapsedMs = options.elapsedMs ?? 2 * HOUR;
  const t0 = now - elapsedMs;
  const iso = (ms) => new Date(ms).toISOString();
  const roots = spec.tasks.filter((t) => t.dependsOn.length === 0).map((t) => t.id);
  await store.createMission({ id, spec, repo: spec.workspace, baseCommit: 'abc123', roots, now: iso(t0) });
  await store.audit(id, {
    at: iso(t0),
    taskId: '',
    attempt: 0,
    stage: 'mission',
    event: {
      kind: 'mission',
      action: 'submitted',
      tasks: n,
      repo: spec.workspace,
      baseCommit: 'abc123',
      branch: `flotilla/${id}`,
    },
  });

  const index = new Map(spec.tasks.map((t, i) => [t.id, i]));
  const hostOf = (i) => `host-${String.fromCharCode(97 + (i % 4))}`;
  const cliOf = (i) => (i % 3 === 0 ? 'codex' : 'claude-code');
  // Finished work is spread over the elapsed time, in file order, so the clock reads like a real run.
  const startOf = (i) =>
    Math.min(t0 + (i / n / frontier) * elapsedMs * 0.9, now - 120_000 - (i % 7) * 10_000);

  async function runAttempt(task, attempt, i, until) {
    const ref = { taskId: task.id, attempt };
    const host = hostOf(i);
    const cli = cliOf(i);
    const started = startOf(i) + (attempt - 1) * 60_000;
    await store.audit(id, {
      at: iso(started),
      ...ref,
      stage: 'route',
      event: {
        kind: 'route',
        attempt,
        queue: `dispatch.${task.capability}`,
        how: 'exact',
        reason: 'exact capability match (on 4 hosts host-a, host-b, host-c, host-d)',
      },
    });
    await store.mark(id, task.id, attempt, 'running', { cli, host, startedAt: iso(started), error: null });
    if (until === 'running') return;
    const seconds = 30 + Math.floor(rand() * 240);
    await store.audit(id, {
      at: iso(started + seconds * 1000),
      ...ref,
      stage: 'run',
      host,
      cli,
      event: {
        kind: 'run',
        cli,
        cliName: cli === 'codex' ? 'Codex CLI' : 'Claude Code',
        exitCode: 0,
        timedOut: false,
        durationMs: seconds * 1000,
        resultStatus: 'success',
        resultSource: 'result file',
        warnings: [],
        rolledBack: [],
      },
      files: { 'prompt.md': PROMPT },
    });
    await store.mark(id, task.id, attempt, 'verifying', {});
    if (until === 'verifying') return;
    await store.mark(id, task.id, attempt, 'reviewing', {});
    return { host, cli, seconds, started };
  }

  async function settleTask(task, i, fate) {
    if (fate === 'queued') return;
    if (fate === 'running' || fate === 'verifying') {
      await runAttempt(task, 1, i, fate);
      return;
    }
    const first = await runAttempt(task, 1, i, fate === 'reviewing' ? 'reviewing' : undefined);
    if (fate === 'reviewing') return;
    const at = (s) => iso(first.started + (s ?? first.seconds) * 1000 + 5_000);
    if (fate === 'needs_input') {
      await store.settle(
        id,
        task.id,
        1,
        'pause',
        {
          questions: [
            {
              question: `Which storage backend should the ${task.title.split(' ')[2]} module use?`,
              options: ['postgres', 'sqlite'],
            },
          ],
          error: null,
        },
        at(),
      );
      await store.audit(id, {
        at: at(),
        taskId: task.id,
        attempt: 1,
        stage: 'gate',
        host: first.host,
        cli: first.cli,
        event: { kind: 'gate', action: 'pause', reason: 'the agent asked 1 question' },
      });
      return;
    }
    const cost = Math.round(rand() * 40) / 100;
    await store.addCost(id, cost);
    if (fate === 'completed') {
      const score = 7 + Math.floor(rand() * 4);
      await store.audit(id, {
        at: at(),
        taskId: task.id,
        attempt: 1,
        stage: 'verify',
        host: first.host,
        event: { kind: 'verify', passed: true, criteria: [PASS('npm test'), PASS('npx tsc --noEmit')] },
      });
      await store.audit(id, {
        at: at(),
        taskId: task.id,
        attempt: 1,
        stage: 'critic',
        host: first.host,
        cli: 'gemini',
        event: {
          kind: 'critic',
          cli: 'gemini',
          cliName: 'Gemini CLI',
          score,
          verdict: 'approve',
          issues: [],
          selfReview: false,
          exitCode: 0,
        },
      });
      await store.settle(
        id,
        task.id,
        1,
        'approve',
        {
          score,
          error: null,
          costUsd: cost,
          handoff: {
            summary: `Built ${task.title}. `.repeat(6),
            outputs: `src/${task.id}.ts, test/${task.id}.test.ts`,
            findings: '',
          },
        },
        at(),
      );
      await store.audit(id, {
        at: at(),
        taskId: task.id,
        attempt: 1,
        stage: 'gate',
        host: first.host,
        cli: first.cli,
        event: { kind: 'gate', action: 'approve', score },
      });
      return;
    }
    // failed or retrying: the first attempt fails its criteria.
    const error = 'exit criteria failed: ✗ npm test';
    await store.audit(id, {
      at: at(),
      taskId: task.id,
      attempt: 1,
      stage: 'verify',
      host: first.host,
      event: { kind: 'verify', passed: false, criteria: [FAIL('npm test'), PASS('npx tsc --noEmit')] },
    });
    await store.settle(id, task.id, 1, 'retry', { error, feedback: error, costUsd: cost }, at());
    await store.audit(id, {
      at: at(),
      taskId: task.id,
      attempt: 1,
      stage: 'gate',
      host: first.host,
      cli: first.cli,
      event: { kind: 'gate', action: 'retry', reason: error, delayMs: 5_000 },
    });
    if (fate === 'retrying') return;
    for (let attempt = 2; attempt <= task.maxAttempts; attempt++) {
      const run = await runAttempt(task, attempt, i);
      const when = iso(run.started + run.seconds * 1000 + 5_000);
      const last = attempt === task.maxAttempts;
      const why = last ? `out of attempts: ${error}` : error;
      await store.settle(
        id,
        task.id,
        attempt,
        last ? 'fail' : 'retry',
        { error: why, feedback: error },
        when,
      );
      await store.audit(id, {
        at: when,
        taskId: task.id,
        attempt,
        stage: 'gate',
        host: run.host,
        cli: run.cli,
        event: last
          ? { kind: 'gate', action: 'fail', reason: why }
          : { kind: 'gate', action: 'retry', reason: why, delayMs: 5_000 },
      });
    }
  }

  // Every mission gets at least one failure and one question, so the attention list has each kind.
  const seen = new Set();
  function fateOf(task) {
    const i = index.get(task.id) ?? 0;
    if (task.capability === UNSERVED_CAPABILITY || task.cli === MISSING_CLI) return 'queued';
    const r = rand();
    let fate;
    if (i < frontier * n) {
      // Failures happen late (near the frontier), so what they skip is a small share of the mission.
      const late = i > frontier * n * 0.85;
      const fails = late && (r < 0.02 || !seen.has('failed'));
      fate = fails ? 'failed' : late && r < 0.04 ? 'retrying' : 'completed';
    } else if (!seen.has('needs_input')) {
      fate = 'needs_input';
    } else {
      const fates = [
        [0.4, 'running'],
        [0.5, 'verifying'],
        [0.6, 'reviewing'],
        [0.68, 'retrying'],
        [0.72, 'needs_input'],
      ];
      fate = fates.find(([limit]) => r < limit)?.[1] ?? 'queued';
    }
    seen.add(fate);
    return fate;
  }

  // Layer by layer, so a task's dependencies have settled (and released it) before its turn;
  // the tasks of one layer are independent, so they are written a batch at a time.
  const depth = depthsOf(spec);
  const layers = [];
  for (const task of spec.tasks) {
    const d = depth.get(task.id);
    layers[d] = layers[d] ?? [];
    layers[d].push(task);
  }
  for (const layer of layers) {
    const states = await Promise.all(layer.map((t) => store.getTask(id, t.id)));
    const ready = layer.filter((_, k) => states[k]?.status === 'queued');
    for (let start = 0; start < ready.length; start += 50) {
      const batch = ready.slice(start, start + 50);
      const fates = batch.map((task) => fateOf(task));
      await Promise.all(batch.map((task, k) => settleTask(task, index.get(task.id) ?? 0, fates[k])));
    }
  }
  for (const task of spec.tasks) {
    if (task.capability === UNSERVED_CAPABILITY)
      await store.mark(id, task.id, 1, null, {
        route: `no live host serves ${UNSERVED_CAPABILITY} and none serves dispatch.internal`,
      });
    if (task.cli === MISSING_CLI)
      await store.mark(id, task.id, 1, null, {
        route: `pinned CLI '${MISSING_CLI}' is on no live host (live CLIs: claude-code, codex)`,
      });
  }
  return spec;
}

/** Live hosts for the snapshot: four hosts serving the served capabilities, some slots busy. */
export function seedHosts(now = Date.now()) {
  const at = new Date(now).toISOString();
  return ['host-a', 'host-b', 'host-c', 'host-d'].map((hostId, i) => ({
    hostId,
    hostname: `${hostId}.internal`,
    pid: 4000 + i,
    startedAt: at,
    heartbeatAt: at,
    slots: 4,
    running: i === 3 ? 0 : 4 - i,
    internal: false,
    clis: [
      {
        cli: 'claude-code',
        displayName: 'Claude Code',
        version: '2.1.197',
        capabilities: SERVED_CAPABILITIES,
        order: 0,
      },
      {
        cli: 'codex',
        displayName: 'Codex CLI',
        version: '0.50.0',
        capabilities: SERVED_CAPABILITIES,
        order: 1,
      },
    ],
    disabled: [],
    coolingDown: [],
  }));
}
