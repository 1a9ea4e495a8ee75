import { randomBytes } from 'node:crypto';
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { loadMission } from '../../src/producer/load.js';
import type { AuditEntry } from '../../src/shared/contracts.js';
import { sim, startCluster, type TestCluster } from '../helpers/flotilla.js';

/**
 * Shell metacharacters in every text field of a mission: the goal, titles, descriptions, files,
 * allowed_paths, languages, frameworks, division and the agent's personality file carry command
 * substitutions, backticks, `;`, `|`, `&&`, redirections and newlines, each of which would create
 * a marker file if any shell ever interpreted it. The mission runs for real (stand-in agent, git,
 * verify, critic, gate); afterwards no marker exists and every text reached the prompts verbatim.
 * The exit criteria are the one place a shell runs by design, so they hold no marker.
 */
const RUN = randomBytes(6).toString('hex');
const MARKER_PREFIX = `flotilla-pwned-${RUN}-`;
let markers = 0;

/** Every payload names its own marker, so a hit says which construct got through. */
function payloads(): string[] {
  const m = () => join(tmpdir(), `${MARKER_PREFIX}${++markers}`);
  return [
    `$(touch ${m()})`,
    `\`touch ${m()}\``,
    `; touch ${m()}`,
    `| tee ${m()}`,
    `&& touch ${m()}`,
    `|| touch ${m()} ;`,
    `> ${m()}`,
    `"; touch ${m()}; echo "`,
    `'; touch ${m()}; echo '`,
    `$(printf x > ${m()})`,
    `\${IFS}touch\${IFS}${m()}`,
    `first line\ntouch ${m()}\nlast line`,
  ];
}

/** A text with every payload, on one line or several, starting and ending with plain words. */
function nasty(label: string): string {
  return `${label}: ${payloads().join(' ')} end`;
}

async function markersLeft(): Promise<string[]> {
  return (await readdir(tmpdir())).filter((name) => name.startsWith(MARKER_PREFIX));
}

interface Texts {
  goal: string;
  titleA: string;
  titleB: string;
  descriptionA: string;
  descriptionB: string;
  files: string[];
  allowed: string[];
  languages: string[];
  frameworks: string[];
  division: string;
  personality: string;
}

function texts(): Texts {
  return {
    goal: nasty('goal'),
    titleA: nasty('title a'),
    titleB: nasty('title b'),
    descriptionA: nasty('description a'),
    descriptionB: nasty('description b'),
    files: [nasty('file'), `src/${payloads()[0]}.js`, 'out/a.txt'],
    // `out/` keeps the agent's real work in scope; the other entries only have to survive as text.
    allowed: ['out/', nasty('allowed'), `lib/${payloads()[2]}/`],
    languages: [nasty('language')],
    frameworks: [nasty('framework')],
    division: nasty('division'),
    personality: `---\nmodel_tier: execution\n---\n\n# Shell-hostile agent\n\n${nasty('personality')}\n\nAlso: ${payloads().join('\n')}\n`,
  };
}

function missionDoc(t: Texts) {
  const description = (text: string, file: string) =>
    `${text}\n\n${sim(`- write: {path: out/${file}, content: "ok"}\n- review: {score: 9}`)}\n`;
  return {
    goal: t.goal,
    workspace: './ws',
    defaults: { max_attempts: 1, timeout: '2m', backoff: '100ms' },
    tasks: [
      {
        id: 'a',
        title: t.titleA,
        description: description(t.descriptionA, 'a.txt'),
        capability: 'code_implementation',
        agent: 'shell-hostile',
        division: t.division,
        languages: t.languages,
        frameworks: t.frameworks,
        files: t.files,
        allowed_paths: t.allowed,
        critic: true,
        exit_criteria: ['test -f out/a.txt'],
      },
      {
        id: 'b-2_x',
        title: t.titleB,
        description: description(t.descriptionB, 'b.txt'),
        capability: 'code_implementation',
        depends_on: ['a'],
        allowed_paths: t.allowed,
        critic: false,
        exit_criteria: ['test -f out/a.txt && test -f out/b.txt'],
      },
    ],
  };
}

