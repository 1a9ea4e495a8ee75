import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FlotillaClient } from '../../src/client.js';
import { defineMission, FlotillaError, type MissionInput } from '../../src/index.js';
import { checkMissionObject } from '../../src/producer/load.js';
import { sim, startCluster, type TestCluster } from '../helpers/flotilla.js';
import { uniquePrefix } from '../helpers/redis-server.js';

/**
 * `client.submit({...})` takes the mission file's shape: the same schema, rules and defaults as a
 * file, problems by JSON path, and nothing in Redis when the object is invalid.
 */

function simTask(id: string, extra: Record<string, unknown> = {}) {
  return {
    id,
    title: `Task ${id}`,
    critic: false,
    exit_criteria: [`test -f ${id}.txt`],
    description: `Do ${id}.\n\n${sim(`- write: {path: ${id}.txt, content: "${id} done"}`)}`,
    ...extra,
  };
}

async function rejection(submitting: Promise<unknown>): Promise<FlotillaError> {
  const error = await submitting.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(FlotillaError);
  return error as FlotillaError;
}

describe('submit() with a mission object', () => {
  let cluster: TestCluster;
  let ws: string;

  beforeAll(async () => {
    cluster = await startCluster({ hosts: 1, slots: 2 });
    ws = join(cluster.dir, 'object-missions');
    await mkdir(join(ws, 'ws'), { recursive: true });
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it('runs a valid object, in the file’s spelling, to done, with the file’s defaults', async () => {
    const mission = defineMission({
      goal: 'an object mission',
      workspace: './ws',
      defaults: { backoff: '200ms' },
      tasks: [simTask('a'), simTask('b', { depends_on: ['a'], timeout: '90s' })],
    });
    const { id } = await cluster.client.submit(mission, { dir: ws });
    const final = await cluster.client.wait(id, { pollMs: 200 });
    expect(final.status).toBe('done');
    expect(final.tasks.map((task) => `${task.id}:${task.status}`)).toEqual(['a:completed', 'b:completed']);
    const { spec } = await cluster.client.store.getMission(id);
    expect(spec.workspace).toBe(join(ws, 'ws'));
    const [a, b] = spec.tasks;
    // The file's defaults, applied by the same schema: max_attempts 3, timeout 10m, min_score 7.
    expect(a).toMatchObject({
      dependsOn: [],
      maxAttempts: 3,
      timeoutMs: 600_000,
      minScore: 7,
      backoffMs: 200,
    });
    expect(b).toMatchObject({ dependsOn: ['a'], timeoutMs: 90_000, critic: false });
  });

  it('rejects an invalid object with every problem by JSON path, and writes nothing to Redis', async () => {
    const prefix = uniquePrefix();
    const client = await FlotillaClient.connect({
      config: cluster.config,
      redisUrl: cluster.redis.url,
      prefix,
    });
    try {
      const invalid = {
        goal: 'an invalid object',
        workspace: './ws',
        tasks: [
          simTask('a', { timeout: 'soon' }),
          simTask('b', { depends_on: ['a', 'nope'] }),
          { id: 'c', title: 'camelCase', dependsOn: ['a'], exitCriteria: ['true'] },
        ],
      } as unknown as MissionInput;
      const error = await rejection(client.submit(invalid, { dir: ws }));
      expect(error.code).toBe('mission/invalid');
      expect(error.problems.map((problem) => `${problem.path}: ${problem.message}`)).toEqual([
        "tasks[0].timeout: expected a duration like 90s, 10m or 1h30m, got 'soon'",
        'tasks[2].exit_criteria: required (expected a list)',
        expect.stringMatching(
          /^tasks\[2\]\.dependsOn: unknown field 'dependsOn' — did you mean 'depends_on'\?/,
        ),
        expect.stringMatching(
          /^tasks\[2\]\.exitCriteria: unknown field 'exitCriteria' — did you mean 'exit_criteria'\?/,
        ),
        "tasks[1].depends_on[1]: unknown task 'nope' (known: a, c)",
      ]);
      for (const problem of error.problems) expect(problem.file).toBe('');
      expect(error.message).toContain("tasks[1].depends_on[1]: unknown task 'nope' (known: a, c)");
      expect(await cluster.client.redis.keys(`${prefix}*`)).toEqual([]);

      // The same client and prefix do write keys for a valid object: the check above could see them.
      await client.submit({ goal: 'valid', workspace: './ws', tasks: [simTask('a')] }, { dir: ws });
      expect((await cluster.client.redis.keys(`${prefix}*`)).length).toBeGreaterThan(0);
    } finally {
      await client.close();
    }
  });

  it('rejects what is not a mission object, and the internal spec shape, without a stack from inside', async () => {
    const notObject = await rejection(cluster.client.submit(['goal'] as unknown as MissionInput));
    expect(notObject.problems.map((problem) => problem.message)).toEqual([
      'expected an object with goal and tasks, got a list',
    ]);
    const spec = await cluster.client.store.getMission(
      (await cluster.client.submit({ goal: 'g', workspace: './ws', tasks: [simTask('a')] }, { dir: ws })).id,
    );
    const respelled = await rejection(cluster.client.submit(spec.spec as unknown as MissionInput));
    expect(respelled.problems.map((problem) => problem.path)).toEqual(
      expect.arrayContaining(['agents', 'tasks[0].dependsOn', 'tasks[0].exitCriteria']),
    );
  });
});

describe('checkMissionObject', () => {
  it('reads agent files from the folder given, as a file reads them beside itself', async () => {
    const { problems } = await checkMissionObject(
      {
        goal: 'g',
        workspace: '.',
        tasks: [{ id: 'a', title: 'A', agent: 'nobody', exit_criteria: ['true'] }],
      },
      { dir: '/nonexistent-flotilla-dir/x', agentsDir: '/nonexistent-flotilla-dir/agents' },
    );
    expect(problems.map((problem) => `${problem.path}: ${problem.message}`)).toEqual([
      'tasks[0].agent: no agent file at /nonexistent-flotilla-dir/agents/nobody.md',
      expect.stringMatching(/^workspace: no folder at \/nonexistent-flotilla-dir\/x/),
    ]);
  });
});
