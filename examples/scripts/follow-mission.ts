// Submits a mission as an object, prints its events as they come and then its summary: the
// TypeScript of follow-mission.js, type-checked under `tsc --strict` against the package's types.
//
//   npx tsc && REDIS_URL=redis://127.0.0.1:6379 node <outDir>/follow-mission.js [WORKSPACE]
//
// (tsconfig: "module": "nodenext", "target": "es2022", "strict": true.) A worker host must run
// against the same Redis, or the mission waits in its queue: `npx flotilla worker` with an agent
// CLI logged in, or with the stand-in agent, `PATH=<flotilla>/examples/bin:$PATH npx flotilla
// worker --adapters <flotilla>/examples/adapters`. Ctrl-C stops following; the mission goes on.
import {
  defineMission,
  FlotillaClient,
  FlotillaError,
  formatEventLine,
  type MissionEvent,
  type MissionInput,
  type MissionStatusJson,
} from 'flotilla';

/** A task for the stand-in agent: the ```sim block says what it writes (docs/SIM.md). */
function writeTask(id: string, word: string, dependsOn: string[] = []): MissionInput['tasks'][number] {
  return {
    id,
    title: `Write ${id}.txt`,
    capability: 'documentation',
    depends_on: dependsOn,
    exit_criteria: [`grep -q ${word} ${id}.txt`],
    description: `Write ${id}.txt with the word ${word}.\n\n\`\`\`sim\n- write: {path: ${id}.txt, content: "${word}\\n"}\n\`\`\`\n`,
  };
}

const mission = defineMission({
  goal: 'Greet from a typed script',
  workspace: process.argv[2] ?? './hello-workspace',
  defaults: { critic: false, max_attempts: 2, timeout: '5m' },
  tasks: [writeTask('hello', 'hello'), writeTask('goodbye', 'goodbye', ['hello'])],
});

const client = await FlotillaClient.connect({ redisUrl: process.env.REDIS_URL });
const following = new AbortController();
process.once('SIGINT', () => following.abort());
try {
  const { id } = await client.submit(mission);
  console.log(`submitted ${id}`);
  const attempts = new Map<string, number>();
  for await (const event of client.events(id, { signal: following.signal })) {
    console.log(formatEventLine(event));
    countAttempt(attempts, event);
  }
  const status: MissionStatusJson = await client.status(id);
  console.log((await client.summary(id)) ?? `stopped following; the mission is ${status.status}`);
  console.log(`attempts: ${[...attempts].map(([task, n]) => `${task} ${n}`).join(', ')}`);
  process.exitCode = status.status === 'done' ? 0 : 1;
} catch (error) {
  // An invalid mission is refused before anything reaches Redis, each problem with its JSON path.
  if (!(error instanceof FlotillaError) || error.code !== 'mission/invalid') throw error;
  for (const problem of error.problems) console.error(`${problem.path}: ${problem.message}`);
  process.exitCode = 2;
} finally {
  await client.close();
}

/** The highest attempt each task's events name. */
function countAttempt(attempts: Map<string, number>, event: MissionEvent): void {
  if (event.taskId !== undefined && event.attempt !== undefined) {
    attempts.set(event.taskId, Math.max(attempts.get(event.taskId) ?? 0, event.attempt));
  }
}