function entries(audit: AuditEntry[], taskId: string, stage: AuditEntry['stage']): AuditEntry[] {
  return audit.filter((e) => e.taskId === taskId && e.stage === stage);
}

describe('shell metacharacters in every text field of a mission', () => {
  let cluster: TestCluster;

  beforeAll(async () => {
    cluster = await startCluster({ hosts: 1, slots: 2 });
  });
  afterAll(async () => {
    await cluster?.stop();
    for (const name of await markersLeft()) await rm(join(tmpdir(), name), { force: true });
  });

  it('runs the mission without any shell interpreting them, and the prompts hold them verbatim', async () => {
    const t = texts();
    const dir = join(cluster.dir, 'hostile');
    await mkdir(join(dir, 'ws'), { recursive: true });
    await mkdir(join(dir, 'agents'));
    await writeFile(join(dir, 'agents', 'shell-hostile.md'), t.personality);
    const file = join(dir, 'mission.yaml');
    await writeFile(file, stringify(missionDoc(t), { lineWidth: 0 }));

    const { id } = await cluster.client.submit(file);
    const status = await cluster.client.wait(id, { pollMs: 200 });

    expect(await markersLeft()).toEqual([]);
    expect(status.status).toBe('done');
    expect(status.goal).toBe(t.goal);
    expect(status.tasks.map((task) => task.title)).toEqual([t.titleA, t.titleB]);

    const audit = await cluster.client.store.getAudit(id);
    const promptA = entries(audit, 'a', 'run')[0]?.files?.['prompt.md'] ?? '';
    const promptB = entries(audit, 'b-2_x', 'run')[0]?.files?.['prompt.md'] ?? '';
    const review = entries(audit, 'a', 'critic')[0]?.files?.['review-prompt.md'] ?? '';
    for (const text of [
      t.goal,
      t.titleA,
      t.descriptionA,
      ...t.files,
      ...t.allowed,
      ...t.languages,
      ...t.frameworks,
    ]) {
      expect(promptA).toContain(text);
    }
    // The division only routes; it is kept verbatim in the stored mission.
    const { spec } = await cluster.client.store.getMission(id);
    expect(spec.tasks[0]?.division).toBe(t.division);
    // The personality file is the head of the prompt, whole (trimmed at its ends).
    expect(promptA.startsWith(t.personality.trim())).toBe(true);
    expect(promptB).toContain(t.titleB);
    expect(promptB).toContain(t.descriptionB);
    // b's handoff names its dependency by title.
    expect(promptB).toContain(`### From ${t.titleA} (a)`);
    expect(review).toContain(t.titleA);
    expect(review).toContain(t.descriptionA);
    // The criteria ran, so a shell did run: only where the author asked for one.
    expect(entries(audit, 'b-2_x', 'verify')[0]?.message).toContain('passed');
  });

  it('refuses ids and agent names with metacharacters at validation, before anything runs', async () => {
    const dir = join(cluster.dir, 'hostile-ids');
    await mkdir(dir, { recursive: true });
    const [substitution, backticks, semicolon, pipe] = payloads();
    const doc = {
      goal: 'ids',
      workspace: './ws',
      tasks: [
        { id: `a${substitution}`, title: 'A', exit_criteria: ['true'] },
        {
          id: 'b',
          title: 'B',
          exit_criteria: ['true'],
          depends_on: [`x${backticks}`],
          agent: `x${semicolon}`,
        },
        { id: `c${pipe}`, title: 'C', exit_criteria: ['true'], cli: `sim${payloads()[4]}` },
      ],
    };
    const file = join(dir, 'mission.yaml');
    await writeFile(file, stringify(doc, { lineWidth: 0 }));
    const { mission, problems } = await loadMission(file);
    expect(mission).toBeUndefined();
    const paths = problems.map((p) => p.path);
    expect(paths).toEqual(expect.arrayContaining(['tasks[0].id', 'tasks[2].id', 'tasks[1].agent']));
    for (const problem of problems) expect(problem.file).toBe(file);
    expect(await markersLeft()).toEqual([]);
  });
});
