#!/usr/bin/env node
// Submits a mission as an object, prints its events as they come and then its summary.
//
//   REDIS_URL=redis://127.0.0.1:6379 node follow-mission.js [WORKSPACE]
//
// A worker host must run against the same Redis, or the mission waits in its queue: `npx flotilla
// worker` with an agent CLI logged in, or, to try it with the stand-in agent, `PATH=<flotilla>/
// examples/bin:$PATH npx flotilla worker --adapters <flotilla>/examples/adapters`. WORKSPACE
// (default ./hello-workspace) is a git repository, or a folder that is made one. Ctrl-C stops
// following; the mission goes on (`npx flotilla cancel <id>` stops it).
import { defineMission, FlotillaClient, formatEventLine } from 'flotilla';

// The ```sim block tells the stand-in agent what to do (docs/SIM.md); a real agent reads it as
// part of the description.
const mission = defineMission({
  goal: 'Greet from a script',
  workspace: process.argv[2] ?? './hello-workspace',
  defaults: { critic: false, max_attempts: 2, timeout: '5m' },
  tasks: [
    {
      id: 'hello',
      title: 'Write hello.txt',
      capability: 'documentation',
      exit_criteria: ['grep -q hello hello.txt'],
      description:
        'Write hello.txt with the word hello.\n\n```sim\n- write: {path: hello.txt, content: "hello\\n"}\n```\n',
    },
    {
      id: 'goodbye',
      title: 'Write goodbye.txt',
      capability: 'documentation',
      depends_on: ['hello'],
      exit_criteria: ['grep -q goodbye goodbye.txt', 'test -f hello.txt'],
      description:
        'Write goodbye.txt with the word goodbye.\n\n```sim\n- write: {path: goodbye.txt, content: "goodbye\\n"}\n```\n',
    },
  ],
});

const client = await FlotillaClient.connect({ redisUrl: process.env.REDIS_URL });
const following = new AbortController();
process.once('SIGINT', () => following.abort());
try {
  const { id } = await client.submit(mission);
  console.log(`submitted ${id}`);
  for await (const event of client.events(id, { signal: following.signal })) {
    console.log(formatEventLine(event));
  }
  const status = await client.status(id);
  console.log((await client.summary(id)) ?? `stopped following; the mission is ${status.status}`);
  process.exitCode = status.status === 'done' ? 0 : 1;
} finally {
  await client.close();
}
